//! Command-line options, in mm-link's spelling where mm-link has the option
//! (`--uplink-queue=droptail --uplink-queue-args="packets=100"`,
//! `--uplink-log=FILE`, `--once`), parsed once into typed values. Every bad
//! option is an error that says what would be valid; nothing here panics.

mod cell;
mod forwarder;
mod link;

pub use cell::{parse_cell, CellSim};

use crate::packet::{BypassRule, DelayRule};
use crate::queue::QueueConfig;

pub const USAGE: &str = "\
usage:
  mahimahi-link UPLINK_TRACE DOWNLINK_TRACE [OPTIONS] [-- COMMAND [ARG...]]
      shell mode (mm-link's habits): run COMMAND (default $SHELL) in a new
      network namespace whose traffic crosses the emulated link
  mahimahi-link forward [OPTIONS] --link name=N,ue=IF,core=IF,up=TRACE,down=TRACE[,netns=NS] ...
      pass-through mode: shape frames between UE-side and core-side interfaces
      (one --link per UE; one process serves them all)
      workload-aware replay per direction (CellReplay's light trace in front of
      the trace as its heavy part): up-light=FILE (lines \"TIME_MS BASE_DELAY_MS
      PDO_MS...\"), up-light-bytes=N (what one offset carries, default 1504),
      up-light-idle-ms=X (idle this long ends a burst, default 1),
      up-light-offsets=FILE (lines \"SIZE OFFSET_MS\" for 100, 200, ... bytes),
      up-light-active-ms=X (the link stays active while it holds packets, and a
      packet then leaves no sooner than X ms after it came; default: CellReplay's
      rule, src/burst.rs BurstOptions);
      down-light... likewise
  mahimahi-link simulate TRACE [--queue=Q] [--queue-args=A] [--seed=N] [--ms-bursts] [--once] [--timeline=FILE]
                [--light=FILE [--light-bytes=N] [--light-idle-ms=X] [--light-offsets=FILE] [--light-active-ms=X]]
      virtual-clock core for tests: stdin lines \"ARRIVAL_NS SIZE\"; prints
      \"d ID T_NS\" per departure and \"x ID T_NS\" per drop; --timeline's outages
      and trace switches from t = 0 (forward mode's file; any LINK name); --light:
      workload-aware replay, TRACE the heavy part (see --link's up-light)
  mahimahi-link simulate-cell --trace=TRACE... [--scheduler=S] [--class=C...] [--uplink-signalling] [CELL OPTIONS]
      a shared cell under a virtual clock: one --trace (channel) and --class per UE;
      stdin lines \"ARRIVAL_NS UE SIZE\" (or \"ARRIVAL_NS UE start\": the edge's
      request notice; \"ARRIVAL_NS UE flow BYTES\": pDCell's metadata, the bytes left of the
      UE's flow, for mrfs); prints \"d UE ID T_NS\" per departure, \"s SLOT BLOCKS...\" per slot
      and \"r UE START_SLOT SLOT\" per detected request start
      cell options: --scheduler=rr|pf|mrfs|smec|tutti (default rr), --slot-us=N (500),
      --blocks=N (51), --class=be|lc:SLO_MS (default be), --uplink-signalling,
      --sr-period-slots=N (20), --k2-slots=N (4), --sr-grant-blocks=N (2),
      --periodic-bsr-slots=N (default: a BSR in every transmission), --be-starvation-slots=N (40),
      --pf-alpha=X (1), --pf-beta=X (1), --pf-window-slots=N (100): pf's r^alpha / R^beta
  mahimahi-link simulate-mecanic --rate-bps=R --rule=FLOW:LO:HI:PR:PL... [--queues=N] [--queue-rate-bps=Q] [--queue-packets=K]
      MECaNIC's ingress queueing under a virtual clock (issue 40): stdin \"ARRIVAL_NS FLOW SIZE\";
      prints \"d DONE_NS FLOW SEQ SIZE QUEUE\" per packet to the host, \"x ARRIVAL_NS FLOW SEQ noqueue|full\" per drop
  mahimahi-link validate TRACE...
      check trace files with mm-link's rules; print capacity

shared cell (forward mode; every --link in it; see the README, Shared cell):
  --uplink-cell=S --downlink-cell=S     rr, pf or smec (tutti: uplink): the links share that direction's cell
  --cell-members=NAME,...               the links in the cells (default: every --link); others stay private
  --cell-slot-us=N --cell-blocks=N      slot length (500) and resource blocks (51)
  --cell-uplink-signalling              the uplink scheduler sees SR/BSR reports, grants used k2 later
  --cell-sr-period-slots=N (20) --cell-k2-slots=N (4) --cell-sr-grant-blocks=N (2)
  --cell-periodic-bsr-slots=N           periodicBSR-Timer (default: a BSR in every transmission)
  --cell-class=be|lc:SLO_MS             per member, in order, for smec and tutti (default be)
  --cell-be-starvation-slots=N          smec/tutti: a best-effort UE unserved N slots goes first (40)
  --cell-pf-alpha=X --cell-pf-beta=X    pf: each slot the UE with the largest r^alpha / R^beta first (1, 1)
  --cell-pf-window-slots=N              pf: R's moving average over N slots (100)
  --cell-notice-port=PORT               tutti: UDP to PORT from the core side to a member UE is the
                                        edge's request-start notice (taken, not delivered)
  --cell-log=FILE                       per-slot log: each member's blocks, what the scheduler saw,
                                        SRs, detected request starts ({dir}: uplink/downlink)

options (shell and forward):
  --uplink-queue=Q --downlink-queue=Q   infinite (default), droptail, drophead, codel, pie
  --uplink-queue-args=A --downlink-queue-args=A
                                        e.g. \"packets=100, bytes=150000\", \"target=5, interval=100\",
                                        \"qdelay_ref=15, max_burst=150\" (times in ms)
  --uplink-log=FILE --downlink-log=FILE mm-link format logs ({name} is replaced by the link name)
  --once                                stop at the end of the traces instead of looping
  --ms-bursts                           mm-link timing: all opportunities of a millisecond at its start
                                        (default: spread evenly across the millisecond)
  --uplink-loss=P --downlink-loss=P     random loss probability 0..1 (seeded)
  --uplink-radio=R --downlink-radio=R   the radio's timing after the trace (src/radio.rs), R of
                                        slot-us=N (1000), tdd=DDDSU (the direction's slots only;
                                        default FDD), delay-ms=X (pipeline, every packet, 0),
                                        bler=P (0), harq-rtt-slots=N (8), max-tx=N (4); simulate:
                                        its one link's departures
  --seed=N                              seed for loss and PIE (default 1)
  --bypass=PREFIX[:PORT]                traffic to/from PREFIX bypasses the trace (repeatable)
  --delay=PREFIX=MS                     one-way core delay for traffic to (uplink) and from
                                        (downlink) PREFIX, microsecond precision (repeatable)
  --stats=FILE                          live JSON statistics, rewritten atomically
  --stats-interval-ms=N                 how often (default 100)
  --cpu=N                               pin the emulator to CPU N (keep other work off it);
                                        with --threads, thread K to CPU N+K
  --threads=N                           forward mode: N forwarding threads, the links dealt out
                                        among them (a shared cell's members stay on one; default 1)
  --batch-us=N                          while a link is busy (a queue backlogged), serve up to
                                        32 opportunities' departures per wakeup, at most N us
                                        (default 1000, mm-link's own granularity; 0 = wake for each)
  --coalesce-us=N                       while the next departure is at most N us away, pick up
                                        arriving frames then instead of waking (default 100)
  --gso                                 take TCP and UDP super-frames (TSO/GSO, UDP_SEGMENT) whole: each MTU segment or datagram is
                                        still charged and timed on its own, the segments that leave
                                        together go on as one frame (fewer per-packet costs; the
                                        hosts keep segmentation offload on)
  --ring-frames=N                       receive ring slots for MTU-sized frames per interface
                                        (default 8192 / links, 256..4096; --gso adds 480 / links,
                                        30..120, of 68 KiB for super-frames); frames lost to a
                                        full ring are reported as ring_drops
  --quiet                               no warnings on stderr
  --timeline=FILE                       forward mode: changes at set times after each trace restart
                                        (SIGUSR2; none before the first),
                                        one per line: AT_MS LINK outage DURATION_MS keep|flush,
                                        AT_MS LINK uplink-trace|downlink-trace PATH restart|aligned,
                                        AT_MS LINK delay PREFIX MS (LINK: a --link name or *)
  --timeline-log=FILE                   each applied change: UNIX_NS T_MS LATE_US LINK CHANGE

edge ingress stages (forward mode; MECaNIC, issue 40; one forwarding thread; with --gso a
super-frame reaches the stage as its MTU segments):
  --nic=NAME,prefix=P,rate-bps=R[,queues=N][,queue-packets=K][,queue-rate-bps=Q][,mtu=M][,plain]
                                        uplink frames to P, past the core delay, queue in a stage whose
                                        path to the host carries R bit/s: MECaNIC's pool of N queues
                                        (default 20) of K packets (64), each capped at Q, or with
                                        plain one FIFO of K packets (repeatable: one per node)
  --nic-class=NAME:LO:HI:PR:PL[,COND...]
                                        a class (first match wins): queue range LO..HI, reliability
                                        priority PR, latency priority PL; conditions proto=tcp|udp|N,
                                        src=, dst=PREFIX, sport=, dport=P[-Q], and one keyword:
                                        raw=OFFSET:HEX[/MASK], mqtt=TOPIC_PREFIX, http=PATH_PREFIX
  --nic-default=LO:HI:PR:PL             the unmatched packets' rule (default 0:N-1:0:1)
  --nic-log=FILE                        per packet: ARRIVAL_NS DONE_NS CLASS QUEUE SIZE N MATCH, or
                                        ARRIVAL_NS x CLASS full|noqueue SIZE N MATCH (N: its arrival's
                                        number; MATCH: -, or its scan's result; {name}: the stage)
  --nic-patterns=FILE                   payload pattern matching: up to 1024 patterns of up to 128
                                        bytes, one per line in hex; each scanned packet gets the first
                                        pattern found (1-based, 0: none) as IPv4 option 158 (length
                                        4) where it still fits the stage's mtu= (default 1500)
  --nic-scan=CLASS,...                  the classes scanned (default: every packet)

pDCell's CU (forward mode; issue 41; a downlink cell, one forwarding thread):
  --cu=port=P[,buffer-bytes=B|inf][,window-us=W][,alpha-us=A|alpha-lowest-bps=R][,unscheduled=N]
       [,rtt-us=R][,phost[,fronthaul-bps=F]]
                                        UDP datagrams to port P for a downlink cell member end at the
                                        CU: RTS and data of pDCell's credit transport (header: see
                                        src/pdcell/, wire). Per-UE queues in one buffer of B bytes
                                        (default 3000000), thresholds from the cell's grants, credits
                                        each slot back to the sources (ts..ts+W, W default 1000 µs;
                                        after a credit that brought no data, ts = next slot + α: A µs,
                                        or the UE's queued bytes at R bit/s; default 0), N packets sent
                                        with the RTS (2), first credit-loop estimate R µs (2000); phost:
                                        wireless-unaware, credits at the fronthaul's F bit/s (10 Gbit/s)
  --cu-log=FILE                         the CU's events (RTS, admissions, credits, departures, each
                                        slot's occupancy) and its counters at the end

signals (shell and forward): SIGINT, SIGTERM or SIGHUP stop; SIGUSR2 starts every link's trace
over from its first line at that instant (queues kept), e.g. when an experiment's measurement
begins, so the trace's phase does not depend on how long the set-up took
";

#[derive(Clone, Debug, Default)]
pub struct Common {
    pub up_queue: QueueConfig,
    pub down_queue: QueueConfig,
    pub up_log: Option<String>,
    pub down_log: Option<String>,
    pub once: bool,
    pub ms_bursts: bool,
    pub up_loss: f64,
    pub down_loss: f64,
    /// The radio's timing after the trace per direction: TDD, pipeline delay, HARQ (src/radio.rs).
    pub up_radio: Option<crate::radio::RadioConfig>,
    pub down_radio: Option<crate::radio::RadioConfig>,
    pub seed: u64,
    pub bypass: Vec<BypassRule>,
    pub delays: Vec<DelayRule>,
    pub stats: Option<String>,
    pub stats_interval_ms: u64,
    pub quiet: bool,
    pub cpu: Option<usize>,
    /// Forward mode: forwarding threads, each serving its share of the links.
    pub threads: usize,
    pub batch_us: u64,
    pub coalesce_us: u64,
    pub gso: bool,
    pub ring_frames: Option<usize>,
    /// Shared cells per direction (forward mode): the scheduler of each cell (one: every cell's).
    pub uplink_cell: Option<Vec<String>>,
    pub downlink_cell: Option<Vec<String>>,
    pub cell_slot_us: u64,
    /// Resource blocks of each cell (one: every cell's).
    pub cell_blocks: Vec<u32>,
    /// The cells' names (--cells; default one cell, "cell").
    pub cell_names: Vec<String>,
    /// Each member's first cell by name, in the members' order (None: the first cell).
    pub cell_start: Option<Vec<String>>,
    pub cell_uplink_signalling: bool,
    /// One per --link, in order (default be).
    pub cell_classes: Vec<crate::cell::UeClass>,
    /// Per-slot scheduler log; `{dir}` is replaced by uplink / downlink.
    pub cell_log: Option<String>,
    /// The links in the cells, by name (None: every --link); the others keep private links.
    pub cell_members: Option<Vec<String>>,
    /// Uplink signalling's timing (with --cell-uplink-signalling).
    pub cell_signalling: crate::cell::UplinkSignalling,
    /// SMEC and Tutti: a best-effort UE unserved this many slots goes first.
    pub cell_be_starvation_slots: u64,
    /// Proportional fair: exponents and the moving average's window (slots).
    pub cell_pf: crate::cell::ProportionalFair,
    pub cell_pf_window_slots: Option<u64>,
    /// Tutti: UDP datagrams to this port, from the core side to a member UE,
    /// are the edge's request notices (consumed, never delivered).
    pub cell_notice_port: Option<u16>,
    /// Forward mode: changes to links at set times after each trace restart (see [`crate::timeline`]).
    pub timeline: Option<String>,
    /// Where each applied change is logged.
    pub timeline_log: Option<String>,
    /// Edge ingress stages (--nic), their classes (--nic-class), the unmatched packets' rule, and the log.
    pub nics: Vec<crate::forward::NicSpec>,
    pub nic_classes: Vec<crate::mecanic::Class>,
    pub nic_default: crate::mecanic::Rule,
    pub nic_log: Option<String>,
    pub nic_patterns: Option<crate::mecanic::Patterns>,
    pub nic_scan: Vec<String>,
    /// pDCell's CU for the downlink cell's members (--cu), and its log.
    pub cu: Option<crate::forward::CuSpec>,
    pub cu_log: Option<String>,
}

/// Workload-aware replay of one direction (src/burst.rs): its light trace,
/// the bytes one train offset carries, the idle time that ends a burst, and
/// an optional per-size offset file.
#[derive(Clone, Debug, PartialEq)]
pub struct LightArg {
    pub file: String,
    pub pdo_bytes: u32,
    pub idle_ms: f64,
    pub offsets: Option<String>,
    /// The active link's latency floor (ms; None: CellReplay's burst rule; src/burst.rs BurstOptions).
    pub active_ms: Option<f64>,
}

/// The default idle time that ends a burst: CellReplay's default is 0 on a
/// millisecond clock, where packets within one millisecond share a time; on
/// this nanosecond clock 0 would make every packet that comes a nanosecond
/// after the last one's release a new burst. A recording calibrates its own
/// (CellReplay's find_gmin_and_f: the train gap G_min minus a train's span).
pub const DEFAULT_IDLE_MS: f64 = 1.0;

impl LightArg {
    pub fn new(file: &str) -> LightArg {
        LightArg { file: file.into(), pdo_bytes: crate::OPPORTUNITY_BYTES, idle_ms: DEFAULT_IDLE_MS, offsets: None, active_ms: None }
    }

    /// Set one of its keys (`bytes`, `idle-ms`, `offsets`, `active-ms`) from text; `what` names the option for errors.
    pub fn set(&mut self, key: &str, v: &str, what: &str) -> Result<(), String> {
        match key {
            "bytes" => v.parse::<u32>().ok().filter(|b| (1..=65_536).contains(b)).map(|b| self.pdo_bytes = b).ok_or_else(|| format!("{what}: {v:?} is not a byte count 1..=65536 (a train packet's IP length + 4)")),
            "idle-ms" => v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).map(|x| self.idle_ms = x).ok_or_else(|| format!("{what}: {v:?} is not a non-negative number of milliseconds")),
            "offsets" => {
                self.offsets = Some(v.into());
                Ok(())
            }
            "active-ms" => v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).map(|x| self.active_ms = Some(x)).ok_or_else(|| format!("{what}: {v:?} is not a non-negative number of milliseconds")),
            _ => Err(format!("{what}: unknown key")),
        }
    }

    pub fn options(&self) -> crate::burst::BurstOptions {
        crate::burst::BurstOptions { pdo_bytes: self.pdo_bytes, idle_ns: (self.idle_ms * 1e6).round() as u64, active_ns: self.active_ms.map(|x| (x * 1e6).round() as u64) }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkArg {
    pub name: String,
    pub ue: String,
    pub core: String,
    pub up: String,
    pub down: String,
    pub netns: Option<String>,
    /// Workload-aware replay per direction (up-light=FILE, up-light-bytes=, up-light-idle-ms=, up-light-offsets=).
    pub up_light: Option<LightArg>,
    pub down_light: Option<LightArg>,
}

impl LinkArg {
    pub fn parse(s: &str) -> Result<LinkArg, String> {
        let mut a = LinkArg { name: String::new(), ue: String::new(), core: String::new(), up: String::new(), down: String::new(), netns: None, up_light: None, down_light: None };
        let mut light_keys: Vec<(&str, &str)> = Vec::new();
        for part in s.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| format!("--link {s:?}: {part:?} is not key=value"))?;
            match k {
                "name" => a.name = v.into(),
                "ue" => a.ue = v.into(),
                "core" => a.core = v.into(),
                "up" => a.up = v.into(),
                "down" => a.down = v.into(),
                "netns" => a.netns = Some(v.into()),
                "up-light" => a.up_light = Some(LightArg::new(v)),
                "down-light" => a.down_light = Some(LightArg::new(v)),
                _ if (k.starts_with("up-light-") || k.starts_with("down-light-")) => light_keys.push((k, v)),
                _ => return Err(format!("--link {s:?}: unknown key {k:?}; valid: name, ue, core, up, down, netns, up-light, down-light, {{up,down}}-light-{{bytes,idle-ms,offsets,active-ms}}")),
            }
        }
        for (k, v) in light_keys {
            let (dir, key) = k.split_once("-light-").expect("a light key");
            let light = if dir == "up" { a.up_light.as_mut() } else { a.down_light.as_mut() };
            let Some(light) = light else {
                return Err(format!("--link {s:?}: {k} without {dir}-light=FILE"));
            };
            light.set(key, v, &format!("--link {s:?}: {k}")).map_err(|e| if e.ends_with("unknown key") { format!("{e} (valid: {dir}-light-bytes, -idle-ms, -offsets, -active-ms)") } else { e })?;
        }
        for (k, v) in [("ue", &a.ue), ("core", &a.core), ("up", &a.up), ("down", &a.down)] {
            if v.is_empty() {
                return Err(format!("--link {s:?}: missing {k}=...; expected name=N,ue=IF,core=IF,up=TRACE,down=TRACE"));
            }
        }
        if a.name.is_empty() {
            a.name = a.ue.clone();
        }
        Ok(a)
    }
}

#[derive(Debug)]
pub struct Parsed {
    pub common: Common,
    pub positional: Vec<String>,
    pub links: Vec<LinkArg>,
    pub command: Vec<String>,
    /// simulate-only: --queue / --queue-args
    pub queue: QueueConfig,
    /// simulate-only: --light=FILE and its --light-bytes, --light-idle-ms, --light-offsets
    pub light: Option<LightArg>,
}

/// An option whose value is kept as given (a file name, a path template).
pub(super) fn keep(slot: &mut Option<String>, val: String) -> Result<(), String> {
    *slot = Some(val);
    Ok(())
}

/// An option whose value is checked later, with others (a queue and its arguments).
pub(super) fn set(slot: &mut String, val: String) -> Result<(), String> {
    *slot = val;
    Ok(())
}

pub(super) fn parse_prob(key: &str, v: &str) -> Result<f64, String> {
    v.parse::<f64>().ok().filter(|p| (0.0..=1.0).contains(p)).ok_or_else(|| format!("{key}: {v:?} is not a probability between 0 and 1"))
}

/// The options read so far, before the queues and the light trace's own
/// options are checked together at the end.
pub(super) struct Pending {
    c: Common,
    simulate: bool,
    links: Vec<LinkArg>,
    light: Option<LightArg>,
    light_keys: Vec<(String, String)>,
    /// The queues' kinds and arguments: uplink, downlink, and simulate's one.
    uq: String,
    uqa: String,
    dq: String,
    dqa: String,
    q: String,
    qa: String,
}

/// Parse everything after the mode word; `simulate` enables --queue and --light.
pub fn parse(args: &[String], simulate: bool) -> Result<Parsed, Vec<String>> {
    let mut errors = Vec::new();
    let c = Common { seed: 1, stats_interval_ms: 100, batch_us: 1000, threads: 1, coalesce_us: 100, cell_slot_us: 500, cell_blocks: vec![51], cell_names: vec!["cell".into()], cell_be_starvation_slots: 40, nic_default: crate::mecanic::DEFAULT_RULE, ..Default::default() };
    let mut p = Pending { c, simulate, links: Vec::new(), light: None, light_keys: Vec::new(), uq: "infinite".into(), uqa: String::new(),
                          dq: "infinite".into(), dqa: String::new(), q: "infinite".into(), qa: String::new() };
    let mut positional = Vec::new();
    let mut command = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            command = args[i..].to_vec();
            break;
        }
        if !a.starts_with("--") || a.len() == 2 {
            positional.push(a.clone());
            continue;
        }
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        let flag = matches!(key.as_str(), "--once" | "--ms-bursts" | "--gso" | "--quiet" | "--cell-uplink-signalling");
        if flag {
            if inline.is_some() {
                errors.push(format!("{key} takes no value"));
            }
            match key.as_str() {
                "--once" => p.c.once = true,
                "--ms-bursts" => p.c.ms_bursts = true,
                "--gso" => p.c.gso = true,
                "--cell-uplink-signalling" => p.c.cell_uplink_signalling = true,
                _ => p.c.quiet = true,
            }
            continue;
        }
        let val = match inline {
            Some(v) => v,
            None if i < args.len() => {
                i += 1;
                args[i - 1].clone()
            }
            None => {
                errors.push(format!("{key} needs a value"));
                continue;
            }
        };
        let r = match key.as_str() {
            k if k.starts_with("--cell") || k == "--uplink-cell" || k == "--downlink-cell" => cell::cell_option(&mut p.c, k, val),
            k if k.starts_with("--nic") || k.starts_with("--cu") => forwarder::stage_option(&mut p.c, k, val),
            k @ ("--cpu" | "--threads" | "--batch-us" | "--ring-frames" | "--coalesce-us") => forwarder::machine_option(&mut p.c, k, val),
            k => link::link_option(&mut p, k, val),
        };
        if let Err(e) = r {
            // Every error names the option it came from, so a user with many
            // --link/--delay options knows which one to fix.
            errors.push(if e.starts_with(&key) { e } else { format!("{key}: {e}") });
        }
    }
    let mut queue = |kind: &str, args: &str, which: &str| match QueueConfig::parse(kind, args) {
        Ok(q) => q,
        Err(e) => {
            errors.push(format!("{which}: {e}"));
            QueueConfig::default()
        }
    };
    p.c.up_queue = queue(&p.uq, &p.uqa, "--uplink-queue");
    p.c.down_queue = queue(&p.dq, &p.dqa, "--downlink-queue");
    let queue = queue(&p.q, &p.qa, "--queue");
    for (k, v) in p.light_keys {
        match p.light.as_mut() {
            None => errors.push(format!("{k}: without --light=FILE")),
            Some(l) => {
                if let Err(e) = l.set(k.trim_start_matches("--light-"), &v, &k) {
                    errors.push(e);
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(Parsed { common: p.c, positional, links: p.links, command, queue, light: p.light })
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn mahimahi_spelling_and_errors_all_at_once() {
        let p = parse(&v(&["up", "down", "--uplink-queue=droptail", "--uplink-queue-args=packets=10", "--once", "--", "ping", "x"]), false).unwrap();
        assert_eq!(p.common.up_queue.packets, Some(10));
        assert!(p.common.once);
        assert_eq!(p.command, v(&["ping", "x"]));
        let e = parse(&v(&["--uplink-queue=fifo", "--seed=x", "--bogus=1", "--uplink-loss", "2"]), false).unwrap_err();
        assert_eq!(e.len(), 4, "{e:?}");
    }

    #[test]
    fn ring_frames_within_bounds() {
        assert_eq!(parse(&v(&["--ring-frames=512"]), false).unwrap().common.ring_frames, Some(512));
        assert_eq!(parse(&v(&[]), false).unwrap().common.ring_frames, None);
        for bad in ["--ring-frames=8", "--ring-frames=100000", "--ring-frames=many"] {
            assert!(parse(&v(&[bad]), false).unwrap_err()[0].contains("16..=65536"), "{bad}");
        }
    }

    #[test]
    fn link_args() {
        let l = LinkArg::parse("name=ue1,ue=a,core=b,up=u.tr,down=d.tr,netns=ran").unwrap();
        assert_eq!(l.netns.as_deref(), Some("ran"));
        assert!(LinkArg::parse("ue=a,core=b").unwrap_err().contains("missing up"));
        assert!(LinkArg::parse("ue=a,colour=b").unwrap_err().contains("unknown key"));
    }
}
