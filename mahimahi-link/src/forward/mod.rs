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

use crate::gso::SuperFrame;
use crate::link::{Link, LinkOptions, Sink};
use crate::mmlog::{Header, MmLog};
use crate::writer::{Appender, Writer};
use crate::packet::{self, BypassRule, DelayRule};
use crate::queue::{QueueConfig, Queued};
use crate::rng::SplitMix64;
use crate::sys::{self, PacketSocket, Sender};
use crate::cell::CellCore;
use crate::trace::Trace;
use crate::Nanos;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::rc::Rc;
use std::sync::Arc;

mod cellspec;
mod cu;
mod event_loop;
mod frame;
mod nic;
mod path;
mod stats;
mod threads;
mod timed;

pub use cellspec::{CellSpec, Site};
pub use cu::CuSpec;
pub use frame::Frame;
pub use nic::NicSpec;
use cellspec::CellMembers;
use frame::{assemble, Pkt};
pub use threads::{run_threads, split, StatsShare};
pub use timed::check as check_timeline;


#[derive(Clone)]
pub struct DirSpec {
    pub trace: Arc<Trace>,
    pub trace_path: String,
    pub queue: QueueConfig,
    pub log_path: Option<String>,
    pub loss: f64,
    /// Workload-aware replay: the light trace in front of `trace` (src/burst.rs).
    pub light: Option<LightSpec>,
    /// The radio's timing after `trace` (src/radio.rs).
    pub radio: Option<crate::radio::RadioConfig>,
}

#[derive(Clone)]
pub struct LightSpec {
    pub trace: Arc<crate::burst::LightTrace>,
    pub offsets: Option<Arc<crate::burst::SizeOffsets>>,
    pub opts: crate::burst::BurstOptions,
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
    /// Changes at set times after each trace restart ([`crate::timeline`]).
    pub timeline: Vec<crate::timeline::Event>,
    /// Where each applied change is written, one line each (appended: every thread writes its links').
    pub timeline_log: Option<String>,
    /// Edge ingress stages (MECaNIC, issue 40): uplink frames to a stage's prefix queue there after the core delay.
    pub nics: Vec<NicSpec>,
    /// The stages' classes, first match wins; unmatched frames get `nic_default`.
    pub nic_classes: Vec<crate::mecanic::Class>,
    pub nic_default: crate::mecanic::Rule,
    /// Each stage's per-packet log (`{name}`: the stage's name).
    pub nic_log: Option<String>,
    /// Payload pattern matching in the stages, and the classes scanned (empty: every packet).
    pub nic_patterns: Option<crate::mecanic::Patterns>,
    pub nic_scan: Vec<String>,
    /// pDCell's CU (issue 41): the transport's datagrams to the downlink cell's members end there.
    pub cu: Option<CuSpec>,
    /// Its log (see forward/cu.rs).
    pub cu_log: Option<String>,
}

/// Where a delayed frame goes when its delay is over.
#[derive(Clone, Copy, PartialEq, Eq)]
enum After {
    ToCore,
    ToUe,
    IntoDownlink,
    /// The edge's request notice for the uplink cell's UE (Tutti): told to the scheduler, not delivered.
    Notice(usize),
    /// pDCell's transport for the downlink cell's UE: to the CU.
    Cu(usize),
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
    /// Workload-aware replay's light stage in front of `link` (None: plain replay).
    burst: Option<crate::burst::Burst<Pkt>>,
    /// The radio's timing after `link`, and the frames it holds until their release (in order).
    radio: Option<(crate::radio::Radio, VecDeque<(Nanos, Frame)>)>,
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

impl Direction {
    /// A packet into the direction: through the light stage when there is one.
    fn enqueue(&mut self, size: u32, p: Pkt, now: Nanos, out: &mut Vec<(Nanos, Pkt)>) {
        let mut sink = LogSink { log: self.log.as_mut(), out };
        match self.burst.as_mut() {
            Some(b) => b.enqueue(size, p, now, &mut self.link, &mut sink),
            None => self.link.enqueue(size, p, now, &mut sink),
        }
    }

    fn advance_to(&mut self, now: Nanos, out: &mut Vec<(Nanos, Pkt)>) {
        let mut sink = LogSink { log: self.log.as_mut(), out };
        match self.burst.as_mut() {
            Some(b) => b.advance_to(now, &mut self.link, &mut sink),
            None => self.link.advance_to(now, &mut sink),
        }
    }

    /// The light stage's and the radio's next release: kept exact, never batched with the link's events.
    fn next_release(&self) -> Option<Nanos> {
        let radio = self.radio.as_ref().and_then(|(_, q)| q.front().map(|e| e.0));
        [self.burst.as_ref().and_then(|b| b.next_release()), radio].into_iter().flatten().min()
    }
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
    /// Each delay rule's one-way delay for this link (a timeline may change it).
    delay_ns: Vec<Nanos>,
}

struct LogSink<'a> {
    log: Option<&'a mut MmLog>,
    out: &'a mut Vec<(Nanos, Pkt)>,
}

impl Sink<Pkt> for LogSink<'_> {
    fn departure(&mut self, t: Nanos, p: Queued<Pkt>) {
        if let Some(l) = self.log.as_mut() {
            l.departure(t, p.size, p.ingress);
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
    /// This thread's share of the timeline, resolved to its links.
    timed: timed::Timed,
    nics: Vec<nic::RunNic>,
    /// The stages' earliest next event (after the last round).
    nic_next: Option<Nanos>,
    cu: Option<cu::RunCu>,
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
                crate::rps::keep_flow_order(spec.netns.as_deref(), dev, cfg.cpu);
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
                    burst: d.light.as_ref().map(|l| crate::burst::Burst::new(l.trace.clone(), l.offsets.clone(), l.opts)),
                    radio: d.radio.as_ref().map(|r| (crate::radio::Radio::new(r.clone(), seed ^ 0x4a11), VecDeque::new())),
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
                delay_ns: cfg.delays.iter().map(|d| d.delay_ns).collect(),
            });
        }
        let timed = timed::Timed::resolve(&cfg, &links)?;
        let mut cells = [cfg.cells[0].as_ref().map(CellSpec::build).transpose()?, cfg.cells[1].as_ref().map(CellSpec::build).transpose()?];
        let mut member_of = [vec![None; links.len()], vec![None; links.len()]];
        for (k, spec) in cfg.cells.iter().enumerate() {
            for (ue, &li) in spec.iter().flat_map(|c| c.members.iter().enumerate()) {
                member_of[k][li] = Some(ue);
            }
        }
        let cell_logs = open_cell_logs(&cfg, &mut cells, &writer)?;
        let nics = cfg.nics.iter().map(|n| nic::RunNic::open(n, &cfg.nic_classes, cfg.nic_default, cfg.nic_log.as_deref(), &cfg.command_line, &writer)).collect::<Result<_, _>>()?;
        let cu = match (&cfg.cu, &cfg.cells[1]) {
            (Some(spec), Some(cell)) => Some(cu::RunCu::open(spec, cell.members.len(), cfg.cu_log.as_deref(), &cfg.command_line, &writer)?),
            (Some(_), None) => return Err("--cu: the CU serves a downlink cell's members (--cell or --downlink-cell)".into()),
            _ => None,
        };
        Ok(Forwarder { cfg, links, cells, member_of, cell_logs, senders, t0: sys::monotonic_ns(), restart_seen: 0, stats_at: 0, warned_oversize: false, warned_unsplittable: false, warned_tx_error: false, warned_ring_drops: false, writer, timed, nics, nic_next: None, cu })
    }

}

/// Each shared cell's scheduler log (--cell-log), its header written: which
/// members in which column, the cells and where each member starts.
fn open_cell_logs(cfg: &ForwardConfig, cells: &mut [Option<CellCore>; 2], writer: &Writer) -> Result<[Option<(Appender, usize)>; 2], String> {
    let mut cell_logs: [Option<(Appender, usize)>; 2] = [None, None];
    for (k, dir) in ["uplink", "downlink"].into_iter().enumerate() {
        let (Some(spec), Some(core)) = (&cfg.cells[k], cells[k].as_mut()) else { continue };
        let Some(path) = spec.log_path.as_ref().map(|p| p.replace("{dir}", dir)) else { continue };
        let names: Vec<&str> = spec.members.iter().map(|&li| cfg.links[li].name.as_str()).collect();
        let mut f = std::fs::File::create(&path).map_err(|e| format!("--cell-log: cannot create {path}: {e}"))?;
        use std::io::Write as _;
        let start: Vec<&str> = (0..names.len()).map(|i| spec.sites[spec.start.get(i).copied().unwrap_or(0)].name.as_str()).collect();
        let cells = if spec.sites.len() > 1 { format!(" cells={} start={}", spec.describe(), start.join(",")) } else { String::new() };
        writeln!(f, "# mahimahi-link cell ({dir}) scheduler={} slot_ns={} blocks={} members={}{cells}\n# slot BLOCKS... | seen BYTES... [| sr UE...]  (one column per member, in this order)\n# start UE START_SLOT DETECTED_SLOT\n# move UE CELL|- SLOT (a handover: the UE leaves its cell, then joins CELL)\n# t0 UNIX_NS (when slot 0 began)",
                 spec.sites[0].scheduler, spec.cfg.slot_ns, spec.cfg.blocks, names.join(","))
            .map_err(|e| format!("--cell-log: cannot write {path}: {e}"))?;
        core.log = Some(Vec::new());
        cell_logs[k] = Some((writer.register(&path, f), 0));
    }
    Ok(cell_logs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace_with(per_ms: usize, ms: u64) -> Trace {
        let text: String = (1..=ms).flat_map(|t| std::iter::repeat_n(format!("{t}\n"), per_ms)).collect();
        Trace::parse("t", &text).unwrap()
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
