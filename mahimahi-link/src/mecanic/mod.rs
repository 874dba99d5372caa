//! MECaNIC's ingress queueing (Algorithm 1 of "MECaNIC: SmartNIC to Assist
//! URLLC Processing in MEC Platforms"; ../shared/design/SPEC-mecanic.md), the
//! core of the edge ingress stage of issue 40. Pure, like the link core: the
//! caller passes the time. `reference/mecanic_model.py` is the independent
//! model it is held to, event for event (`mahimahi-link simulate-mecanic`).
//!
//! Why in the emulator: the packets bound for an edge node already pass
//! through this process (the core hop), so a stage here sees them with no
//! extra copy or hop, on the same clock as the link and the core delay, and
//! its queues are measured the same way as the link's.
//!
//! The rules (the same words as the model's docstring):
//! - enqueue: candidates are the flow's queue range; allowed, those whose P^r
//!   is at most the flow's; among them (those with room first) the lowest
//!   P^r, then the least recently enqueued to, then the lowest index. That
//!   queue takes the flow's P^r, even when the packet is then dropped because
//!   every allowed queue is full; with no queue allowed it is dropped too.
//! - a queue that empties gives its P^r back (0).
//! - whenever the path to the host is free: among queues whose head is within
//!   the queue's cap (a token bucket one 1500-byte packet deep), the head with
//!   the largest dp, ties to the queue after the one served last; it leaves
//!   after its transmission time (rounded up to the ns), and every packet
//!   still queued ages: dp += its dp_tick (= the flow's P^l).
//!
//! Arithmetic is integer (tokens in bit·1e9 units), so the model and the
//! core agree to the nanosecond.

mod classify;
mod patterns;

pub use classify::{classify, dissect, parse_class, Class, Dissected, Keyword, Match};
pub use patterns::{mark, Patterns, MATCH_OPTION, MAX_PATTERNS, MAX_PATTERN_BYTES};

use crate::Nanos;
use std::collections::VecDeque;

/// A flow's classification: its queue range (inclusive), P^r and P^l.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub lo: usize,
    pub hi: usize,
    pub pr: u32,
    pub pl: u64,
}

/// The unmatched packets' rule by default: any queue (the range is cut to the pool), no claim
/// on a held queue, the lowest latency priority that still ages.
pub const DEFAULT_RULE: Rule = Rule { lo: 0, hi: usize::MAX, pr: 0, pl: 1 };

impl Default for Rule {
    fn default() -> Rule {
        DEFAULT_RULE
    }
}

/// The largest packet a queue's token bucket holds (and so the largest the stage takes).
pub const MAX_PACKET: u32 = 1500;
const BUCKET: u128 = MAX_PACKET as u128 * 8 * 1_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    NoQueue,
    Full,
}

#[derive(Debug)]
struct Waiting<P> {
    payload: P,
    size: u32,
    dp: u64,
    tick: u64,
}

#[derive(Debug)]
struct Queue<P> {
    pr: u32,
    /// The enqueue count when last chosen (None: never).
    last: Option<u64>,
    packets: VecDeque<Waiting<P>>,
    tokens: u128,
    tokens_at: Nanos,
}

/// The stage's configuration.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub queues: usize,
    /// The path to the host (bit/s).
    pub rate_bps: u64,
    /// Each queue's cap (bit/s; None: uncapped).
    pub queue_rate_bps: Option<u64>,
    pub queue_packets: usize,
}

pub struct Stage<P> {
    cfg: Config,
    pool: Vec<Queue<P>>,
    enqueues: u64,
    last_served: usize,
    busy_until: Nanos,
}

impl<P> Stage<P> {
    pub fn new(cfg: Config) -> Self {
        let pool = (0..cfg.queues)
            .map(|_| Queue { pr: 0, last: None, packets: VecDeque::new(), tokens: if cfg.queue_rate_bps.is_some() { BUCKET } else { 0 }, tokens_at: 0 })
            .collect();
        Stage { cfg, pool, enqueues: 0, last_served: cfg.queues.saturating_sub(1), busy_until: 0 }
    }

    /// A packet of a flow classified by `rule` arrives; Err: why it was dropped.
    pub fn enqueue(&mut self, rule: Rule, size: u32, payload: P) -> Result<usize, Drop> {
        let hi = rule.hi.min(self.cfg.queues - 1);
        let allowed: Vec<usize> = (rule.lo..=hi).filter(|&k| self.pool[k].pr <= rule.pr).collect();
        if allowed.is_empty() {
            return Err(Drop::NoQueue);
        }
        let room: Vec<usize> = allowed.iter().copied().filter(|&k| self.pool[k].packets.len() < self.cfg.queue_packets).collect();
        let among = if room.is_empty() { &allowed } else { &room };
        let lowest = among.iter().map(|&k| self.pool[k].pr).min().unwrap_or(0);
        // least recently chosen first: never chosen (None) before any count
        let k = among.iter().copied().filter(|&k| self.pool[k].pr == lowest).min_by_key(|&k| (self.pool[k].last.map_or(0, |c| c + 1), k)).unwrap_or(allowed[0]);
        let q = &mut self.pool[k];
        q.pr = rule.pr;
        q.last = Some(self.enqueues);
        self.enqueues += 1;
        if room.is_empty() {
            return Err(Drop::Full);
        }
        q.packets.push_back(Waiting { payload, size, dp: rule.pl, tick: rule.pl });
        Ok(k)
    }

    fn refill(q: &mut Queue<P>, rate: u64, t: Nanos) {
        q.tokens = BUCKET.min(q.tokens + (t - q.tokens_at) as u128 * rate as u128);
        q.tokens_at = t;
    }

    fn may_go(&mut self, k: usize, t: Nanos) -> bool {
        let rate = self.cfg.queue_rate_bps;
        let q = &mut self.pool[k];
        let Some(head) = q.packets.front() else { return false };
        let cost = head.size as u128 * 8 * 1_000_000_000;
        match rate {
            None => true,
            Some(r) => {
                Self::refill(q, r, t);
                q.tokens >= cost
            }
        }
    }

    /// When a non-empty queue's head is within its cap.
    fn ready_at(&mut self, k: usize, t: Nanos) -> Nanos {
        let Some(r) = self.cfg.queue_rate_bps else { return t };
        let q = &mut self.pool[k];
        Self::refill(q, r, t);
        let cost = q.packets.front().map_or(0, |p| p.size as u128 * 8 * 1_000_000_000);
        if cost <= q.tokens {
            t
        } else {
            t + (cost - q.tokens).div_ceil(r as u128) as Nanos
        }
    }

    /// If the path is free at `now`, the next packet to the host: (when it has left, its queue, it).
    pub fn dequeue(&mut self, now: Nanos) -> Option<(Nanos, usize, P, u32)> {
        if now < self.busy_until {
            return None;
        }
        let n = self.cfg.queues;
        let eligible: Vec<usize> = (0..n).filter(|&k| self.may_go(k, now)).collect();
        let best = eligible.iter().filter_map(|&k| self.pool[k].packets.front().map(|p| p.dp)).max()?;
        let k = (1..=n).map(|j| (self.last_served + j) % n).find(|k| eligible.contains(k) && self.pool[*k].packets.front().is_some_and(|p| p.dp == best))?;
        let rate = self.cfg.rate_bps as u128;
        let q = &mut self.pool[k];
        let p = q.packets.pop_front()?;
        let bits = p.size as u128 * 8 * 1_000_000_000;
        if self.cfg.queue_rate_bps.is_some() {
            q.tokens -= bits;
        }
        if q.packets.is_empty() {
            q.pr = 0; // released
        }
        self.last_served = k;
        self.busy_until = now + bits.div_ceil(rate) as Nanos;
        for w in self.pool.iter_mut().flat_map(|q| q.packets.iter_mut()) {
            w.dp += w.tick;
        }
        Some((self.busy_until, k, p.payload, p.size))
    }

    /// When to call `dequeue` again (None: nothing waits).
    pub fn next_event(&mut self, now: Nanos) -> Option<Nanos> {
        let waiting: Vec<usize> = (0..self.cfg.queues).filter(|&k| !self.pool[k].packets.is_empty()).collect();
        if waiting.is_empty() {
            return None;
        }
        if now < self.busy_until {
            return Some(self.busy_until);
        }
        let ready = waiting.into_iter().map(|k| self.ready_at(k, now)).min()?;
        Some(ready.max(now + 1))
    }

    /// Packets waiting, per queue (occupancy).
    pub fn occupancy(&self) -> Vec<usize> {
        self.pool.iter().map(|q| q.packets.len()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (departure time, flow, 0) per packet to the host; (arrival time, flow, why) per drop.
    type Outcome = (Vec<(Nanos, usize, usize)>, Vec<(Nanos, usize, Drop)>);

    fn run(cfg: Config, rules: &[Rule], arrivals: &[(Nanos, usize, u32)]) -> Outcome {
        let mut s: Stage<usize> = Stage::new(cfg);
        let (mut deps, mut drops) = (Vec::new(), Vec::new());
        let (mut i, mut now) = (0, 0);
        loop {
            while i < arrivals.len() && arrivals[i].0 <= now {
                let (t, flow, size) = arrivals[i];
                if let Err(why) = s.enqueue(rules[flow], size, flow) {
                    drops.push((t, flow, why));
                }
                i += 1;
            }
            if let Some((t, _, flow, _)) = s.dequeue(now) {
                deps.push((t, flow, 0));
            }
            let next = [arrivals.get(i).map(|a| a.0), s.next_event(now)].into_iter().flatten().min();
            match next {
                Some(t) => now = now.max(t),
                None => return (deps, drops),
            }
        }
    }

    #[test]
    fn the_largest_dp_goes_first_and_everything_queued_ages() {
        let cfg = Config { queues: 2, rate_bps: 10_000_000_000, queue_rate_bps: None, queue_packets: 100 };
        let rules = [Rule { lo: 0, hi: 0, pr: 1, pl: 10 }, Rule { lo: 1, hi: 1, pr: 1, pl: 1 }];
        let arrivals = [(0, 1, 1250), (0, 1, 1250), (0, 1, 1250), (0, 0, 1250), (0, 0, 1250)];
        let (deps, _) = run(cfg, &rules, &arrivals);
        let flows: Vec<usize> = deps.iter().map(|d| d.1).collect();
        assert_eq!(flows, vec![0, 0, 1, 1, 1]);
        assert_eq!(deps.iter().map(|d| d.0).collect::<Vec<_>>(), vec![1000, 2000, 3000, 4000, 5000]);
    }

    #[test]
    fn a_higher_reliability_priority_claims_a_full_queue_and_the_lower_is_shut_out() {
        let cfg = Config { queues: 1, rate_bps: 1_000_000, queue_rate_bps: None, queue_packets: 1 };
        let rules = [Rule { lo: 0, hi: 0, pr: 1, pl: 1 }, Rule { lo: 0, hi: 0, pr: 5, pl: 1 }];
        // low's first packet leaves at once (8 ms on the path), its second fills the queue; high finds
        // it full (dropped) but claims it; low is then shut out until the queue empties
        let (deps, drops) = run(cfg, &rules, &[(0, 0, 1000), (1, 0, 1000), (2, 1, 1000), (3, 0, 1000), (16_000_001, 0, 1000)]);
        assert_eq!(deps.iter().map(|d| d.0).collect::<Vec<_>>(), vec![8_000_000, 16_000_000, 24_000_001]);
        assert_eq!(drops, vec![(2, 1, Drop::Full), (3, 0, Drop::NoQueue)]);
    }
}
