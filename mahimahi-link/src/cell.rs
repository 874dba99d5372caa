//! A shared cell, one direction: UEs contend for the cell's resource blocks,
//! split slot by slot by a MAC scheduler (issue #18; the uplink's BSR/SR
//! signalling comes next, on top of this).
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

use crate::link::{Link, Sink};
use crate::{Nanos, OPPORTUNITY_BYTES};

/// What a scheduler sees of one UE at a slot's start.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UeView {
    /// Bytes the scheduler knows are waiting (downlink: the queue itself).
    pub backlog_bytes: u64,
    /// Bytes the UE could move in this slot with every block (its channel).
    pub capacity_bytes: u64,
    /// Moving average of the bytes served per slot (proportional fair's R).
    pub served_avg: f64,
}

/// A MAC scheduler: splits `blocks` among the UEs for one slot.
pub trait Scheduler {
    fn name(&self) -> &'static str;
    /// Fill `out` (one entry per UE, zeroed) with blocks; the sum may be less
    /// than `blocks` (the cell spreads the rest).
    fn allocate(&mut self, slot: u64, ues: &[UeView], blocks: u32, out: &mut [u32]);
}

/// Blocks a UE needs for its backlog this slot (at least one when it has any).
pub fn blocks_needed(ue: &UeView, blocks: u32) -> u32 {
    if ue.backlog_bytes == 0 {
        return 0;
    }
    if ue.capacity_bytes == 0 {
        return blocks; // no channel this slot: asking for everything gets nothing through anyway
    }
    let need = (ue.backlog_bytes * blocks as u64).div_ceil(ue.capacity_bytes);
    need.clamp(1, blocks as u64) as u32
}

/// Round robin: backlogged UEs in turn, starting one further each slot,
/// each offered an equal part of what is left and taking what it needs.
#[derive(Default)]
pub struct RoundRobin {
    next: usize,
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "rr"
    }
    fn allocate(&mut self, _slot: u64, ues: &[UeView], blocks: u32, out: &mut [u32]) {
        let n = ues.len();
        if n == 0 {
            return;
        }
        let mut need: Vec<u32> = ues.iter().map(|u| blocks_needed(u, blocks)).collect();
        let mut left = blocks;
        // Water-filling in turn order: equal parts, the remainder to the first in turn.
        loop {
            let wanting: Vec<usize> = (0..n).map(|k| (self.next + k) % n).filter(|&i| need[i] > 0).collect();
            if wanting.is_empty() || left == 0 {
                break;
            }
            let part = (left / wanting.len() as u32).max(1);
            for &i in &wanting {
                let g = part.min(need[i]).min(left);
                out[i] += g;
                need[i] -= g;
                left -= g;
                if left == 0 {
                    break;
                }
            }
        }
        self.next = (self.next + 1) % n;
    }
}

/// Proportional fair: each slot, UEs in order of r^alpha / R^beta (r: this
/// slot's channel, R: the moving average of what each was served), each
/// taking the blocks it needs until none are left.
pub struct ProportionalFair {
    pub alpha: f64,
    pub beta: f64,
}

impl Default for ProportionalFair {
    fn default() -> Self {
        ProportionalFair { alpha: 1.0, beta: 1.0 }
    }
}

impl Scheduler for ProportionalFair {
    fn name(&self) -> &'static str {
        "pf"
    }
    fn allocate(&mut self, _slot: u64, ues: &[UeView], blocks: u32, out: &mut [u32]) {
        let metric = |u: &UeView| (u.capacity_bytes as f64).powf(self.alpha) / u.served_avg.max(1.0).powf(self.beta);
        let mut order: Vec<usize> = (0..ues.len()).filter(|&i| ues[i].backlog_bytes > 0).collect();
        // Highest metric first; ties by index, so the order is deterministic.
        order.sort_by(|&a, &b| metric(&ues[b]).total_cmp(&metric(&ues[a])).then(a.cmp(&b)));
        let mut left = blocks;
        for i in order {
            let g = blocks_needed(&ues[i], blocks).min(left);
            out[i] = g;
            left -= g;
            if left == 0 {
                break;
            }
        }
    }
}

/// The scheduler named in the options: "rr" or "pf".
pub fn scheduler(name: &str) -> Result<Box<dyn Scheduler>, String> {
    match name {
        "rr" => Ok(Box::new(RoundRobin::default())),
        "pf" => Ok(Box::new(ProportionalFair::default())),
        other => Err(format!("unknown scheduler {other:?}; valid: rr, pf")),
    }
}

#[derive(Clone, Copy, Debug)]
pub struct CellConfig {
    pub slot_ns: Nanos,
    pub blocks: u32,
    /// Slots in proportional fair's moving average (its time constant).
    pub avg_slots: f64,
}

impl Default for CellConfig {
    fn default() -> Self {
        CellConfig { slot_ns: 500_000, blocks: 51, avg_slots: 100.0 }
    }
}

/// One slot's allocation, for the scheduler log.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotRecord {
    pub slot: u64,
    pub blocks: Vec<u32>,
    pub backlog_bytes: Vec<u64>,
}

pub struct Cell<P> {
    pub cfg: CellConfig,
    pub links: Vec<Link<P>>,
    sched: Box<dyn Scheduler>,
    /// The slot being served (allocated at its start).
    slot: u64,
    allocated: bool,
    served_avg: Vec<f64>,
    departed_at_start: Vec<u64>,
    /// Blocks per UE in the current slot, and the totals over all slots.
    pub alloc: Vec<u32>,
    pub blocks_total: Vec<u64>,
    pub log: Option<Vec<SlotRecord>>,
}

impl<P> Cell<P> {
    pub fn new(links: Vec<Link<P>>, cfg: CellConfig, sched: Box<dyn Scheduler>) -> Self {
        let n = links.len();
        Cell {
            cfg,
            links,
            sched,
            slot: 0,
            allocated: false,
            served_avg: vec![0.0; n],
            departed_at_start: vec![0; n],
            alloc: vec![0; n],
            blocks_total: vec![0; n],
            log: None,
        }
    }

    pub fn scheduler_name(&self) -> &'static str {
        self.sched.name()
    }

    fn capacity(&self, ue: usize, start: Nanos) -> u64 {
        // Opportunities of the slot's millisecond, scaled to the slot.
        let ms = start / 1_000_000;
        let opp = self.links[ue].trace().opportunities_between(ms, ms + 1);
        opp * OPPORTUNITY_BYTES as u64 * self.cfg.slot_ns / 1_000_000
    }

    fn allocate(&mut self) {
        let start = self.slot * self.cfg.slot_ns;
        let views: Vec<UeView> = (0..self.links.len())
            .map(|i| UeView {
                backlog_bytes: self.links[i].queued_bytes(),
                capacity_bytes: self.capacity(i, start),
                served_avg: self.served_avg[i],
            })
            .collect();
        let blocks = self.cfg.blocks;
        let mut out = vec![0u32; self.links.len()];
        self.sched.allocate(self.slot, &views, blocks, &mut out);
        let used: u32 = out.iter().sum();
        assert!(used <= blocks, "{} gave {used} of {blocks} blocks", self.sched.name());
        // What nobody backlogged needs: spread over every UE (the remainder
        // rotating with the slot), so an arrival during the slot can use it.
        let n = out.len() as u32;
        let spare = blocks - used;
        for (i, o) in out.iter_mut().enumerate() {
            let extra = spare / n + u32::from(((i as u64 + self.slot) % n as u64) < (spare % n) as u64);
            *o += extra;
        }
        for (i, l) in self.links.iter_mut().enumerate() {
            l.set_share(out[i], blocks);
            self.blocks_total[i] += out[i] as u64;
            self.departed_at_start[i] = l.counters.departed_bytes;
        }
        if let Some(log) = self.log.as_mut() {
            log.push(SlotRecord { slot: self.slot, blocks: out.clone(), backlog_bytes: views.iter().map(|v| v.backlog_bytes).collect() });
        }
        self.alloc = out;
        self.allocated = true;
    }

    fn close_slot(&mut self) {
        let w = 1.0 / self.cfg.avg_slots;
        for (i, l) in self.links.iter().enumerate() {
            let served = (l.counters.departed_bytes - self.departed_at_start[i]) as f64;
            self.served_avg[i] = (1.0 - w) * self.served_avg[i] + w * served;
        }
        self.slot += 1;
        self.allocated = false;
    }

    fn idle(&self) -> bool {
        self.links.iter().all(|l| l.queued_packets() == 0)
    }

    /// Run the cell up to and including `now`; `sinks[i]` gets UE i's events.
    pub fn advance_to<S: Sink<P>>(&mut self, now: Nanos, sinks: &mut [S]) {
        loop {
            let start = self.slot * self.cfg.slot_ns;
            if start > now {
                return;
            }
            if !self.allocated && self.idle() {
                // Nothing to schedule: skip to the slot of `now` at once, the
                // moving averages decaying as over those empty slots.
                let target = now / self.cfg.slot_ns;
                if target > self.slot {
                    let decay = (1.0 - 1.0 / self.cfg.avg_slots).powf((target - self.slot) as f64);
                    self.served_avg.iter_mut().for_each(|r| *r *= decay);
                    for (i, l) in self.links.iter_mut().enumerate() {
                        l.advance_to(target * self.cfg.slot_ns - 1, &mut sinks[i]);
                    }
                    self.slot = target;
                    continue;
                }
            }
            if !self.allocated {
                self.allocate();
            }
            let end = start + self.cfg.slot_ns;
            let until = now.min(end - 1);
            for (i, l) in self.links.iter_mut().enumerate() {
                l.advance_to(until, &mut sinks[i]);
            }
            if until < end - 1 {
                return;
            }
            self.close_slot();
        }
    }

    /// A packet of charged `size` arrives at `now` for UE `ue`.
    pub fn enqueue<S: Sink<P>>(&mut self, ue: usize, size: u32, payload: P, now: Nanos, sinks: &mut [S]) {
        self.advance_to(now, sinks);
        self.links[ue].enqueue(size, payload, now, &mut sinks[ue]);
    }

    /// When to call `advance_to` again (None: only on an arrival).
    pub fn next_event(&self) -> Option<Nanos> {
        if self.idle() {
            return None;
        }
        let slot_end = (self.slot + 1) * self.cfg.slot_ns;
        let first = self.links.iter().filter_map(|l| l.next_event()).min();
        Some(first.map_or(slot_end, |t| t.min(slot_end)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkOptions;
    use crate::queue::{QueueConfig, Queued};
    use crate::rng::SplitMix64 as Rng;
    use crate::trace::Trace;
    use std::sync::Arc;

    #[derive(Default)]
    struct Rec {
        out: Vec<(Nanos, u32)>,
        bytes: u64,
    }
    impl Sink<u32> for Rec {
        fn departure(&mut self, t: Nanos, p: Queued<u32>) {
            self.out.push((t, p.payload));
            self.bytes += p.size as u64;
        }
    }

    fn below(rng: &mut Rng, n: u64) -> u64 {
        rng.next_u64() % n
    }

    fn trace(text: &str) -> Arc<Trace> {
        Arc::new(Trace::parse("t", text).unwrap())
    }

    fn link(t: &Arc<Trace>) -> Link<u32> {
        Link::new(t.clone(), QueueConfig::default(), LinkOptions::default(), 1)
    }

    #[test]
    fn one_ue_with_the_whole_cell_is_the_private_link_packet_for_packet() {
        for seed in 1..=20u64 {
            let mut rng = Rng::new(seed);
            let text: String = {
                let mut ms = 0u64;
                (0..200).map(|_| { ms += below(&mut rng, 3); format!("{}\n", ms.max(1)) }).collect()
            };
            let t = trace(&text);
            let mut private = link(&t);
            let mut cell = Cell::new(vec![link(&t)], CellConfig { slot_ns: 500_000, ..Default::default() },
                                     scheduler(if seed % 2 == 0 { "rr" } else { "pf" }).unwrap());
            let (mut a, mut b) = (Rec::default(), vec![Rec::default()]);
            let mut now = 0;
            for id in 0..400u32 {
                now += below(&mut rng, 400_000);
                let size = 40 + below(&mut rng, 1500) as u32;
                private.enqueue(size, id, now, &mut a);
                cell.enqueue(0, size, id, now, &mut b);
            }
            private.advance_to(now + 5_000_000_000, &mut a);
            cell.advance_to(now + 5_000_000_000, &mut b);
            assert_eq!(a.out.len(), 400, "seed {seed}");
            assert_eq!(a.out, b[0].out, "seed {seed}: the cell moved a packet the private link did not");
        }
    }

    fn saturate(cell: &mut Cell<u32>, seconds: u64) -> Vec<Rec> {
        let n = cell.links.len();
        let mut sinks: Vec<Rec> = (0..n).map(|_| Rec::default()).collect();
        let step = 100_000; // keep every queue full: 1500 bytes per UE every 0.1 ms
        let mut id = 0;
        for k in 0..(seconds * 10_000) {
            cell.advance_to(k * step, &mut sinks);
            for ue in 0..n {
                if cell.links[ue].queued_bytes() < 200_000 {
                    cell.enqueue(ue, 1500, id, k * step, &mut sinks);
                    id += 1;
                }
            }
        }
        cell.advance_to(seconds * 1_000_000_000, &mut sinks);
        sinks
    }

    #[test]
    fn round_robin_halves_the_cell_between_two_saturating_ues() {
        let t = trace(&"1\n".repeat(4)); // 4 opportunities per ms: 48 Mbit/s
        let mut cell = Cell::new(vec![link(&t), link(&t)], CellConfig::default(), scheduler("rr").unwrap());
        let s = saturate(&mut cell, 4);
        let ratio = s[0].bytes as f64 / s[1].bytes as f64;
        assert!((0.97..=1.03).contains(&ratio), "RR shares {} / {}", s[0].bytes, s[1].bytes);
        let total = (s[0].bytes + s[1].bytes) as f64 * 8.0 / 4.0 / 1e6;
        assert!((total - 48.1).abs() < 1.0, "the two together fill the cell: {total:.1} Mbit/s");
    }

    #[test]
    fn proportional_fair_gives_equal_time_so_rates_follow_the_channels() {
        // Channels at 2:1; saturating; PF's fixed point: equal resource
        // shares, so throughputs at the channels' ratio.
        let (fast, slow) = (trace(&"1\n".repeat(8)), trace(&"1\n".repeat(4)));
        let mut cell = Cell::new(vec![link(&fast), link(&slow)], CellConfig::default(), scheduler("pf").unwrap());
        let s = saturate(&mut cell, 4);
        let share = cell.blocks_total[0] as f64 / (cell.blocks_total[0] + cell.blocks_total[1]) as f64;
        assert!((0.47..=0.53).contains(&share), "PF block share {share:.3}");
        let ratio = s[0].bytes as f64 / s[1].bytes as f64;
        assert!((1.9..=2.1).contains(&ratio), "PF throughput ratio {ratio:.2}");
    }

    #[test]
    fn schedulers_never_give_more_than_the_cell_and_only_to_backlogged_ues() {
        let mut rng = Rng::new(7);
        for name in ["rr", "pf"] {
            let mut s = scheduler(name).unwrap();
            for slot in 0..2000 {
                let ues: Vec<UeView> = (0..1 + below(&mut rng, 12) as usize)
                    .map(|_| UeView { backlog_bytes: if below(&mut rng, 3) == 0 { 0 } else { below(&mut rng, 200_000) },
                                      capacity_bytes: below(&mut rng, 20_000), served_avg: below(&mut rng, 10_000) as f64 })
                    .collect();
                let mut out = vec![0; ues.len()];
                s.allocate(slot, &ues, 51, &mut out);
                assert!(out.iter().sum::<u32>() <= 51, "{name}: {out:?}");
                for (u, o) in ues.iter().zip(&out) {
                    assert!(u.backlog_bytes > 0 || *o == 0, "{name} gave blocks to an empty UE");
                }
            }
        }
    }
}
