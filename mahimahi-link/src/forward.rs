//! The pass-through forwarder: frames from each UE-side interface go through
//! that link's uplink (trace + queue), then the core delay, to the core-side
//! interface; frames from the core side go through the core delay, then the
//! downlink, to the UE side. One thread serves every link.
//!
//! The loop reads the clock once per round, feeds the pure cores, transmits
//! what departed, and sleeps on a timerfd until the earliest next event (a
//! departure, a delayed packet, a stats write) or until a frame arrives; a
//! busy link is served once per batch window instead (see `batch_window`). With
//! no traffic it sleeps, so an idle emulator uses no CPU.

use crate::gso::{SuperFrame, Vnet};
use crate::link::{Link, LinkOptions, Sink};
use crate::mmlog::{Header, MmLog};
use crate::writer::{Appender, Writer};
use crate::packet::{self, BypassRule, DelayRule};
use crate::queue::{QueueConfig, Queued};
use crate::rng::SplitMix64;
use crate::sys::{self, PacketSocket, Sender};
use crate::cell::{CellConfig, CellCore, MemberLinks, Members, Scheduler, Smec, UeClass};
use crate::trace::Trace;
use crate::Nanos;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct DirSpec {
    pub trace: Arc<Trace>,
    pub trace_path: String,
    pub queue: QueueConfig,
    pub log_path: Option<String>,
    pub loss: f64,
}

#[derive(Clone)]
pub struct LinkSpec {
    pub name: String,
    pub ue_if: String,
    pub core_if: String,
    /// Named network namespace holding both interfaces (None: the current one).
    pub netns: Option<String>,
    pub up: DirSpec,
    pub down: DirSpec,
}

#[derive(Clone)]
pub struct ForwardConfig {
    pub links: Vec<LinkSpec>,
    pub bypass: Vec<BypassRule>,
    pub delays: Vec<DelayRule>,
    pub link_opts: LinkOptions,
    pub seed: u64,
    pub stats_path: Option<String>,
    pub stats_interval_ns: u64,
    pub command_line: String,
    pub quiet: bool,
    /// While a queue is backlogged, departures due within this are served together.
    pub batch_ns: u64,
    /// Frames arriving while the next timed event is at most this far away
    /// are picked up at that event instead of waking the loop.
    pub coalesce_ns: u64,
    /// Pin the forwarding thread to this CPU.
    pub cpu: Option<usize>,
    /// Take TCP super-frames whole (see [`crate::gso`]) instead of asking
    /// for MTU-sized frames.
    pub gso: bool,
    /// Receive ring slots for MTU-sized frames per interface (None: sized by
    /// the number of links); `gso` adds a ring of super-frame slots.
    pub ring_frames: Option<usize>,
    /// A shared cell per direction ([uplink, downlink]) holding its members.
    pub cells: [Option<CellSpec>; 2],
    /// Tutti: UDP to this port from the core side to a member is the edge's request notice.
    pub cell_notice_port: Option<u16>,
    /// Each link's index among all the process's links (empty: its own index):
    /// seeds and the statistics file's order follow it, whichever thread serves it.
    pub link_ids: Vec<usize>,
    /// With several forwarding threads: where each puts its links' statistics,
    /// so that the file always holds every link (see [`split`]).
    pub stats_share: Option<Arc<StatsShare>>,
}

/// The statistics file of several forwarding threads: each thread puts its
/// links' entries here and writes the whole document, once every link has one.
pub struct StatsShare {
    inner: Mutex<(f64, Vec<String>)>,
}

impl StatsShare {
    pub fn new(links: usize) -> StatsShare {
        StatsShare { inner: Mutex::new((0.0, vec![String::new(); links])) }
    }

    /// The document with these entries in, stamped with the latest time any
    /// thread reported (None until every link has an entry).
    fn compose(&self, time_s: f64, ids: &[usize], entries: Vec<String>) -> Option<String> {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.0 = g.0.max(time_s);
        for (&k, e) in ids.iter().zip(entries) {
            g.1[k] = e;
        }
        if g.1.iter().any(String::is_empty) {
            return None;
        }
        Some(format!("{{\"time_s\": {:.6}, \"links\": [{}]}}\n", g.0, g.1.join(", ")))
    }
}

/// Deal the links of `cfg` out to at most `threads` forwarders: a shared
/// cell's members all go to the first (the cell schedules them together),
/// every other link to the one serving the fewest. Each config keeps only
/// its links, with their global indices, and the cells only where their
/// members are; all share one statistics file.
pub fn split(cfg: ForwardConfig, threads: usize) -> Vec<ForwardConfig> {
    let n = cfg.links.len();
    let threads = threads.clamp(1, n.max(1));
    if threads == 1 {
        return vec![cfg];
    }
    let mut in_cell = vec![false; n];
    for spec in cfg.cells.iter().flatten() {
        for &m in &spec.members {
            in_cell[m] = true;
        }
    }
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); threads];
    groups[0] = (0..n).filter(|&i| in_cell[i]).collect();
    for i in (0..n).filter(|&i| !in_cell[i]) {
        let g = (0..threads).min_by_key(|&g| (groups[g].len(), g)).expect("threads >= 1");
        groups[g].push(i);
    }
    let share = Arc::new(StatsShare::new(n));
    groups
        .into_iter()
        .filter(|g| !g.is_empty())
        .enumerate()
        .map(|(k, ids)| {
            let local = |global: usize| ids.iter().position(|&i| i == global);
            let cells = [0, 1].map(|d| {
                cfg.cells[d].as_ref().filter(|c| c.members.iter().all(|&m| local(m).is_some())).map(|c| CellSpec {
                    members: c.members.iter().filter_map(|&m| local(m)).collect(),
                    ..c.clone()
                })
            });
            ForwardConfig {
                links: ids.iter().map(|&i| cfg.links[i].clone()).collect(),
                cells,
                cpu: cfg.cpu.map(|c| c + k),
                stats_share: cfg.stats_path.as_ref().map(|_| share.clone()),
                link_ids: ids,
                ..cfg.clone()
            }
        })
        .collect()
}

/// Run the forwarders of [`split`], one thread each, until a stop signal or
/// until all of them end (`--once`); an error in one stops them all. The
/// threads block the stop signals, which reach this (main) thread; it wakes
/// them with SIGUSR1 (no SA_RESTART: a sleeping epoll_wait returns).
pub fn run_threads(cfgs: Vec<ForwardConfig>) -> Result<Stop, String> {
    use std::os::unix::thread::JoinHandleExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Barrier};
    sys::install_wake_handler();
    let n = cfgs.len();
    let repeat = cfgs.first().is_some_and(|c| c.link_opts.repeat);
    let go = Arc::new(AtomicBool::new(true));
    let barrier = Arc::new(Barrier::new(n + 1));
    let (opened_tx, opened_rx) = mpsc::channel::<Result<(), String>>();
    let blocked = sys::block_stop_signals();
    let mut handles = Vec::new();
    for (k, cfg) in cfgs.into_iter().enumerate() {
        let (go, barrier, opened) = (go.clone(), barrier.clone(), opened_tx.clone());
        let h = std::thread::Builder::new().name(format!("mml-fwd-{k}")).spawn(move || -> Result<Stop, String> {
            let fwd = Forwarder::open(cfg);
            let _ = opened.send(fwd.as_ref().map(|_| ()).map_err(Clone::clone));
            drop(opened);
            barrier.wait();
            match fwd {
                Ok(mut f) if go.load(Ordering::SeqCst) => f.run(None),
                _ => Ok(Stop::Signal(0)),
            }
        });
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                sys::restore_signals(blocked);
                return Err(format!("--threads: cannot start forwarding thread {k}: {e}"));
            }
        }
    }
    drop(opened_tx);
    sys::restore_signals(blocked);
    let errors: Vec<String> = opened_rx.iter().take(handles.len()).filter_map(Result::err).collect();
    if !errors.is_empty() {
        go.store(false, Ordering::SeqCst);
    }
    barrier.wait();
    let mut stopping = !errors.is_empty();
    while handles.iter().any(|h| !h.is_finished()) {
        // Looping traces end a thread only on a stop or an error: then all stop.
        stopping |= sys::stop_signal().is_some() || (repeat && handles.iter().any(|h| h.is_finished()));
        if stopping {
            sys::request_stop();
            for h in handles.iter().filter(|h| !h.is_finished()) {
                // SAFETY: the thread is running (not joined), so its pthread_t is valid.
                unsafe { libc::pthread_kill(h.as_pthread_t(), libc::SIGUSR1) };
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut stop = Stop::TracesEnded;
    let mut errors = errors;
    for h in handles {
        match h.join() {
            Ok(Ok(Stop::TracesEnded)) => {}
            Ok(Ok(s)) => stop = s,
            Ok(Err(e)) => errors.push(e),
            Err(_) => errors.push("a forwarding thread panicked".into()),
        }
    }
    if let Some(sig) = sys::stop_signal() {
        stop = Stop::Signal(sig);
    }
    if errors.is_empty() { Ok(stop) } else { Err(errors.join("; ")) }
}

/// One direction's shared cell.
#[derive(Clone)]
pub struct CellSpec {
    pub cfg: CellConfig,
    pub scheduler: String,
    /// One per member (fewer: the rest best effort).
    pub classes: Vec<UeClass>,
    pub log_path: Option<String>,
    /// The member links' indices, in the cell's order (its UE numbers).
    pub members: Vec<usize>,
    pub be_starvation_slots: u64,
    pub pf: crate::cell::ProportionalFair,
}

impl CellSpec {
    fn build(&self) -> Result<CellCore, String> {
        let mut classes = self.classes.clone();
        classes.resize(self.members.len(), UeClass::BestEffort);
        let sched: Box<dyn Scheduler> = match self.scheduler.as_str() {
            "smec" => Box::new(Smec::new(classes, self.be_starvation_slots)),
            "tutti" => Box::new(Smec::tutti(classes, self.be_starvation_slots)),
            "pf" => Box::new(self.pf),
            name => crate::cell::scheduler(name)?,
        };
        Ok(CellCore::new(self.members.len(), self.cfg, sched))
    }
}

/// The forwarder's links as one direction's cell sees them; departures are
/// collected per link and sent on after the cell's step.
struct CellMembers<'a> {
    links: &'a mut [RunLink],
    members: &'a [usize],
    up: bool,
    out: &'a mut Vec<(usize, Vec<(Nanos, Pkt)>)>,
}

impl MemberLinks<Pkt> for CellMembers<'_> {
    fn count(&self) -> usize {
        self.members.len()
    }
    fn link(&self, i: usize) -> &Link<Pkt> {
        let l = &self.links[self.members[i]];
        if self.up { &l.up.link } else { &l.down.link }
    }
}

impl Members<Pkt> for CellMembers<'_> {
    fn link_mut(&mut self, i: usize) -> &mut Link<Pkt> {
        let l = &mut self.links[self.members[i]];
        if self.up { &mut l.up.link } else { &mut l.down.link }
    }
    fn run_to(&mut self, i: usize, until: Nanos) {
        let i = self.members[i];
        let d = if self.up { &mut self.links[i].up } else { &mut self.links[i].down };
        let mut deps = Vec::new();
        let mut sink = LogSink { log: d.log.as_mut(), out: &mut deps };
        d.link.advance_to(until, &mut sink);
        if !deps.is_empty() {
            self.out.push((i, deps));
        }
    }
}

/// A frame on its way, with the virtio-net header to send it with (unused
/// on plain sockets).
pub struct Frame {
    data: Vec<u8>,
    vnet: Vnet,
}

/// What a link queues: a whole frame, or one MTU segment of a super-frame.
enum Pkt {
    Whole(Frame),
    Segment(Rc<SuperFrame>, u32),
}

/// Turn departures back into frames: consecutive segments of one
/// super-frame that left in the same round go out as one frame, at the
/// departure time of the last of them.
fn assemble(deps: &mut Vec<(Nanos, Pkt)>) -> Vec<(Nanos, Frame)> {
    let mut out = Vec::with_capacity(deps.len());
    let mut run: Option<(Rc<SuperFrame>, usize, usize, Nanos)> = None;
    let flush = |run: &mut Option<(Rc<SuperFrame>, usize, usize, Nanos)>, out: &mut Vec<(Nanos, Frame)>| {
        if let Some((sf, i, j, t)) = run.take() {
            let (vnet, data) = sf.build(i, j);
            out.push((t, Frame { data, vnet }));
        }
    };
    for (t, p) in deps.drain(..) {
        match p {
            Pkt::Whole(f) => {
                flush(&mut run, &mut out);
                out.push((t, f));
            }
            Pkt::Segment(sf, k) => {
                let k = k as usize;
                if let Some((rsf, _, j, rt)) = run.as_mut() {
                    if Rc::ptr_eq(rsf, &sf) && *j == k {
                        *j += 1;
                        *rt = t;
                        continue;
                    }
                }
                flush(&mut run, &mut out);
                run = Some((sf, k, k + 1, t));
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Where a delayed frame goes when its delay is over.
#[derive(Clone, Copy, PartialEq, Eq)]
enum After {
    ToCore,
    ToUe,
    IntoDownlink,
    /// The edge's request notice for the uplink cell's UE (Tutti): told to the scheduler, not delivered.
    Notice(usize),
}

#[derive(Default, Clone, Copy)]
struct Extra {
    lost_packets: u64,
    bypassed_packets: u64,
    unshaped_frames: u64,
    oversize_frames: u64,
    tx_full_drops: u64,
    superframes: u64,
    unsplittable_frames: u64,
    /// Frames lost before the emulator saw them: the interface's receive ring was full.
    ring_drops: u64,
}

struct Direction {
    link: Link<Pkt>,
    log: Option<MmLog>,
    loss: f64,
    rng: SplitMix64,
    extra: Extra,
    last_opps: u64,
    last_departed_bytes: u64,
    /// Rates of the last full stats interval, kept when the final write
    /// comes right after a periodic one (an empty interval is not a rate).
    last_rates: (f64, f64),
    /// How late a busy link's events may happen, to be served together.
    batch_ns: u64,
}

/// A backlogged queue is served about this many opportunities per wakeup
/// (bounded by `--batch-us`): slow links then wake the loop less often, fast
/// links still get small, frequent batches that keep TCP's ACK clock smooth.
const BATCH_OPPORTUNITIES: u64 = 32;

/// The batch window of a direction: the time of BATCH_OPPORTUNITIES at the
/// trace's mean rate, at most `max_ns`.
fn batch_window(trace: &Trace, max_ns: u64) -> u64 {
    let per_opportunity = trace.period_ms() * 1_000_000 / trace.opportunities.max(1);
    (BATCH_OPPORTUNITIES * per_opportunity).min(max_ns)
}

struct RunLink {
    name: String,
    ue: PacketSocket,
    core: PacketSocket,
    /// The sender of the link's network namespace (an index into `senders`).
    sender: usize,
    up: Direction,
    down: Direction,
    /// One FIFO per delay rule and direction: a fixed delay keeps FIFO order.
    delay_up: Vec<VecDeque<(Nanos, Frame, After)>>,
    delay_down: Vec<VecDeque<(Nanos, Frame, After)>>,
}

struct LogSink<'a> {
    log: Option<&'a mut MmLog>,
    out: &'a mut Vec<(Nanos, Pkt)>,
}

impl Sink<Pkt> for LogSink<'_> {
    fn departure(&mut self, t: Nanos, p: Queued<Pkt>) {
        if let Some(l) = self.log.as_mut() {
            l.departure(t, p.size, p.arrival);
        }
        self.out.push((t, p.payload));
    }
    fn arrival(&mut self, t: Nanos, size: u32) {
        if let Some(l) = self.log.as_mut() {
            l.arrival(t, size);
        }
    }
    fn opportunity(&mut self, t: Nanos) {
        if let Some(l) = self.log.as_mut() {
            l.opportunity(t);
        }
    }
    fn idle_opportunities(&mut self, t: Nanos, n: u32) {
        if let Some(l) = self.log.as_mut() {
            l.opportunities(t, n);
        }
    }
    fn drop(&mut self, t: Nanos, dropped: &[Queued<Pkt>]) {
        if let Some(l) = self.log.as_mut() {
            l.drop(t, dropped.len() as u64, dropped.iter().map(|p| p.size as u64).sum());
        }
    }
    fn wants_opportunities(&self) -> bool {
        self.log.is_some()
    }
}

fn delay_index(rules: &[DelayRule], addr: std::net::IpAddr) -> Option<usize> {
    rules.iter().position(|r| r.prefix.contains(addr))
}

pub struct Forwarder {
    cfg: ForwardConfig,
    links: Vec<RunLink>,
    /// The shared cells, [uplink, downlink] (None: private links).
    cells: [Option<CellCore>; 2],
    /// Per direction, each link's UE number in that cell (None: a private link).
    member_of: [Vec<Option<usize>>; 2],
    /// Their per-slot logs, and how many detected starts each has written.
    cell_logs: [Option<(Appender, usize)>; 2],
    /// One per network namespace the links are in.
    senders: Vec<(Option<String>, Sender)>,
    t0: u64,
    /// The trace restart (`sys::trace_restart_at`) this forwarder has carried out.
    restart_seen: u64,
    /// When the stats file was last written (ns since t0).
    stats_at: Nanos,
    warned_oversize: bool,
    warned_unsplittable: bool,
    warned_tx_error: bool,
    warned_ring_drops: bool,
    writer: Writer,
}

/// Why the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    Signal(i32),
    ChildExited,
    TracesEnded,
}

/// Events due within this are waited for on the clock, not by sleeping.
const SPIN_NS: Nanos = 20_000;

/// After traffic, how long the rings are polled before the loop sleeps.
const POLL_NS: Nanos = 50_000;

/// Frames queued for sending before they go without waiting for the round's end.
const TX_BURST: usize = 64;

/// How soon to kick TX frames again that the kernel did not take.
const TX_RETRY_NS: Nanos = 20_000;

impl Forwarder {
    /// Open every interface and log; nothing is forwarded until `run`.
    pub fn open(cfg: ForwardConfig) -> Result<Forwarder, String> {
        let writer = Writer::start();
        let gso = cfg.gso;
        let n = cfg.links.len().max(1);
        let frames = cfg.ring_frames.unwrap_or((8192 / n).clamp(256, 4096));
        let large_frames = (480 / n).clamp(30, 120);
        let mut links = Vec::new();
        let mut senders: Vec<(Option<String>, Sender)> = Vec::new();
        for (i, spec) in cfg.links.iter().enumerate() {
            let open_pair = || -> std::io::Result<(PacketSocket, PacketSocket)> {
                for dev in [&spec.ue_if, &spec.core_if] {
                    if gso {
                        sys::enable_tx_offloads(dev);
                    } else {
                        sys::disable_offloads(dev);
                    }
                }
                Ok((PacketSocket::open(&spec.ue_if, frames, gso, large_frames)?, PacketSocket::open(&spec.core_if, frames, gso, large_frames)?))
            };
            let (ue, core) = match &spec.netns {
                Some(ns) => sys::in_netns(ns, open_pair),
                None => open_pair(),
            }
            .map_err(|e| format!("link {}: {e}", spec.name))?;
            for dev in [&spec.ue_if, &spec.core_if] {
                sys::keep_flow_order(spec.netns.as_deref(), dev, cfg.cpu);
            }
            let sender = match senders.iter().position(|(ns, _)| *ns == spec.netns) {
                Some(k) => k,
                None => {
                    let s = match &spec.netns {
                        Some(ns) => sys::in_netns(ns, || Sender::open(gso)),
                        None => Sender::open(gso),
                    }
                    .map_err(|e| format!("link {}: {e}", spec.name))?;
                    senders.push((spec.netns.clone(), s));
                    senders.len() - 1
                }
            };
            let mk = |d: &DirSpec, label: &str, salt: u64| -> Result<Direction, String> {
                let log = match &d.log_path {
                    None => None,
                    Some(p) => Some(
                        MmLog::create(
                            p,
                            &Header { direction: label, trace: &d.trace_path, command_line: &cfg.command_line, queue: &d.queue.describe(), base_timestamp_ms: 0 },
                            &writer,
                        )
                        .map_err(|e| format!("link {}: cannot create log {p}: {e}", spec.name))?,
                    ),
                };
                let global = cfg.link_ids.get(i).copied().unwrap_or(i);
                let seed = cfg.seed ^ (global as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt;
                Ok(Direction {
                    link: Link::new(d.trace.clone(), d.queue, cfg.link_opts, seed),
                    log,
                    loss: d.loss,
                    rng: SplitMix64::new(seed ^ 0x5eed),
                    extra: Extra::default(),
                    last_opps: 0,
                    last_departed_bytes: 0,
                    last_rates: (0.0, 0.0),
                    batch_ns: batch_window(&d.trace, cfg.batch_ns),
                })
            };
            links.push(RunLink {
                name: spec.name.clone(),
                ue,
                core,
                sender,
                up: mk(&spec.up, "Uplink", 1)?,
                down: mk(&spec.down, "Downlink", 2)?,
                delay_up: (0..cfg.delays.len()).map(|_| VecDeque::new()).collect(),
                delay_down: (0..cfg.delays.len()).map(|_| VecDeque::new()).collect(),
            });
        }
        let mut cells = [cfg.cells[0].as_ref().map(CellSpec::build).transpose()?, cfg.cells[1].as_ref().map(CellSpec::build).transpose()?];
        let mut member_of = [vec![None; links.len()], vec![None; links.len()]];
        for (k, spec) in cfg.cells.iter().enumerate() {
            for (ue, &li) in spec.iter().flat_map(|c| c.members.iter().enumerate()) {
                member_of[k][li] = Some(ue);
            }
        }
        let mut cell_logs: [Option<(Appender, usize)>; 2] = [None, None];
        for (k, dir) in ["uplink", "downlink"].into_iter().enumerate() {
            let (Some(spec), Some(core)) = (&cfg.cells[k], cells[k].as_mut()) else { continue };
            let Some(path) = spec.log_path.as_ref().map(|p| p.replace("{dir}", dir)) else { continue };
            let names: Vec<&str> = spec.members.iter().map(|&li| cfg.links[li].name.as_str()).collect();
            let mut f = std::fs::File::create(&path).map_err(|e| format!("--cell-log: cannot create {path}: {e}"))?;
            use std::io::Write as _;
            writeln!(f, "# mahimahi-link cell ({dir}) scheduler={} slot_ns={} blocks={} members={}\n# slot BLOCKS... | seen BYTES... [| sr UE...]  (one column per member, in this order)\n# start UE START_SLOT DETECTED_SLOT\n# t0 UNIX_NS (when slot 0 began)",
                     spec.scheduler, spec.cfg.slot_ns, spec.cfg.blocks, names.join(","))
                .map_err(|e| format!("--cell-log: cannot write {path}: {e}"))?;
            core.log = Some(Vec::new());
            cell_logs[k] = Some((writer.register(&path, f), 0));
        }
        Ok(Forwarder { cfg, links, cells, member_of, cell_logs, senders, t0: sys::monotonic_ns(), restart_seen: 0, stats_at: 0, warned_oversize: false, warned_unsplittable: false, warned_tx_error: false, warned_ring_drops: false, writer })
    }

    /// Forward until a stop signal, the child (pidfd) exits, or `once` traces end.
    pub fn run(&mut self, child_pidfd: Option<i32>) -> Result<Stop, String> {
        sys::tight_timer_slack();
        if let Some(cpu) = self.cfg.cpu {
            sys::pin_to_cpu(cpu).map_err(|e| format!("--cpu={cpu}: {e}"))?;
        }
        // Two wait sets: with frames (links idle: the next frame is the next
        // event) and without (a link is busy: frames wait in the ring, with
        // their kernel timestamps, until the next timed event).
        let epoll = sys::Epoll::new().map_err(|e| e.to_string())?;
        let epoll_timed = sys::Epoll::new().map_err(|e| e.to_string())?;
        let timer = sys::TimerFd::new().map_err(|e| e.to_string())?;
        for ep in [&epoll, &epoll_timed] {
            ep.add(timer.0, 0).map_err(|e| e.to_string())?;
            if let Some(fd) = child_pidfd {
                ep.add(fd, 1).map_err(|e| e.to_string())?;
            }
        }
        for l in &self.links {
            for fd in l.ue.fds().into_iter().chain(l.core.fds()) {
                epoll.add(fd, 2).map_err(|e| e.to_string())?;
            }
        }
        self.t0 = sys::monotonic_ns();
        let init_ms = sys::unix_ms();
        // Slot 0 starts at t0: its wall-clock time lets the log be read
        // against the workload's own timestamps (time.time_ns()).
        let t0_unix_ns = sys::realtime_ns() - (sys::monotonic_ns() - self.t0);
        for (out, _) in self.cell_logs.iter_mut().flatten() {
            out.append(format!("t0 {t0_unix_ns}\n").into_bytes());
        }
        for l in &mut self.links {
            for d in [&mut l.up, &mut l.down] {
                if let Some(log) = d.log.as_mut() {
                    log.begin(init_ms);
                }
            }
        }
        let mut next_stats = 0u64;
        let mut next_flush = 1_000_000_000u64;
        let mut fired = Vec::new();
        let mut armed: Option<Nanos> = None;
        let mut last_active: Nanos = 0;
        let mut deps: Vec<(Nanos, Pkt)> = Vec::new();
        let stop = loop {
            if let Some(sig) = sys::stop_signal() {
                break Stop::Signal(sig);
            }
            self.restart_traces(&mut deps);
            let mono = sys::monotonic_ns();
            let real_offset = sys::realtime_ns() - mono + self.t0;
            let now = mono - self.t0;
            let mut busy = false;
            let mut tx_left = false;
            for li in 0..self.links.len() {
                busy |= self.receive(li, now, real_offset, &mut deps);
                self.release_delayed(li, now, &mut deps);
                self.advance(li, now, &mut deps);
            }
            self.advance_cell(true, now);
            self.advance_cell(false, now);
            if self.senders.iter().any(|(_, s)| s.pending() > 0) {
                last_active = now;
                tx_left = !self.flush_tx();
            }
            if self.cfg.stats_path.is_some() && now >= next_stats {
                self.write_stats(now);
                next_stats = now + self.cfg.stats_interval_ns;
            }
            if now >= next_flush {
                self.collect_ring_drops();
                self.flush_logs()?;
                next_flush = now + 1_000_000_000;
            }
            if !self.cfg.link_opts.repeat && self.links.iter().all(|l| l.up.link.finished() && l.down.link.finished()) {
                break Stop::TracesEnded;
            }
            if busy {
                last_active = now;
                continue;
            }
            let mut next = next_flush;
            if tx_left {
                // The kernel took only part of a TX batch (send buffer full): kick
                // the rest again shortly, as its earlier frames complete.
                next = now + TX_RETRY_NS;
            }
            if self.cfg.stats_path.is_some() {
                next = next.min(next_stats);
            }
            // Batch the wakeups of a busy link (a queue of 2 or more packets in
            // either direction): its events then happen up to its batch window
            // late (its opportunities are still used exactly). A busy link's
            // reverse traffic (ACKs) would otherwise cost a wakeup per packet.
            // Other links keep their own timing, and so does every link at low
            // load (a lone packet, a ping).
            let now2 = sys::monotonic_ns() - self.t0;
            let mut next_busy: Option<Nanos> = None;
            for l in &self.links {
                let batch = [&l.up, &l.down].iter().filter(|d| d.link.queued_packets() >= 2).map(|d| d.batch_ns).min();
                let events = [l.up.link.next_event(), l.down.link.next_event()]
                    .into_iter()
                    .flatten()
                    .chain(l.delay_up.iter().chain(l.delay_down.iter()).filter_map(|q| q.front().map(|e| e.0)));
                for t in events {
                    match batch {
                        Some(b) => {
                            let t = t.max(now2 + b);
                            next_busy = Some(next_busy.map_or(t, |n| n.min(t)));
                        }
                        None => next = next.min(t),
                    }
                }
            }
            // A shared cell needs no wakeups of its own: its members' links are
            // among the links above (a busy one batched like any other), and
            // each call of advance_cell schedules every slot up to its time,
            // each from the queues at that slot's start (an arrival advances
            // the cell before it is queued), so a late call gives the same slots.
            if next <= now2 {
                continue;
            }
            let backlogged = next_busy.is_some();
            let deadline = next_busy.map_or(next, |b| b.min(next));
            // A busy link's frames are picked up at its batch deadline (their
            // kernel timestamps keep their arrival times exact); other links'
            // frames still wake the loop.
            for l in &mut self.links {
                let idle = l.up.link.queued_packets() < 2 && l.down.link.queued_packets() < 2;
                for sock in [&mut l.ue, &mut l.core] {
                    if sock.rx_armed != idle {
                        for fd in sock.fds() {
                            epoll.arm(fd, 2, idle).map_err(|e| e.to_string())?;
                        }
                        sock.rx_armed = idle;
                    }
                }
            }
            // Just after traffic and with no queue backlogged, keep polling the rings
            // a moment: a reply (a ping's, an ACK) often follows within tens of
            // microseconds, and catching it here saves it a wakeup.
            if !backlogged && now2 - last_active < POLL_NS {
                std::hint::spin_loop();
                continue;
            }
            if deadline - now2 <= SPIN_NS {
                // Sleeping and waking again costs more than this (a timer, a VM exit
                // and a context switch: ~25 us here); wait on the clock instead.
                while sys::monotonic_ns() - self.t0 < deadline {
                    std::hint::spin_loop();
                }
                continue;
            }
            // Re-arming an hrtimer is costly (a VM exit on virtual machines); keep an
            // earlier, still pending deadline: waking early only costs one loop round.
            if !armed.is_some_and(|a| a > now2 && a <= deadline) {
                timer.set(self.t0 + deadline);
                armed = Some(deadline);
            }
            if deadline - now2 <= self.cfg.coalesce_ns {
                epoll_timed.wait(&mut fired, -1);
            } else {
                epoll.wait(&mut fired, -1);
            }
            if fired.contains(&0) {
                timer.drain();
                armed = None;
            }
            if fired.contains(&1) {
                break Stop::ChildExited;
            }
        };
        let now = sys::monotonic_ns() - self.t0;
        self.collect_ring_drops();
        if self.cfg.stats_path.is_some() {
            self.write_stats(now);
        }
        self.flush_logs()?;
        self.writer.finish()?;
        Ok(stop)
    }

    /// Carry out a trace restart asked for since the last round (SIGUSR2):
    /// every link runs to the signal's instant on its old phase, then starts
    /// its trace over from there. Taken from the signal's own timestamp, so a
    /// forwarder that notices it late (asleep until its next event) restarts
    /// at the same instant as the others.
    fn restart_traces(&mut self, deps: &mut Vec<(Nanos, Pkt)>) {
        let asked = sys::trace_restart_at();
        if asked == self.restart_seen {
            return;
        }
        self.restart_seen = asked;
        let at = asked.saturating_sub(self.t0);
        for li in 0..self.links.len() {
            self.advance(li, at, deps);
        }
        self.advance_cell(true, at);
        self.advance_cell(false, at);
        for l in &mut self.links {
            l.up.link.restart_trace(at);
            l.down.link.restart_trace(at);
        }
        // Not a warning: said even with --quiet, once per restart (by one thread), for the run's log.
        if sys::first_to_report_restart(asked) {
            eprintln!("mahimahi-link: every trace restarted from its first line at {:.3} s (SIGUSR2)", at as f64 / 1e9);
        }
    }

    /// Add the kernel's receive-ring drops to each direction's count (frames
    /// from the UE side were uplink arrivals, from the core side downlink
    /// ones) and say so once: such a loss is the emulator falling behind, not
    /// the link, and must not pass for the trace's behaviour.
    fn collect_ring_drops(&mut self) {
        for l in &mut self.links {
            for (sock, d) in [(&l.ue, &mut l.up), (&l.core, &mut l.down)] {
                let n = sock.take_ring_drops();
                if n == 0 {
                    continue;
                }
                d.extra.ring_drops += n;
                if !self.cfg.quiet && !self.warned_ring_drops {
                    self.warned_ring_drops = true;
                    crate::say!(
                        "mahimahi-link: link {}: {n} frames arriving on {} were lost because its receive ring ({} slots) was full: the emulator fell behind a burst. They count as ring_drops in the statistics; --ring-frames raises the ring size (further losses are counted silently)",
                        l.name,
                        sock.name,
                        sock.rx_slots()
                    );
                }
            }
        }
    }

    /// Hand gathered log lines to the writer thread; report a write error.
    fn flush_logs(&mut self) -> Result<(), String> {
        for (cell, log) in self.cells.iter_mut().zip(self.cell_logs.iter_mut()) {
            let (Some(cell), Some((out, written))) = (cell.as_mut(), log.as_mut()) else { continue };
            let mut text = String::new();
            for r in cell.log.as_mut().map(std::mem::take).unwrap_or_default() {
                let _ = write!(text, "{}", r.slot);
                for b in &r.blocks {
                    let _ = write!(text, " {b}");
                }
                text.push_str(" | seen");
                for b in &r.backlog_bytes {
                    let _ = write!(text, " {b}");
                }
                if !r.srs.is_empty() {
                    text.push_str(" | sr");
                    for u in &r.srs {
                        let _ = write!(text, " {u}");
                    }
                }
                text.push('\n');
            }
            for (ue, start, at) in &cell.detections()[*written..] {
                let _ = writeln!(text, "start {ue} {start} {at}");
            }
            *written = cell.detections().len();
            out.append(text.into_bytes());
        }
        for l in &mut self.links {
            for d in [&mut l.up, &mut l.down] {
                if let Some(log) = d.log.as_mut() {
                    log.flush();
                }
            }
        }
        self.writer.take_error().map_or(Ok(()), Err)
    }

    /// Drain both RX rings of link `li`. Returns whether any frame was seen.
    fn receive(&mut self, li: usize, now: Nanos, real_offset: u64, deps: &mut Vec<(Nanos, Pkt)>) -> bool {
        let mut seen = false;
        for uplink in [true, false] {
            for _ in 0..512 {
                let l = &mut self.links[li];
                let sock = if uplink { &mut l.ue } else { &mut l.core };
                let Some(fr) = sock.rx_peek() else { break };
                seen = true;
                if let Some(len) = fr.truncated_from {
                    let name = sock.name.clone();
                    sock.rx_release();
                    let d = if uplink { &mut l.up } else { &mut l.down };
                    d.extra.oversize_frames += 1;
                    if !self.warned_oversize && !self.cfg.quiet {
                        self.warned_oversize = true;
                        crate::say!(
                            "mahimahi-link: dropped a {len}-byte frame received on {name}: segmentation offload is on at the sending interface; turn it off there (ethtool -K DEV tso off gso off) so the link sees MTU-sized packets"
                        );
                    }
                    continue;
                }
                // With a virtio-net header a pending checksum travels on (NEEDS_CSUM).
                if fr.csum_not_ready && fr.vnet.is_none() {
                    sys::complete_l4_checksum(fr.data);
                }
                // The kernel's receive time is the arrival time, so frames picked up
                // late (the loop sleeps while links are busy) keep exact timing.
                let at = match fr.ts_real_ns.checked_sub(real_offset) {
                    Some(t) if fr.ts_real_ns != 0 && t <= now => t,
                    _ => now,
                };
                let frame = Frame { data: fr.data.to_vec(), vnet: fr.vnet.map(|v| v.for_resend()).unwrap_or_default() };
                sock.rx_release();
                self.ingress(li, uplink, frame, at, deps);
            }
        }
        seen
    }

    fn ingress(&mut self, li: usize, uplink: bool, frame: Frame, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        let meta = packet::parse(&frame.data);
        let bypass = meta.is_some_and(|m| self.cfg.bypass.iter().any(|r| r.matches(&m)));
        let l = &mut self.links[li];
        let Some(m) = meta else {
            // Not IP (ARP etc.): link-layer plumbing, forwarded unshaped and undelayed.
            let d = if uplink { &mut l.up } else { &mut l.down };
            d.extra.unshaped_frames += 1;
            self.transmit(li, uplink, frame);
            return;
        };
        if uplink {
            if bypass {
                l.up.extra.bypassed_packets += 1;
                let di = delay_index(&self.cfg.delays, m.dst);
                self.send_to_core(li, di, now, frame);
            } else {
                self.shape(li, true, frame, m.ip_len, now, deps);
                self.uplink_departures(li, deps);
            }
        } else {
            let notice = self.cfg.cell_notice_port.filter(|&p| m.ports.is_some_and(|(_, dst)| dst == p) && m.proto_udp);
            let after = match (notice.and(self.member_of[0][li]), bypass) {
                (Some(ue), _) => After::Notice(ue),
                (None, true) => {
                    l.down.extra.bypassed_packets += 1;
                    After::ToUe
                }
                (None, false) => After::IntoDownlink,
            };
            match delay_index(&self.cfg.delays, m.src).filter(|i| self.cfg.delays[*i].delay_ns > 0) {
                Some(i) => {
                    let release = now + self.cfg.delays[i].delay_ns;
                    self.links[li].delay_down[i].push_back((release, frame, after));
                }
                None => self.deliver(li, after, frame, now, deps),
            }
        }
    }

    /// Offer a frame to a direction's link: a super-frame as its MTU
    /// segments, one after another, each charged and timed on its own.
    fn shape(&mut self, li: usize, uplink: bool, frame: Frame, ip_len: u32, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        // In a shared cell the slots up to the frame's arrival are scheduled
        // first, so the link serves it with the right share.
        self.advance_cell(uplink, now);
        let quiet = self.cfg.quiet;
        let l = &mut self.links[li];
        let d = if uplink { &mut l.up } else { &mut l.down };
        if !frame.vnet.is_gso() {
            Self::offer(d, ip_len + 4, Pkt::Whole(frame), now, deps);
            return;
        }
        match SuperFrame::new(frame.data, &frame.vnet) {
            Ok(sf) => {
                d.extra.superframes += 1;
                let sf = Rc::new(sf);
                for k in 0..sf.segments() {
                    Self::offer(d, sf.segment_ip_len(k) + 4, Pkt::Segment(sf.clone(), k as u32), now, deps);
                }
            }
            Err(e) => {
                d.extra.unsplittable_frames += 1;
                if !self.warned_unsplittable && !quiet {
                    self.warned_unsplittable = true;
                    let dev = if uplink { &l.ue.name } else { &l.core.name };
                    crate::say!("mahimahi-link: dropped a frame received on {dev}: {e}; turn that offload off at the sender (e.g. ethtool -K DEV tx-udp-segmentation off)");
                }
            }
        }
    }

    /// One packet into a direction's link (random loss first).
    fn offer(d: &mut Direction, size: u32, p: Pkt, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        if d.loss > 0.0 && d.rng.next_f64() < d.loss {
            d.extra.lost_packets += 1;
            if let Some(log) = d.log.as_mut() {
                log.arrival(now, size);
                log.drop(now, 1, size as u64);
            }
            return;
        }
        let mut sink = LogSink { log: d.log.as_mut(), out: deps };
        d.link.enqueue(size, p, now, &mut sink);
    }

    fn deliver(&mut self, li: usize, after: After, frame: Frame, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        match after {
            After::ToCore => self.transmit(li, true, frame),
            After::ToUe => self.transmit(li, false, frame),
            After::IntoDownlink => {
                let Some(m) = packet::parse(&frame.data) else { return };
                self.shape(li, false, frame, m.ip_len, now, deps);
                self.downlink_departures(li, deps);
            }
            After::Notice(ue) => {
                // The slots before the notice are scheduled without it.
                self.advance_cell(true, now);
                if let Some(cell) = self.cells[0].as_mut() {
                    cell.request_started(ue, now);
                }
            }
        }
    }

    fn send_to_core(&mut self, li: usize, rule: Option<usize>, t: Nanos, frame: Frame) {
        let l = &mut self.links[li];
        match rule.filter(|i| self.cfg.delays[*i].delay_ns > 0) {
            Some(i) => l.delay_up[i].push_back((t + self.cfg.delays[i].delay_ns, frame, After::ToCore)),
            None => self.transmit(li, true, frame),
        }
    }

    /// Queue a frame for the core side (`to_core`) or the UE side of link
    /// `li`; it leaves with the round's other frames (see [`Sender`]).
    fn transmit(&mut self, li: usize, to_core: bool, frame: Frame) {
        let l = &mut self.links[li];
        let ifindex = if to_core { l.core.ifindex } else { l.ue.ifindex };
        let sender = &mut self.senders[l.sender].1;
        if !sender.push(ifindex, &frame.vnet, frame.data, (li as u32) << 1 | to_core as u32) {
            let d = if to_core { &mut l.up } else { &mut l.down };
            d.extra.tx_full_drops += 1;
        } else if sender.pending().is_multiple_of(TX_BURST) {
            // A long round (a flood picked up at once) sends as it goes, every
            // TX_BURST frames: not at every frame while the kernel's buffer is
            // full and frames stay queued.
            self.flush_tx();
        }
    }

    /// Send every queued frame; false while some wait for buffer space.
    /// Frames the kernel refuses count as TX drops of their direction.
    fn flush_tx(&mut self) -> bool {
        let mut all = true;
        let (links, quiet, warned) = (&mut self.links, self.cfg.quiet, &mut self.warned_tx_error);
        for (_, sender) in &mut self.senders {
            all &= sender.flush(|tag, e| {
                let l = &mut links[(tag >> 1) as usize];
                let (d, dev) = if tag & 1 == 1 { (&mut l.up, &l.core.name) } else { (&mut l.down, &l.ue.name) };
                d.extra.tx_full_drops += 1;
                if !quiet && !*warned {
                    *warned = true;
                    crate::say!("mahimahi-link: link {}: the kernel refused a frame for {dev}: {e} (counted in tx_full_drops; further refusals are counted silently)", l.name);
                }
            });
        }
        all
    }

    fn uplink_departures(&mut self, li: usize, deps: &mut Vec<(Nanos, Pkt)>) {
        if deps.is_empty() {
            return;
        }
        for (t, frame) in assemble(deps) {
            let di = packet::parse(&frame.data).and_then(|m| delay_index(&self.cfg.delays, m.dst));
            self.send_to_core(li, di, t, frame);
        }
    }

    fn downlink_departures(&mut self, li: usize, deps: &mut Vec<(Nanos, Pkt)>) {
        if deps.is_empty() {
            return;
        }
        for (_, frame) in assemble(deps) {
            self.transmit(li, false, frame);
        }
    }

    fn release_delayed(&mut self, li: usize, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        for q in 0..self.cfg.delays.len() {
            for up in [true, false] {
                loop {
                    let l = &mut self.links[li];
                    let dq = if up { &mut l.delay_up[q] } else { &mut l.delay_down[q] };
                    match dq.front() {
                        Some((t, _, _)) if *t <= now => {}
                        _ => break,
                    }
                    let (_, frame, after) = dq.pop_front().expect("front");
                    self.deliver(li, after, frame, now, deps);
                }
            }
        }
    }

    fn advance(&mut self, li: usize, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        if self.member_of[0][li].is_none() {
            let d = &mut self.links[li].up;
            let mut sink = LogSink { log: d.log.as_mut(), out: deps };
            d.link.advance_to(now, &mut sink);
        }
        self.uplink_departures(li, deps);
        if self.member_of[1][li].is_none() {
            let d = &mut self.links[li].down;
            let mut sink = LogSink { log: d.log.as_mut(), out: deps };
            d.link.advance_to(now, &mut sink);
        }
        self.downlink_departures(li, deps);
    }

    /// Run one direction's shared cell (if any) to `now`, every member's
    /// departures sent on as a private link's would be.
    fn advance_cell(&mut self, up: bool, now: Nanos) {
        let k = usize::from(!up);
        let (Some(mut cell), Some(spec)) = (self.cells[k].take(), self.cfg.cells[k].as_ref()) else { return };
        let mut out = Vec::new();
        cell.advance_to(now, &mut CellMembers { links: &mut self.links, members: &spec.members, up, out: &mut out });
        self.cells[k] = Some(cell);
        for (li, mut deps) in out {
            if up {
                self.uplink_departures(li, &mut deps);
            } else {
                self.downlink_departures(li, &mut deps);
            }
        }
    }

    /// Live statistics as one JSON document, replaced atomically by the writer thread.
    /// Rates cover the time since the previous write. They are kept from the last
    /// busy interval when the link was idle since (`idle`: nothing departed or
    /// waited; an idle link's capacity is not a measurement) and when a write comes
    /// less than half an interval after the previous one (the one at exit). The
    /// whole-run means still say something after the run.
    fn write_stats(&mut self, now: Nanos) {
        let Some(path) = self.cfg.stats_path.clone() else { return };
        let elapsed = now.saturating_sub(self.stats_at);
        let fresh = elapsed * 2 >= self.cfg.stats_interval_ns && elapsed > 0;
        if fresh {
            self.stats_at = now;
        }
        let elapsed_s = elapsed as f64 / 1e9;
        let run_s = (now as f64 / 1e9).max(1e-9);
        let mbps = |bytes: u64, s: f64| bytes as f64 * 8.0 / s / 1e6;
        let mut entries = Vec::with_capacity(self.links.len());
        for l in self.links.iter_mut() {
            let mut s = String::new();
            s.push_str("{\"name\": ");
            json_string(&mut s, &l.name);
            for (label, d) in [("uplink", &mut l.up), ("downlink", &mut l.down)] {
                let c = d.link.counters;
                let idle = c.departed_bytes == d.last_departed_bytes && d.link.queued_packets() == 0;
                if fresh {
                    let opps = c.opportunities - d.last_opps;
                    if !idle {
                        d.last_rates = (mbps(opps * crate::OPPORTUNITY_BYTES as u64, elapsed_s), mbps(c.departed_bytes - d.last_departed_bytes, elapsed_s));
                    }
                    d.last_opps = c.opportunities;
                    d.last_departed_bytes = c.departed_bytes;
                }
                let (cap, del) = d.last_rates;
                let e = d.extra;
                let _ = write!(
                    s,
                    ", \"{label}\": {{\"queue_packets\": {}, \"queue_bytes\": {}, \"arrived_packets\": {}, \"arrived_bytes\": {}, \"departed_packets\": {}, \"departed_bytes\": {}, \"dropped_packets\": {}, \"dropped_bytes\": {}, \"lost_packets\": {}, \"bypassed_packets\": {}, \"unshaped_frames\": {}, \"oversize_frames\": {}, \"tx_full_drops\": {}, \"superframes\": {}, \"unsplittable_frames\": {}, \"ring_drops\": {}, \"opportunities\": {}, \"capacity_mbps\": {:.3}, \"delivered_mbps\": {:.3}, \"idle\": {}, \"mean_capacity_mbps\": {:.3}, \"mean_delivered_mbps\": {:.3}}}",
                    d.link.queued_packets(), d.link.queued_bytes(), c.arrived_packets, c.arrived_bytes, c.departed_packets, c.departed_bytes,
                    c.dropped_packets, c.dropped_bytes, e.lost_packets, e.bypassed_packets, e.unshaped_frames, e.oversize_frames, e.tx_full_drops,
                    e.superframes, e.unsplittable_frames, e.ring_drops, c.opportunities, cap, del, idle,
                    mbps(c.opportunities * crate::OPPORTUNITY_BYTES as u64, run_s), mbps(c.departed_bytes, run_s)
                );
            }
            s.push('}');
            entries.push(s);
        }
        let time_s = now as f64 / 1e9;
        let doc = match &self.cfg.stats_share {
            None => Some(format!("{{\"time_s\": {time_s:.6}, \"links\": [{}]}}\n", entries.join(", "))),
            Some(share) => share.compose(time_s, &self.cfg.link_ids, entries),
        };
        if let Some(doc) = doc {
            self.writer.replace(&path, doc);
        }
    }
}

/// `text` as a JSON string literal (link names come from the command line).
fn json_string(out: &mut String, text: &str) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace_with(per_ms: usize, ms: u64) -> Trace {
        let text: String = (1..=ms).flat_map(|t| std::iter::repeat_n(format!("{t}\n"), per_ms)).collect();
        Trace::parse("t", &text).unwrap()
    }

    fn config_with(links: usize, cell_members: Option<Vec<usize>>) -> ForwardConfig {
        let dir = DirSpec { trace: Arc::new(trace_with(1, 1)), trace_path: "t".into(), queue: QueueConfig::default(), log_path: None, loss: 0.0 };
        let link = |i: usize| LinkSpec { name: format!("l{i}"), ue_if: format!("u{i}"), core_if: format!("c{i}"), netns: None, up: dir.clone(), down: dir.clone() };
        let cell = cell_members.map(|members| CellSpec {
            cfg: crate::cell::CellConfig::default(), scheduler: "pf".into(), classes: Vec::new(), log_path: None, members,
            be_starvation_slots: 40, pf: crate::cell::ProportionalFair::default(),
        });
        ForwardConfig {
            links: (0..links).map(link).collect(), bypass: Vec::new(), delays: Vec::new(), link_opts: LinkOptions::default(), seed: 1,
            stats_path: Some("s".into()), stats_interval_ns: 1, command_line: String::new(), quiet: true, batch_ns: 0, coalesce_ns: 0,
            cpu: Some(2), gso: false, ring_frames: None, cells: [cell, None], cell_notice_port: None, link_ids: Vec::new(), stats_share: None,
        }
    }

    #[test]
    fn split_keeps_a_cells_members_together_and_deals_out_the_rest() {
        let parts = split(config_with(5, Some(vec![3, 1])), 3);
        let ids: Vec<Vec<usize>> = parts.iter().map(|c| c.link_ids.clone()).collect();
        assert_eq!(ids, vec![vec![1, 3], vec![0, 4], vec![2]]);
        let names: Vec<&str> = parts[0].links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["l1", "l3"]);
        // the cell lives where its members are, its UE order kept, in local indices
        assert_eq!(parts[0].cells[0].as_ref().map(|c| c.members.clone()), Some(vec![1, 0]));
        assert!(parts[1].cells[0].is_none() && parts[2].cells[0].is_none());
        assert_eq!(parts.iter().map(|c| c.cpu).collect::<Vec<_>>(), [Some(2), Some(3), Some(4)]);
        assert!(parts.iter().all(|c| c.stats_share.as_ref().is_some_and(|s| Arc::ptr_eq(s, parts[0].stats_share.as_ref().unwrap()))));
        // more threads than links: one link each; one thread: the config as it was
        assert_eq!(split(config_with(2, None), 8).len(), 2);
        let one = split(config_with(3, None), 1);
        assert!(one.len() == 1 && one[0].link_ids.is_empty() && one[0].stats_share.is_none());
    }

    #[test]
    fn shared_statistics_are_written_once_every_link_has_an_entry_in_link_order() {
        let share = StatsShare::new(3);
        assert_eq!(share.compose(1.0, &[0, 2], vec!["{\"name\": \"a\"}".into(), "{\"name\": \"c\"}".into()]), None);
        let doc = share.compose(0.5, &[1], vec!["{\"name\": \"b\"}".into()]).expect("complete");
        // the latest time any thread reported: a reader never sees time go back
        assert_eq!(doc, "{\"time_s\": 1.000000, \"links\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"}]}\n");
    }

    #[test]
    fn batch_window_is_32_opportunities_at_the_mean_rate_capped() {
        // 120 Mbit/s: 10 opportunities per ms, 100 us apart -> 3.2 ms, capped at 1 ms.
        assert_eq!(batch_window(&trace_with(10, 20), 1_000_000), 1_000_000);
        // 4.8 Gbit/s: 400 per ms, 2.5 us apart -> 80 us.
        assert_eq!(batch_window(&trace_with(400, 5), 1_000_000), 80_000);
        // A slow trace with gaps: 1 opportunity every 4 ms -> capped.
        assert_eq!(batch_window(&Trace::parse("t", "4\n8\n").unwrap(), 1_000_000), 1_000_000);
        // --batch-us=0 wakes for each departure.
        assert_eq!(batch_window(&trace_with(400, 5), 0), 0);
    }
}
