//! A shared cell, one direction: UEs contend for the cell's resource blocks,
//! split slot by slot by a MAC scheduler (issue #18).
//!
//! Downlink (and the "ideal" uplink): the scheduler sees the queues and its
//! allocation applies in the same slot. Uplink with signalling (TS 38.321):
//! the scheduler sees only what UEs reported. A UE with data and nothing
//! reported sends a scheduling request (SR) at its next SR opportunity; the
//! gNB answers with a small grant; every grant is used k2 slots after it is
//! decided; a slot a UE transmits in also carries a buffer status report
//! (BSR) of what is left, quantized up by the short-BSR table: every such
//! slot, or (with a periodicBSR-Timer) only when the grant had room left,
//! when data arrived for a buffer last reported empty, or when the timer ran
//! out. One logical channel group per UE, so the short BSR is the one sent.
//!
//! Each UE keeps its own [`Link`]: its trace is its channel (what it could
//! send with the whole cell) and its queue is its buffer. At the start of
//! every slot the scheduler gives each UE some of the cell's blocks, and
//! during the slot each of the UE's opportunities carries that share of its
//! 1504 bytes. So a UE alone with every block behaves exactly as the private
//! link (the same core, the same opportunity times), which a test checks
//! packet for packet.
//!
//! Blocks no backlogged UE needs are spread over all UEs (an arrival during
//! the slot can use them, as with a configured grant); schedulers decide
//! only what backlogged UEs get. Pure like the link core: the caller passes
//! the time, nothing here reads a clock.

mod handover;
mod pdcell_bridge;
mod schedulers;
mod single;
mod uplink;
#[cfg(test)]
mod tests;

pub use schedulers::*;
pub use single::Cell;
pub use uplink::{short_bsr, UplinkSignalling, SHORT_BSR_LEVELS};
use uplink::UplinkUe;

use crate::link::Link;
use crate::{Nanos, OPPORTUNITY_BYTES};

#[derive(Clone, Copy, Debug)]
pub struct CellConfig {
    pub slot_ns: Nanos,
    pub blocks: u32,
    /// Slots in proportional fair's moving average (its time constant).
    pub avg_slots: f64,
    /// Uplink signalling; None: the scheduler sees queues (downlink, ideal uplink).
    pub uplink: Option<UplinkSignalling>,
}

impl Default for CellConfig {
    fn default() -> Self {
        CellConfig { slot_ns: 500_000, blocks: 51, avg_slots: 100.0, uplink: None }
    }
}

/// One slot's allocation, for the scheduler log.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotRecord {
    pub slot: u64,
    /// Blocks each UE transmits with in this slot.
    pub blocks: Vec<u32>,
    /// What the scheduler saw of each UE (uplink with signalling: reported bytes).
    pub backlog_bytes: Vec<u64>,
    /// UEs whose SR reached the gNB in this slot.
    pub srs: Vec<usize>,
}

/// The cell's members as the cell sees them: their links, and how to run
/// one (its events go wherever the owner sends them). A `Cell` owns its
/// links; the forwarder's links live in its own structures.
pub trait MemberLinks<P> {
    fn count(&self) -> usize;
    fn link(&self, i: usize) -> &Link<P>;
}

/// Members the cell may also change and run.
pub trait Members<P>: MemberLinks<P> {
    fn link_mut(&mut self, i: usize) -> &mut Link<P>;
    /// Run member `i`'s link up to and including `until`.
    fn run_to(&mut self, i: usize, until: Nanos);
}

/// One cell among a core's: its scheduler, its resource blocks, the uplink
/// grants it decided, and how many of its scheduler's detections were taken.
struct OneCell {
    sched: Box<dyn Scheduler>,
    blocks: u32,
    /// Uplink grants decided, by the slot they are used in.
    grants: std::collections::VecDeque<(u64, Vec<u32>)>,
    taken: usize,
}

/// The cells' own state: their schedulers, the slot clock they share, which
/// cell serves each member, what the gNB knows of each UE's uplink, and the
/// books. One cell is the usual case; with several, a member is scheduled by
/// the cell it is in, and a handover moves it (`detach`, then `attach`).
/// Members are numbered across the cells, so a scheduler sees every member
/// and only its own have a backlog and a channel. The members are passed to
/// each call.
pub struct CellCore {
    pub cfg: CellConfig,
    cells: Vec<OneCell>,
    /// The cell each member is in (None: in a handover's interruption, in none).
    of: Vec<Option<usize>>,
    /// The slot being served (allocated at its start).
    slot: u64,
    allocated: bool,
    served_avg: Vec<f64>,
    departed_at_start: Vec<u64>,
    /// Blocks per UE in the current slot, and the totals over all slots.
    pub alloc: Vec<u32>,
    pub blocks_total: Vec<u64>,
    pub log: Option<Vec<SlotRecord>>,
    ul: Vec<UplinkUe>,
    /// Every scheduler's detected request starts, (ue, start slot, slot detected).
    detected: Vec<(usize, u64, u64)>,
    /// Membership changes for the log: (ue, its cell from then on or None, slot).
    pub moves: Vec<(usize, Option<usize>, u64)>,
}

impl CellCore {
    pub fn new(members: usize, cfg: CellConfig, sched: Box<dyn Scheduler>) -> Self {
        CellCore::with_cells(members, cfg, vec![(sched, cfg.blocks)], vec![Some(0); members])
    }

    pub fn scheduler_name(&self) -> &'static str {
        self.cells[0].sched.name()
    }

    /// The edge's notice that UE `ue` started a request, received at `now`
    /// (told to the scheduler of the cell the UE is in).
    pub fn request_started(&mut self, ue: usize, now: Nanos) {
        if let Some(c) = self.of.get(ue).copied().flatten() {
            self.cells[c].sched.request_started(ue, now / self.cfg.slot_ns);
            self.gather();
        }
    }

    /// Request starts the schedulers detected (SMEC): (ue, start slot, slot detected).
    pub fn detections(&self) -> &[(usize, u64, u64)] {
        &self.detected
    }

    /// The schedulers' new detections into `detected`.
    fn gather(&mut self) {
        for c in &mut self.cells {
            let d = c.sched.detections();
            self.detected.extend_from_slice(&d[c.taken..]);
            c.taken = d.len();
        }
    }

    fn capacity<P>(&self, link: &Link<P>, start: Nanos) -> u64 {
        // Opportunities of the slot's millisecond, scaled to the slot.
        let opp = link.trace().opportunities_in_ms(start / 1_000_000);
        opp * OPPORTUNITY_BYTES as u64 * self.cfg.slot_ns / 1_000_000
    }

    fn allocate<P, M: Members<P>>(&mut self, m: &mut M) {
        let out = match self.cfg.uplink {
            None => self.allocate_seen(m),
            Some(ul) => self.allocate_signalled(m, ul),
        };
        self.gather();
        for (i, &o) in out.iter().enumerate() {
            let blocks = self.of[i].map_or(1, |c| self.cells[c].blocks);
            let l = m.link_mut(i);
            l.set_share(o, blocks);
            self.blocks_total[i] += o as u64;
            self.departed_at_start[i] = l.counters.departed_bytes;
        }
        self.alloc = out;
        self.allocated = true;
    }

    /// What cell `c`'s scheduler sees at `slot`: its members' queues and channels; every other
    /// member, and one of its own in an outage (no coverage), with neither.
    fn views<P, M: MemberLinks<P>>(&self, m: &M, slot: u64, c: usize) -> Vec<UeView> {
        let start = slot * self.cfg.slot_ns;
        (0..m.count())
            .map(|i| {
                let here = self.of[i] == Some(c) && !m.link(i).dark_at(start);
                UeView {
                    backlog_bytes: if here { m.link(i).queued_bytes() } else { 0 },
                    capacity_bytes: if here { self.capacity(m.link(i), start) } else { 0 },
                    served_avg: self.served_avg[i],
                    sr_slot: None,
                    grant_pending: false,
                }
            })
            .collect()
    }

    fn log_slot(&mut self, blocks: &[u32], seen: &[UeView], srs: Vec<usize>) {
        if let Some(log) = self.log.as_mut() {
            log.push(SlotRecord { slot: self.slot, blocks: blocks.to_vec(), backlog_bytes: seen.iter().map(|v| v.backlog_bytes).collect(), srs });
        }
    }

    /// The schedulers see the queues; their allocations apply now.
    fn allocate_seen<P, M: Members<P>>(&mut self, m: &M) -> Vec<u32> {
        let n = m.count();
        let (mut out, mut decided, mut seen) = (vec![0u32; n], vec![0u32; n], vec![UeView::default(); n]);
        for c in 0..self.cells.len() {
            let views = self.views(m, self.slot, c);
            let cell = &mut self.cells[c];
            let blocks = cell.blocks;
            let mut o = vec![0u32; n];
            cell.sched.allocate(self.slot, &views, blocks, &mut o);
            let used: u32 = o.iter().sum();
            assert!(used <= blocks, "{} gave {used} of {blocks} blocks", cell.sched.name());
            // What nobody backlogged needs: spread over the cell's members (the remainder
            // rotating with the slot), so an arrival during the slot can use it.
            let mine = self.members_of(c);
            let k = mine.len() as u64;
            let spare = (blocks - used) as u64;
            for (r, &i) in mine.iter().enumerate() {
                decided[i] = o[i];
                seen[i] = views[i];
                out[i] = o[i] + (spare / k + u64::from((r as u64 + self.slot) % k < spare % k)) as u32;
            }
        }
        // The log shows the schedulers' decisions, not the spread.
        self.log_slot(&decided, &seen, Vec::new());
        out
    }

    fn close_slot<P, M: Members<P>>(&mut self, m: &M) {
        if let Some(ul) = self.cfg.uplink {
            self.report_buffers(m, ul);
        }
        let w = 1.0 / self.cfg.avg_slots;
        for i in 0..m.count() {
            let served = (m.link(i).counters.departed_bytes - self.departed_at_start[i]) as f64;
            self.served_avg[i] = (1.0 - w) * self.served_avg[i] + w * served;
        }
        self.slot += 1;
        self.allocated = false;
    }

    /// Nothing queued in a cell, granted or signalled: nothing to schedule.
    pub fn idle<P, M: MemberLinks<P>>(&self, m: &M) -> bool {
        (0..m.count()).all(|i| self.of[i].is_none() || m.link(i).queued_packets() == 0)
            && self.cells.iter().all(|c| c.grants.iter().all(|(_, g)| g.iter().all(|&b| b == 0)))
            && self.ul.iter().all(UplinkUe::quiet)
    }

    /// Run the cell and its members up to and including `now`.
    pub fn advance_to<P, M: Members<P>>(&mut self, now: Nanos, m: &mut M) {
        loop {
            let start = self.slot * self.cfg.slot_ns;
            if start > now {
                return;
            }
            if !self.allocated && self.idle(m) {
                // Nothing to schedule: skip to the slot of `now` at once, the
                // moving averages decaying as over those empty slots.
                let target = now / self.cfg.slot_ns;
                if target > self.slot {
                    let decay = (1.0 - 1.0 / self.cfg.avg_slots).powf((target - self.slot) as f64);
                    self.served_avg.iter_mut().for_each(|r| *r *= decay);
                    for i in 0..m.count() {
                        m.run_to(i, target * self.cfg.slot_ns - 1);
                    }
                    self.slot = target;
                    continue;
                }
            }
            if !self.allocated {
                self.allocate(m);
            }
            let end = start + self.cfg.slot_ns;
            let until = now.min(end - 1);
            // Only members with something due: an idle link catches up by
            // itself when it next gets a packet (the same result, and an
            // arrival then costs one link's step, not every member's).
            for i in 0..m.count() {
                if m.link(i).next_event().is_some_and(|t| t <= until) {
                    m.run_to(i, until);
                }
            }
            if until < end - 1 {
                return;
            }
            self.close_slot(m);
        }
    }

    /// When to call `advance_to` again (None: only on an arrival).
    pub fn next_event<P, M: MemberLinks<P>>(&self, m: &M) -> Option<Nanos> {
        if self.idle(m) {
            return None;
        }
        let slot_end = (self.slot + 1) * self.cfg.slot_ns;
        let first = (0..m.count()).filter_map(|i| m.link(i).next_event()).min();
        Some(first.map_or(slot_end, |t| t.min(slot_end)))
    }
}
