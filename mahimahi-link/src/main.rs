//! The `mahimahi-link` command: picks the mode, turns options into typed
//! configuration, and maps every failure to a message and a non-zero exit.
#![deny(unsafe_code)]

use mahimahi_link::burst::{Burst, LightTrace, SizeOffsets};
use mahimahi_link::forward::{DirSpec, ForwardConfig, Forwarder, LightSpec, LinkSpec, Stop};
use mahimahi_link::link::{Link, LinkOptions, Sink};
use mahimahi_link::options::{self, Common, LightArg, LinkArg, Parsed, USAGE};
use mahimahi_link::queue::Queued;
use mahimahi_link::timeline::Change;
use mahimahi_link::trace::Trace;
use mahimahi_link::{shell, sys};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = match run(&args) {
        Ok(c) => c,
        Err(errors) => {
            for e in errors {
                mahimahi_link::say!("mahimahi-link: {e}");
            }
            2
        }
    };
    std::process::exit(code);
}

fn run(args: &[String]) -> Result<i32, Vec<String>> {
    let rest = &args[1..];
    match rest.first().map(String::as_str) {
        None | Some("-h") | Some("--help") | Some("help") => {
            print!("{USAGE}");
            Ok(if rest.is_empty() { 2 } else { 0 })
        }
        Some("--version") => {
            println!("mahimahi-link {}", env!("CARGO_PKG_VERSION"));
            Ok(0)
        }
        Some("validate") => validate(&rest[1..]),
        Some("simulate") => simulate(options::parse(&rest[1..], true)?),
        Some("simulate-cell") => simulate_cell(options::parse_cell(&rest[1..])?),
        Some("simulate-mecanic") => simulate_mecanic(&rest[1..]),
        Some("forward") => forward(options::parse(&rest[1..], false)?, args),
        Some(_) => shell_mode(options::parse(rest, false)?, args),
    }
}

fn validate(files: &[String]) -> Result<i32, Vec<String>> {
    if files.is_empty() {
        return Err(vec!["validate: name at least one trace file".into()]);
    }
    let mut errors = Vec::new();
    for f in files {
        match Trace::load(Path::new(f)) {
            Ok(t) => println!("{f}: ok, {} opportunities over {} ms, mean {:.3} Mbit/s", t.opportunities, t.period_ms(), t.mean_bps() / 1e6),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if errors.is_empty() {
        Ok(0)
    } else {
        Err(errors)
    }
}

/// Load each distinct trace once, reporting every unreadable one.
fn load_traces(paths: &[&str]) -> Result<HashMap<String, Arc<Trace>>, Vec<String>> {
    let mut map = HashMap::new();
    let mut errors = Vec::new();
    for p in paths {
        if map.contains_key(*p) {
            continue;
        }
        match Trace::load(Path::new(p)) {
            Ok(t) => {
                map.insert(p.to_string(), Arc::new(t));
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if errors.is_empty() {
        Ok(map)
    } else {
        Err(errors)
    }
}

fn config(c: &Common, link_args: &[LinkArg], links: Vec<LinkSpec>, argv: &[String]) -> ForwardConfig {
    ForwardConfig {
        links,
        bypass: c.bypass.clone(),
        delays: c.delays.clone(),
        link_opts: LinkOptions { spread: !c.ms_bursts, repeat: !c.once },
        seed: c.seed,
        stats_path: c.stats.clone(),
        stats_interval_ns: c.stats_interval_ms * 1_000_000,
        command_line: argv.join(" "),
        quiet: c.quiet,
        batch_ns: c.batch_us * 1000,
        coalesce_ns: c.coalesce_us * 1000,
        cpu: c.cpu,
        gso: c.gso,
        ring_frames: c.ring_frames,
        cells: [c.uplink_cell.as_ref().map(|s| cell_spec(c, s, true, link_args)), c.downlink_cell.as_ref().map(|s| cell_spec(c, s, false, link_args))],
        cell_notice_port: c.cell_notice_port,
        link_ids: Vec::new(),
        stats_share: None,
        timeline: Vec::new(),
        timeline_log: c.timeline_log.clone(),
        nics: c.nics.clone(),
        nic_classes: c.nic_classes.clone(),
        nic_default: c.nic_default,
        nic_log: c.nic_log.clone(),
        nic_patterns: c.nic_patterns.clone(),
        nic_scan: c.nic_scan.clone(),
        cu: c.cu.clone().map(|s| s.with_slot(c.cell_slot_us * 1000)),
        cu_log: c.cu_log.clone(),
    }
}

/// The edge ingress stages' options, each problem named.
fn check_nics(c: &Common) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    if c.nics.is_empty() {
        if !c.nic_classes.is_empty() || c.nic_log.is_some() || c.nic_default != mahimahi_link::mecanic::DEFAULT_RULE || c.nic_patterns.is_some()
            || !c.nic_scan.is_empty() {
            errors.push("--nic-class, --nic-default, --nic-log, --nic-patterns and --nic-scan need --nic".to_string());
        }
        return if errors.is_empty() { Ok(()) } else { Err(errors) };
    }
    if c.threads > 1 {
        errors.push("--nic: the stages are shared by every link, so they need one forwarding thread (leave out --threads)".into());
    }
    if c.nics.len() > 1 && c.nic_log.as_ref().is_some_and(|p| !p.contains("{name}")) {
        errors.push("--nic-log: with several stages the file name must contain {name}".into());
    }
    let mut seen = std::collections::HashSet::new();
    for n in &c.nics {
        if !seen.insert(&n.name) {
            errors.push(format!("--nic: {:?} named twice", n.name));
        }
    }
    if !c.nic_scan.is_empty() && c.nic_patterns.is_none() {
        errors.push("--nic-scan needs --nic-patterns".into());
    }
    for name in c.nic_scan.iter().filter(|n| *n != "default" && !c.nic_classes.iter().any(|k| &k.name == *n)) {
        let valid: Vec<&str> = c.nic_classes.iter().map(|k| k.name.as_str()).chain(["default"]).collect();
        errors.push(format!("--nic-scan: no class is named {name:?}; classes: {}", valid.join(", ")));
    }
    let mut seen = std::collections::HashSet::new();
    for k in &c.nic_classes {
        if !seen.insert(&k.name) || k.name == "default" {
            errors.push(format!("--nic-class: {:?} named twice (\"default\" is the unmatched packets')", k.name));
        }
        if !k.name.chars().all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch)) {
            errors.push(format!("--nic-class: {:?}: a name of letters, digits, -, _ and . (it is a column of the log)", k.name));
        }
        for n in c.nics.iter().filter(|n| !n.plain && k.rule.hi >= n.cfg.queues) {
            errors.push(format!("--nic-class={}: queue {} is past stage {}'s {} queues (0..{})", k.name, k.rule.hi, n.name, n.cfg.queues, n.cfg.queues - 1));
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// The links in the cells: those --cell-members names (checked before), else all.
fn cell_members(c: &Common, links: &[LinkArg]) -> Vec<usize> {
    match &c.cell_members {
        None => (0..links.len()).collect(),
        Some(names) => names.iter().filter_map(|n| links.iter().position(|l| &l.name == n)).collect(),
    }
}

/// Each of a list given once per cell, or once for every cell (checked before).
fn per_cell<T: Clone>(v: &[T], cells: usize) -> Vec<T> {
    if v.len() == 1 { vec![v[0].clone(); cells] } else { v.to_vec() }
}

fn cell_spec(c: &Common, schedulers: &[String], uplink: bool, links: &[LinkArg]) -> mahimahi_link::forward::CellSpec {
    use mahimahi_link::cell::{CellConfig, UeClass, UplinkSignalling};
    use mahimahi_link::forward::Site;
    let slot_ns = c.cell_slot_us * 1000;
    let classes = c.cell_classes.iter().map(|k| match *k {
        UeClass::LatencyCritical { slo_slots: ns } => UeClass::LatencyCritical { slo_slots: ns.div_ceil(slot_ns) },
        be => be,
    }).collect();
    let uplink_signalling: Option<UplinkSignalling> = (uplink && c.cell_uplink_signalling).then_some(c.cell_signalling);
    let n = c.cell_names.len();
    let (schedulers, blocks) = (per_cell(schedulers, n), per_cell(&c.cell_blocks, n));
    let sites: Vec<Site> = (0..n).map(|k| Site { name: c.cell_names[k].clone(), scheduler: schedulers[k].clone(), blocks: blocks[k] }).collect();
    let start = c.cell_start.iter().flatten().map(|name| c.cell_names.iter().position(|m| m == name).unwrap_or(0)).collect();
    mahimahi_link::forward::CellSpec {
        sites,
        start,
        cfg: CellConfig { slot_ns, blocks: blocks[0], uplink: uplink_signalling,
                          avg_slots: c.cell_pf_window_slots.map_or(CellConfig::default().avg_slots, |w| w as f64) },
        pf: c.cell_pf,
        classes,
        log_path: c.cell_log.clone(),
        members: cell_members(c, links),
        be_starvation_slots: c.cell_be_starvation_slots,
    }
}

/// A direction's light trace and size offsets, loaded; every unreadable file reported.
fn load_light(l: &LightArg) -> Result<LightSpec, Vec<String>> {
    let trace = LightTrace::load(Path::new(&l.file)).map_err(|e| e.to_string());
    let offsets = l.offsets.as_ref().map(|f| SizeOffsets::load(Path::new(f)).map_err(|e| e.to_string())).transpose();
    match (trace, offsets) {
        (Ok(trace), Ok(offsets)) => Ok(LightSpec { trace: Arc::new(trace), offsets: offsets.map(Arc::new), opts: l.options() }),
        (a, b) => Err(a.err().into_iter().chain(b.err()).collect()),
    }
}

fn spec(c: &Common, traces: &HashMap<String, Arc<Trace>>, l: &LinkArg) -> Result<LinkSpec, Vec<String>> {
    let LinkArg { name, ue, core, up, down, netns, up_light, down_light } = l;
    let netns = netns.clone();
    let log = |p: &Option<String>| p.as_ref().map(|p| p.replace("{name}", name));
    let (up_light, down_light) = (up_light.as_ref().map(load_light).transpose(), down_light.as_ref().map(load_light).transpose());
    let (up_light, down_light) = match (up_light, down_light) {
        (Ok(u), Ok(d)) => (u, d),
        (a, b) => return Err(a.err().into_iter().chain(b.err()).flatten().collect()),
    };
    Ok(LinkSpec {
        name: name.into(),
        ue_if: ue.into(),
        core_if: core.into(),
        netns,
        up: DirSpec { trace: traces[up].clone(), trace_path: up.into(), queue: c.up_queue, log_path: log(&c.up_log), loss: c.up_loss, light: up_light, radio: c.up_radio.clone() },
        down: DirSpec { trace: traces[down].clone(), trace_path: down.into(), queue: c.down_queue, log_path: log(&c.down_log), loss: c.down_loss, light: down_light, radio: c.down_radio.clone() },
    })
}

fn forward(p: Parsed, argv: &[String]) -> Result<i32, Vec<String>> {
    if !p.positional.is_empty() {
        return Err(vec![format!("forward: unexpected argument {:?}; give links as --link name=N,ue=IF,core=IF,up=TRACE,down=TRACE", p.positional[0])]);
    }
    if p.links.is_empty() {
        return Err(vec!["forward: name at least one --link name=N,ue=IF,core=IF,up=TRACE,down=TRACE".into()]);
    }
    let mut names = std::collections::HashSet::new();
    for l in &p.links {
        if !names.insert(l.name.clone()) {
            return Err(vec![format!("forward: link name {:?} used twice", l.name)]);
        }
    }
    let c = &p.common;
    check_cells(&p)?;
    check_nics(c)?;
    if c.cu.is_some() && (c.downlink_cell.is_none() || c.threads > 1) {
        return Err(vec!["--cu: the CU serves the downlink cell's members and shares its thread: it needs --downlink-cell and one forwarding thread".into()]);
    }
    if c.cu_log.is_some() && c.cu.is_none() {
        return Err(vec!["--cu-log needs --cu".into()]);
    }
    if p.links.len() > 1 {
        for (opt, v) in [("--uplink-log", &p.common.up_log), ("--downlink-log", &p.common.down_log)] {
            if v.as_ref().is_some_and(|s| !s.contains("{name}")) {
                return Err(vec![format!("{opt}: with several links the file name must contain {{name}}")]);
            }
        }
    }
    let paths: Vec<&str> = p.links.iter().flat_map(|l| [l.up.as_str(), l.down.as_str()]).collect();
    let traces = load_traces(&paths)?;
    let mut specs = Vec::new();
    let mut errors = Vec::new();
    for l in &p.links {
        match spec(&p.common, &traces, l) {
            Ok(s) => specs.push(s),
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let lit = |s: &LinkSpec| s.up.light.is_some() || s.down.light.is_some();
    if specs.iter().any(lit) && (c.uplink_cell.is_some() || c.downlink_cell.is_some()) {
        return Err(vec!["--link's up-light / down-light: workload-aware replay is for private links, not with a shared cell (--uplink-cell, --downlink-cell)".into()]);
    }
    let mut cfg = config(&p.common, &p.links, specs, argv);
    if let Some(path) = &c.timeline {
        cfg.timeline = mahimahi_link::timeline::load(path)?;
        mahimahi_link::forward::check_timeline(&cfg)?;
    } else if c.timeline_log.is_some() {
        return Err(vec!["--timeline-log needs --timeline".into()]);
    }
    sys::install_stop_handler();
    sys::install_restart_handler();
    let stop = if c.threads > 1 {
        mahimahi_link::forward::run_threads(mahimahi_link::forward::split(cfg, c.threads))
    } else {
        Forwarder::open(cfg).and_then(|mut fwd| fwd.run(None))
    };
    match stop.map_err(|e| vec![e])? {
        Stop::Signal(_) | Stop::TracesEnded | Stop::ChildExited => Ok(0),
    }
}

/// Forward mode's shared-cell options, checked together: members, classes and
/// starting cells that name what exists, one value or one per cell, and the
/// options that need a cell.
fn check_cells(p: &Parsed) -> Result<(), Vec<String>> {
    let c = &p.common;
    if c.uplink_cell.is_some() || c.downlink_cell.is_some() {
        let mut errors = Vec::new();
        if let Some(names) = &c.cell_members {
            let mut seen = std::collections::HashSet::new();
            for n in names {
                if !p.links.iter().any(|l| &l.name == n) {
                    let valid: Vec<&str> = p.links.iter().map(|l| l.name.as_str()).collect();
                    errors.push(format!("--cell-members: no --link is named {n:?}; links: {}", valid.join(", ")));
                } else if !seen.insert(n) {
                    errors.push(format!("--cell-members: {n:?} named twice"));
                }
            }
        }
        let members = c.cell_members.as_ref().map_or(p.links.len(), Vec::len);
        if c.cell_classes.len() > members {
            errors.push(format!("--cell-class: {} classes for {members} cell members", c.cell_classes.len()));
        }
        let cells = c.cell_names.len();
        let mut seen = std::collections::HashSet::new();
        if let Some(n) = c.cell_names.iter().find(|n| !seen.insert(*n)) {
            errors.push(format!("--cells: {n:?} named twice"));
        }
        for (opt, count) in [("--uplink-cell", c.uplink_cell.as_ref().map(Vec::len)), ("--downlink-cell", c.downlink_cell.as_ref().map(Vec::len)),
                             ("--cell-blocks", Some(c.cell_blocks.len()))] {
            if count.is_some_and(|k| k != 1 && k != cells) {
                errors.push(format!("{opt}: {} values for {cells} cell(s) (--cells): give one for every cell, or one per cell", count.unwrap_or(0)));
            }
        }
        if let Some(start) = &c.cell_start {
            if start.len() != members {
                errors.push(format!("--cell-start: {} cells for {members} cell members: one per member, in --cell-members' order", start.len()));
            }
            for s in start.iter().filter(|s| !c.cell_names.contains(s)) {
                errors.push(format!("--cell-start: no cell is named {s:?}; cells (--cells): {}", c.cell_names.join(", ")));
            }
        }
        let fewest = c.cell_blocks.iter().copied().min().unwrap_or(0);
        if c.cell_uplink_signalling && c.cell_signalling.sr_grant_blocks > fewest {
            let whose = if c.cell_blocks.len() == 1 { "the cell's" } else { "a cell's" };
            errors.push(format!("--cell-sr-grant-blocks: {} is more than {whose} {fewest} blocks", c.cell_signalling.sr_grant_blocks));
        }
        let tutti = c.uplink_cell.iter().flatten().any(|s| s == "tutti");
        if tutti != c.cell_notice_port.is_some() {
            errors.push(if tutti { "--uplink-cell=tutti needs --cell-notice-port=PORT (where the edge's request notices go)".to_string() }
                        else { "--cell-notice-port: only for --uplink-cell=tutti".to_string() });
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        if c.uplink_cell.is_some() && c.downlink_cell.is_some() && c.cell_log.as_ref().is_some_and(|p| !p.contains("{dir}")) {
            return Err(vec!["--cell-log: with a cell in each direction the file name must contain {dir}".into()]);
        }
    } else if !c.cell_classes.is_empty() || c.cell_uplink_signalling || c.cell_log.is_some() || c.cell_members.is_some() || c.cell_notice_port.is_some()
        || c.cell_start.is_some() || c.cell_names.len() > 1 {
        return Err(vec!["--cell-class, --cell-log, --cell-members, --cell-notice-port, --cell-uplink-signalling, --cells and --cell-start need --uplink-cell or --downlink-cell".into()]);
    }
    Ok(())
}

fn shell_mode(p: Parsed, argv: &[String]) -> Result<i32, Vec<String>> {
    if p.positional.len() != 2 {
        return Err(vec![format!("expected UPLINK_TRACE DOWNLINK_TRACE, got {} positional argument(s)\n{USAGE}", p.positional.len())]);
    }
    if !p.links.is_empty() {
        return Err(vec!["--link belongs to forward mode".into()]);
    }
    if p.common.threads > 1 {
        return Err(vec!["--threads: forward mode only (shell mode has one link, served by one thread)".into()]);
    }
    if p.common.timeline.is_some() || p.common.timeline_log.is_some() {
        return Err(vec!["--timeline and --timeline-log: forward mode only".into()]);
    }
    let (up, down) = (p.positional[0].as_str(), p.positional[1].as_str());
    let traces = load_traces(&[up, down])?;
    let shell = LinkArg { name: "shell".into(), ue: "ue".into(), core: "core".into(), up: up.to_string(), down: down.to_string(), netns: None, up_light: None, down_light: None };
    let link = spec(&p.common, &traces, &shell)?;
    let cfg = config(&p.common, &[], vec![], argv);
    sys::install_stop_handler();
    sys::install_restart_handler();
    shell::run(cfg, link, p.command).map_err(|e| vec![e])
}

/// `simulate --light`: the same stdin and output, through workload-aware replay.
fn simulate_burst(mut burst: Burst<u64>, mut link: Link<u64>, mut out: &mut dyn Write) -> Result<i32, Vec<String>> {
    for (n, (t, s)) in sim_arrivals()?.into_iter().enumerate() {
        burst.enqueue(s, n as u64, t, &mut link, &mut SimSink { out: &mut out });
    }
    while let Some(t) = burst.next_event(&link) {
        burst.advance_to(t, &mut link, &mut SimSink { out: &mut out });
    }
    let (b, c) = (burst.counters, link.counters);
    let _ = writeln!(out, "counters arrived={} departed={} dropped={} queued={} bypassed={} bursts={}", b.arrived_packets,
                     c.departed_packets + b.bypassed_packets, c.dropped_packets, link.queued_packets(), b.bypassed_packets, b.bursts);
    Ok(0)
}

/// `simulate`'s stdin: "ARRIVAL_NS SIZE" lines, times non-decreasing.
fn sim_arrivals() -> Result<Vec<(u64, u32)>, Vec<String>> {
    let mut out: Vec<(u64, u32)> = Vec::new();
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let (t, s) = sim_arrival(&line.map_err(|e| vec![e.to_string()])?, n)?;
        if out.last().is_some_and(|&(last, _)| t < last) {
            return Err(vec![format!("stdin:{}: arrival times must be non-decreasing", n + 1)]);
        }
        out.push((t, s));
    }
    Ok(out)
}

/// One stdin line of `simulate`: "ARRIVAL_NS SIZE".
fn sim_arrival(line: &str, n: usize) -> Result<(u64, u32), Vec<String>> {
    let mut it = line.split_whitespace();
    let (Some(t), Some(s), None) = (it.next(), it.next(), it.next()) else {
        return Err(vec![format!("stdin:{}: expected \"ARRIVAL_NS SIZE\"", n + 1)]);
    };
    let (Ok(t), Ok(s)) = (t.parse::<u64>(), s.parse::<u32>()) else {
        return Err(vec![format!("stdin:{}: expected two non-negative integers", n + 1)]);
    };
    if s == 0 || s > mahimahi_link::OPPORTUNITY_BYTES {
        return Err(vec![format!("stdin:{}: size must be 1..=1504 (IP length + 4)", n + 1)]);
    }
    Ok((t, s))
}

struct SimSink<'a> {
    out: &'a mut dyn Write,
}

impl Sink<u64> for SimSink<'_> {
    fn departure(&mut self, t: u64, p: Queued<u64>) {
        let _ = writeln!(self.out, "d {} {}", p.payload, t);
    }
    fn drop(&mut self, t: u64, dropped: &[Queued<u64>]) {
        for p in dropped {
            let _ = writeln!(self.out, "x {} {}", p.payload, t);
        }
    }
}

struct CellSimSink<'a> {
    ue: usize,
    out: &'a std::cell::RefCell<&'a mut dyn Write>,
}

impl Sink<u64> for CellSimSink<'_> {
    fn departure(&mut self, t: u64, p: Queued<u64>) {
        let _ = writeln!(self.out.borrow_mut(), "d {} {} {}", self.ue, p.payload, t);
    }
}

/// A shared cell under a virtual clock: what the cell's reference-model tests compare.
fn simulate_cell(sim: options::CellSim) -> Result<i32, Vec<String>> {
    use mahimahi_link::cell::{scheduler, Cell, SchedulerParams};
    let paths: Vec<&str> = sim.traces.iter().map(String::as_str).collect();
    let traces = load_traces(&paths)?;
    let links: Vec<Link<u64>> = sim.traces.iter().map(|t| Link::new(traces[t.as_str()].clone(), Default::default(), LinkOptions::default(), 1)).collect();
    let n = links.len();
    let params = SchedulerParams { classes: sim.classes.clone(), be_starvation_slots: sim.be_starvation_slots, pf: sim.pf };
    let sched = scheduler(&sim.scheduler, &params).map_err(|e| vec![e])?;
    let mut cell = Cell::new(links, sim.cfg, sched);
    cell.core.log = Some(Vec::new());
    let stdout = std::io::stdout();
    let mut lock = std::io::BufWriter::new(stdout.lock());
    let w: &mut dyn Write = &mut lock;
    let out = std::cell::RefCell::new(w);
    let mut sinks: Vec<CellSimSink> = (0..n).map(|ue| CellSimSink { ue, out: &out }).collect();
    let mut last = 0u64;
    for (k, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.map_err(|e| vec![e.to_string()])?;
        let bad = |why: &str| vec![format!("stdin:{}: {why}; expected \"ARRIVAL_NS UE SIZE\", \"ARRIVAL_NS UE start\" or \"ARRIVAL_NS UE flow BYTES_LEFT\"", k + 1)];
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [t, ue, "flow", bytes] = f.as_slice() {
            let (Ok(t), Ok(ue), Ok(bytes)) = (t.parse::<u64>(), ue.parse::<usize>(), bytes.parse::<u64>()) else { return Err(bad("integers")) };
            if t < last || ue >= n {
                return Err(bad(if t < last { "arrival times must be non-decreasing" } else { "no such UE" }));
            }
            last = t;
            cell.advance_to(t, &mut sinks);
            cell.flow_remaining(ue, Some(bytes));
            continue;
        }
        let [t, ue, what] = f.as_slice() else { return Err(bad("three fields")) };
        let (Ok(t), Ok(ue)) = (t.parse::<u64>(), ue.parse::<usize>()) else { return Err(bad("integers")) };
        if t < last || ue >= n {
            return Err(bad(if t < last { "arrival times must be non-decreasing" } else { "no such UE" }));
        }
        last = t;
        if *what == "start" {
            cell.advance_to(t, &mut sinks);
            cell.request_started(ue, t);
            continue;
        }
        let size: u32 = what.parse().ok().filter(|s| (1..=mahimahi_link::OPPORTUNITY_BYTES).contains(s)).ok_or_else(|| bad("size 1..=1504"))?;
        cell.enqueue(ue, size, k as u64, t, &mut sinks);
    }
    while let Some(t) = cell.next_event() {
        cell.advance_to(t, &mut sinks);
    }
    drop(sinks);
    let mut w = out.borrow_mut();
    for r in cell.core.log.take().unwrap_or_default() {
        let blocks: Vec<String> = r.blocks.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(w, "s {} {}", r.slot, blocks.join(" "));
    }
    for (ue, start, at) in cell.detections() {
        let _ = writeln!(w, "r {ue} {start} {at}");
    }
    Ok(0)
}

/// MECaNIC's queueing under a virtual clock (issue 40): what reference/mecanic_model.py is compared with.
/// Options --queues=N (20) --rate-bps=R --queue-rate-bps=Q (uncapped) --queue-packets=K (1000) and a
/// --rule=FLOW:LO:HI:PR:PL per flow; stdin "ARRIVAL_NS FLOW SIZE" lines; prints "d DONE_NS FLOW SEQ SIZE
/// QUEUE" per packet to the host and "x ARRIVAL_NS FLOW SEQ noqueue|full" per drop.
fn simulate_mecanic(args: &[String]) -> Result<i32, Vec<String>> {
    use mahimahi_link::mecanic::{Config, Drop, Rule, Stage, MAX_PACKET};
    let mut cfg = Config { queues: 20, rate_bps: 0, queue_rate_bps: None, queue_packets: 1000 };
    let mut rules: HashMap<String, Rule> = HashMap::new();
    let mut errors = Vec::new();
    for a in args {
        let (k, v) = a.split_once('=').unwrap_or((a.as_str(), ""));
        let num = |what: &str| v.parse::<u64>().ok().filter(|n| *n > 0).ok_or(format!("{k}: {v:?} is not a positive integer ({what})"));
        match k {
            "--queues" => num("queues").map(|n| cfg.queues = n as usize),
            "--rate-bps" => num("bit/s").map(|n| cfg.rate_bps = n),
            "--queue-rate-bps" => num("bit/s").map(|n| cfg.queue_rate_bps = Some(n)),
            "--queue-packets" => num("packets").map(|n| cfg.queue_packets = n as usize),
            "--rule" => {
                let f: Vec<&str> = v.split(':').collect();
                match f.as_slice() {
                    [name, lo, hi, pr, pl] => match (lo.parse(), hi.parse(), pr.parse(), pl.parse()) {
                        (Ok(lo), Ok(hi), Ok(pr), Ok(pl)) if lo <= hi => {
                            rules.insert(name.to_string(), Rule { lo, hi, pr, pl });
                            Ok(())
                        }
                        _ => Err(format!("--rule={v}: LO <= HI, PR and PL must be integers")),
                    },
                    _ => Err(format!("--rule={v}: expected FLOW:LO:HI:PR:PL")),
                }
            }
            _ => Err(format!("simulate-mecanic: unknown option {a:?}")),
        }
        .unwrap_or_else(|e| errors.push(e));
    }
    if cfg.rate_bps == 0 {
        errors.push("simulate-mecanic: --rate-bps=R is required".into());
    }
    if let Some((name, r)) = rules.iter().find(|(_, r)| r.hi >= cfg.queues) {
        errors.push(format!("--rule={name}: queue {} is past the pool's {} queues", r.hi, cfg.queues));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut stage: Stage<(String, u64)> = Stage::new(cfg);
    let mut arrivals = Vec::new();
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.map_err(|e| vec![e.to_string()])?;
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad = |why: &str| vec![format!("stdin:{}: {why}; expected \"ARRIVAL_NS FLOW SIZE\"", n + 1)];
        let [t, flow, size] = f.as_slice() else { return Err(bad("three fields")) };
        let (Ok(t), Ok(size)) = (t.parse::<u64>(), size.parse::<u32>()) else { return Err(bad("integers")) };
        if !rules.contains_key(*flow) || size == 0 || size > MAX_PACKET || arrivals.last().is_some_and(|(l, _, _)| *l > t) {
            return Err(bad("a flow with a --rule, a size 1..=1500, times non-decreasing"));
        }
        arrivals.push((t, flow.to_string(), size));
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut seqs: HashMap<String, u64> = HashMap::new();
    let (mut i, mut now) = (0usize, 0u64);
    loop {
        while i < arrivals.len() && arrivals[i].0 <= now {
            let (t, flow, size) = &arrivals[i];
            let seq = seqs.entry(flow.clone()).or_insert(0);
            if let Err(why) = stage.enqueue(rules[flow], *size, (flow.clone(), *seq)) {
                let _ = writeln!(out, "x {t} {flow} {seq} {}", if why == Drop::NoQueue { "noqueue" } else { "full" });
            }
            *seq += 1;
            i += 1;
        }
        if let Some((done, k, (flow, seq), size)) = stage.dequeue(now) {
            let _ = writeln!(out, "d {done} {flow} {seq} {size} {k}");
        }
        match [arrivals.get(i).map(|a| a.0), stage.next_event(now)].into_iter().flatten().min() {
            Some(t) => now = now.max(t),
            None => break,
        }
    }
    out.flush().map_err(|e| vec![e.to_string()])?;
    Ok(0)
}

/// The core under a virtual clock: what the reference-model tests compare.
/// The core under a virtual clock, then (`--uplink-radio` / `--downlink-radio`) the radio's
/// timing over its departures: "d ID T" with the radio's release, "h ID T" for a packet lost
/// with its transport block (T: when it left the link), and a "radio ..." line of counters.
fn simulate(p: Parsed) -> Result<i32, Vec<String>> {
    let radio = match (&p.common.up_radio, &p.common.down_radio) {
        (Some(_), Some(_)) => return Err(vec!["simulate: one link direction: --uplink-radio or --downlink-radio, not both".into()]),
        (Some(r), None) | (None, Some(r)) => Some(r.clone()),
        (None, None) => None,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let Some(cfg) = radio else { return simulate_link(p, &mut out) };
    let mut text = Vec::new();
    let code = simulate_link(p, &mut text)?;
    let mut radio = mahimahi_link::radio::Radio::new(cfg, 1);
    for line in String::from_utf8_lossy(&text).lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["d", id, t] => {
                let t: u64 = t.parse().map_err(|_| vec![format!("simulate: a departure line {line:?}")])?;
                let _ = match radio.release(t) {
                    Some(at) => writeln!(out, "d {id} {at}"),
                    None => writeln!(out, "h {id} {t}"),
                };
            }
            _ => {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    let r = radio.counters;
    let _ = writeln!(out, "radio packets={} blocks={} retransmissions={} lost={}", r.packets, r.blocks, r.retransmissions, r.lost_packets);
    Ok(code)
}

fn simulate_link(p: Parsed, mut out: &mut dyn Write) -> Result<i32, Vec<String>> {
    let [trace] = p.positional.as_slice() else {
        return Err(vec!["simulate: name exactly one trace file".into()]);
    };
    let trace = Arc::new(Trace::load(Path::new(trace)).map_err(|e| vec![e.to_string()])?);
    let mut link: Link<u64> = Link::new(trace, p.queue, LinkOptions { spread: !p.common.ms_bursts, repeat: !p.common.once }, p.common.seed);
    if let Some(light) = &p.light {
        if p.common.timeline.is_some() {
            return Err(vec!["simulate: --light with --timeline is not supported".into()]);
        }
        let l = load_light(light)?;
        return simulate_burst(Burst::new(l.trace, l.offsets, l.opts), link, out);
    }
    // --timeline: its changes from t = 0 of the simulation, on the one link (any LINK name; an
    // uplink-trace or downlink-trace switches its trace; a delay has no place here)
    let mut changes = match &p.common.timeline {
        None => Vec::new(),
        Some(path) => mahimahi_link::timeline::load(path)?,
    };
    if changes.iter().any(|e| matches!(e.change, Change::Delay { .. } | Change::Handover { .. })) {
        return Err(vec!["simulate --timeline: a delay change needs forward mode's core delay rules, a handover its cells".into()]);
    }
    changes.reverse(); // popped in time order
    let apply = |link: &mut Link<u64>, at: u64, c: &Change, out: &mut dyn Write| match c {
        Change::Outage { duration, flush } => link.outage(at + duration, *flush, &mut SimSink { out }),
        Change::Trace { trace, aligned, .. } => link.switch_trace(trace.clone(), *aligned),
        Change::Delay { .. } | Change::Handover { .. } => {}
    };
    for (n, (t, s)) in sim_arrivals()?.into_iter().enumerate() {
        while changes.last().is_some_and(|e| e.at <= t) {
            let e = changes.pop().expect("a change");
            link.advance_to(e.at, &mut SimSink { out: &mut out });
            apply(&mut link, e.at, &e.change, &mut out);
        }
        link.enqueue(s, n as u64, t, &mut SimSink { out: &mut out });
    }
    // Drain: run until everything left the queue (or the trace ended), the changes at their times.
    while let Some(t) = link.next_event() {
        match changes.last() {
            Some(e) if e.at <= t => {
                let e = changes.pop().expect("a change");
                link.advance_to(e.at, &mut SimSink { out: &mut out });
                apply(&mut link, e.at, &e.change, &mut out);
            }
            _ => link.advance_to(t, &mut SimSink { out: &mut out }),
        }
    }
    let c = link.counters;
    let _ = writeln!(out, "counters arrived={} departed={} dropped={} queued={}", c.arrived_packets, c.departed_packets, c.dropped_packets, link.queued_packets());
    Ok(0)
}
