//! The pure emulation core of one link direction: a trace-driven server in
//! front of a packet queue, exactly as mm-link's `LinkQueue` behaves.
//!
//! No clock reads and no I/O: the caller passes `now` (nanoseconds since the
//! link was created) to [`Link::enqueue`] and [`Link::advance_to`] and asks
//! [`Link::next_event`] when to call again. Everything observable (arrivals,
//! opportunities, departures, drops) goes to a [`Sink`], which is where the
//! forwarding loop sends packets and the log writer writes mm-link lines.
//!
//! Semantics kept from mm-link: every opportunity carries 1504 bytes; a packet
//! is charged its IP length + 4; a packet's remaining bytes carry over to later
//! opportunities; several small packets share one; leftover bytes are lost; an
//! opportunity at the instant a packet arrives (or earlier) is never used by
//! it; the trace loops with period = last timestamp unless `once`.
//!
//! One deliberate difference, on by default and switchable off: opportunities
//! that share a millisecond are spread evenly across it (`spread`), instead of
//! all leaving at the start of the millisecond. Per-millisecond capacity is
//! identical; the latency added at high rates drops from ~0.5 ms to ~1/n ms.

use crate::queue::{PacketQueue, QueueConfig, Queued};
use crate::trace::Trace;
use crate::{Nanos, OPPORTUNITY_BYTES};
use std::sync::Arc;

pub const MS: u64 = 1_000_000;

/// Receives what happens on a link. Only `departure` is mandatory.
pub trait Sink<P> {
    fn departure(&mut self, t: Nanos, packet: Queued<P>);
    fn arrival(&mut self, _t: Nanos, _size: u32) {}
    fn opportunity(&mut self, _t: Nanos) {}
    /// `n` unused opportunities of one millisecond, the first at `t` (an idle
    /// link reports them a millisecond at a time, not one by one).
    fn idle_opportunities(&mut self, t: Nanos, n: u32) {
        for _ in 0..n {
            self.opportunity(t);
        }
    }
    /// Packets dropped at `t` (by the queue limit or AQM), in drop order.
    fn drop(&mut self, _t: Nanos, _dropped: &[Queued<P>]) {}
    /// When false, idle opportunities are skipped arithmetically, not one by one.
    fn wants_opportunities(&self) -> bool {
        false
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub arrived_packets: u64,
    pub arrived_bytes: u64,
    pub departed_packets: u64,
    pub departed_bytes: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    pub opportunities: u64,
    /// Opportunities a timeline's outage took away (neither delivered nor logged).
    pub dark_opportunities: u64,
}

#[derive(Clone, Copy, Debug)]
pub struct LinkOptions {
    pub spread: bool,
    pub repeat: bool,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions { spread: true, repeat: true }
    }
}

pub struct Link<P> {
    trace: Arc<Trace>,
    /// Opportunities before each group, for arithmetic skipping.
    cum: Vec<u64>,
    opts: LinkOptions,
    group: usize,
    k: u32,
    base: Nanos,
    finished: bool,
    queue: PacketQueue<P>,
    in_transit: Option<Queued<P>>,
    bytes_left: u32,
    pub counters: Counters,
    drops: Vec<Queued<P>>,
    /// Latest time the link was run to; earlier arrivals are taken as now.
    now: Nanos,
    /// In a shared cell: this link's resource blocks of the cell's total; each
    /// opportunity carries that share of its bytes (`frac` keeps the remainder,
    /// in 1/total bytes, so no byte is lost to rounding). Alone: all of them.
    share: (u32, u32),
    frac: u64,
    /// Where the trace's current run began (the last restart): a phase-aligned
    /// trace switch places the new trace as if it had run since then.
    origin: Nanos,
    /// A timeline's outage: no opportunity before this time carries anything.
    dark_until: Nanos,
}

impl<P> Link<P> {
    pub fn new(trace: Arc<Trace>, queue: QueueConfig, opts: LinkOptions, seed: u64) -> Self {
        let mut cum = Vec::with_capacity(trace.groups.len());
        let mut acc = 0u64;
        for g in &trace.groups {
            cum.push(acc);
            acc += g.count as u64;
        }
        Link {
            trace,
            cum,
            opts,
            group: 0,
            k: 0,
            base: 0,
            finished: false,
            queue: PacketQueue::new(queue, seed),
            in_transit: None,
            bytes_left: 0,
            counters: Counters::default(),
            drops: Vec::new(),
            now: 0,
            share: (1, 1),
            frac: 0,
            origin: 0,
            dark_until: 0,
        }
    }

    fn set_groups(&mut self, trace: Arc<Trace>) {
        self.cum.clear();
        let mut acc = 0u64;
        for g in &trace.groups {
            self.cum.push(acc);
            acc += g.count as u64;
        }
        self.trace = trace;
    }

    /// Give this link `blocks` of the cell's `total` resource blocks from now
    /// on (a shared cell's scheduler calls this at every slot).
    pub fn set_share(&mut self, blocks: u32, total: u32) {
        debug_assert!(total > 0 && blocks <= total);
        self.share = (blocks, total);
    }

    fn opportunity_bytes(&mut self) -> u32 {
        let (b, n) = self.share;
        if b == n {
            return OPPORTUNITY_BYTES;
        }
        let num = OPPORTUNITY_BYTES as u64 * b as u64 + self.frac;
        self.frac = num % n as u64;
        (num / n as u64) as u32
    }

    pub fn trace(&self) -> &Trace {
        &self.trace
    }
    pub fn trace_arc(&self) -> &Arc<Trace> {
        &self.trace
    }
    pub fn queue_config(&self) -> &QueueConfig {
        self.queue.config()
    }
    /// Packets waiting, counting the one partly sent.
    pub fn queued_packets(&self) -> u64 {
        self.queue.packets() + self.in_transit.is_some() as u64
    }
    pub fn queued_bytes(&self) -> u64 {
        self.queue.bytes() + self.bytes_left as u64
    }
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Offset of opportunity `k` of `group` from the start of its loop.
    ///
    /// With `spread`, the n opportunities of a millisecond sit at k/n ms. When
    /// the trace starts at 0 ms, its last millisecond (= the period) and the
    /// next loop's first one are the same instant; both groups are then spread
    /// together across that millisecond, so times never go backwards.
    fn offset_in_period(&self, group: usize, k: u32) -> Nanos {
        let groups = &self.trace.groups;
        let g = groups[group];
        let mut t = g.ms * MS;
        if !self.opts.spread {
            return t;
        }
        let last = groups.len() - 1;
        let merged = groups.len() > 1 && groups[0].ms == 0;
        if merged && (group == last || group == 0) {
            let n = (groups[0].count + groups[last].count) as u64;
            let slot = if group == 0 { groups[last].count + k } else { k };
            t += slot as u64 * MS / n;
        } else if g.count > 1 {
            t += k as u64 * MS / g.count as u64;
        }
        t
    }

    /// Time of the next delivery opportunity, or None after a `once` trace ended.
    pub fn next_opportunity(&self) -> Option<Nanos> {
        if self.finished {
            None
        } else {
            Some(self.base + self.offset_in_period(self.group, self.k))
        }
    }

    /// When the caller must call `advance_to` again (None: only on arrival).
    pub fn next_event(&self) -> Option<Nanos> {
        if self.queue.is_empty() && self.in_transit.is_none() {
            None
        } else {
            // in an outage, nothing happens before it ends
            self.next_opportunity().map(|t| if t < self.dark_until { self.dark_until } else { t })
        }
    }

    fn step(&mut self) {
        self.k += 1;
        if self.k == self.trace.groups[self.group].count {
            self.k = 0;
            self.group += 1;
            if self.group == self.trace.groups.len() {
                self.group = 0;
                if self.opts.repeat {
                    self.base += self.trace.period_ms() * MS;
                } else {
                    self.finished = true;
                }
            }
        }
    }

    /// First k in `group` whose offset is > x.
    fn first_k_after(&self, group: usize, x: Nanos) -> Option<u32> {
        let n = self.trace.groups[group].count;
        let (mut lo, mut hi) = (0u32, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.offset_in_period(group, mid) > x {
                hi = mid
            } else {
                lo = mid + 1
            }
        }
        (lo < n).then_some(lo)
    }

    /// First (group, k) in one loop whose offset is > x, or None if none is.
    fn first_after(&self, x: Nanos) -> Option<(usize, u32)> {
        let groups = &self.trace.groups;
        let gi = groups.partition_point(|g| g.ms * MS <= x);
        // Only the group just before `gi` can reach past x (offsets are < ms + 1 ms).
        if gi > 0 {
            if let Some(k) = self.first_k_after(gi - 1, x) {
                return Some((gi - 1, k));
            }
        }
        (gi < groups.len()).then_some((gi, 0))
    }

    /// Burn every opportunity up to `now` without looking at each one; only
    /// valid while nothing is queued and nobody wants to see opportunities.
    fn skip_idle(&mut self, now: Nanos) {
        let skipped = self.skip_to(now);
        self.counters.opportunities += skipped;
    }

    /// Move past every opportunity up to `now` arithmetically; how many there were.
    fn skip_to(&mut self, now: Nanos) -> u64 {
        let Some(t0) = self.next_opportunity() else { return 0 };
        if t0 > now {
            return 0;
        }
        let period = self.trace.period_ms() * MS;
        let per = self.trace.opportunities;
        let cur = self.cum[self.group] + self.k as u64;
        let r = now - self.base;
        let j0 = r / period;
        let last = self.trace.groups.len() - 1;
        // The previous loop's last millisecond can reach into this loop.
        let tail = if j0 >= 1 { self.first_k_after(last, r - (j0 - 1) * period).map(|k| (j0 - 1, last, k)) } else { None };
        let (j, g, k) = match tail {
            Some(pos) => pos,
            None => match self.first_after(r - j0 * period) {
                Some((g, k)) => (j0, g, k),
                None => (j0 + 1, 0, 0),
            },
        };
        if !self.opts.repeat && j >= 1 {
            self.finished = true;
            return per - cur;
        }
        let target = self.cum[g] + k as u64;
        let skipped = (j * per + target).saturating_sub(cur);
        if skipped == 0 {
            return 0;
        }
        self.base += j * period;
        self.group = g;
        self.k = k;
        skipped
    }

    /// Pass every opportunity up to `now` to the sink, a trace millisecond
    /// (group) at a time: a logged multi-Gbit/s link that idles for 50 ms has
    /// tens of thousands of them, and a packet arriving meanwhile must not
    /// wait while they are reported one by one.
    fn report_idle<S: Sink<P>>(&mut self, now: Nanos, sink: &mut S) {
        while let Some(t) = self.next_opportunity() {
            if t > now {
                return;
            }
            let count = self.trace.groups[self.group].count;
            let end = self.first_k_after(self.group, now - self.base).unwrap_or(count);
            let n = end - self.k;
            sink.idle_opportunities(t, n);
            self.counters.opportunities += n as u64;
            self.k = end - 1;
            self.step();
        }
    }

    /// Start the trace over from its first opportunity, as if the link had
    /// started at `at` (or at the latest time it was run to, if later). The
    /// caller runs the link to that time first; queued packets stay queued.
    /// The first opportunity comes strictly after it: a packet that arrived
    /// at that very instant is not sent at its own arrival.
    pub fn restart_trace(&mut self, at: Nanos) {
        self.base = at.max(self.now) + 1;
        self.origin = self.base;
        self.group = 0;
        self.k = 0;
        self.finished = false;
        self.dark_until = 0;
    }

    /// From the latest time the link was run to, serve `trace` instead. Restarted:
    /// its first opportunity comes strictly after that time, as with
    /// [`Link::restart_trace`]. Phase-aligned: it is where it would be had it run
    /// since the trace's last (re)start, so switching between recordings of one
    /// drive keeps their common clock. Queued packets and a packet partly sent stay.
    pub fn switch_trace(&mut self, trace: Arc<Trace>, aligned: bool) {
        self.set_groups(trace);
        self.group = 0;
        self.k = 0;
        self.finished = false;
        if aligned {
            self.base = self.origin;
            self.skip_to(self.now);
        } else {
            self.base = self.now + 1;
        }
    }

    /// From the latest time the link was run to until `until`, no opportunity
    /// carries anything (a radio outage); `flush` drops what is queued then
    /// (the packet partly sent too), otherwise it waits for the link to return.
    pub fn outage<S: Sink<P>>(&mut self, until: Nanos, flush: bool, sink: &mut S) {
        self.dark_until = self.dark_until.max(until);
        if flush {
            let t = self.now;
            if let Some(p) = self.in_transit.take() {
                self.bytes_left = 0;
                self.drops.push(p);
            }
            self.queue.drain(&mut self.drops);
            self.flush_drops(t, sink);
        }
    }

    /// Whether an outage holds at `t`.
    pub fn dark_at(&self, t: Nanos) -> bool {
        t < self.dark_until
    }

    /// Run the link up to and including `now`.
    pub fn advance_to<S: Sink<P>>(&mut self, now: Nanos, sink: &mut S) {
        self.now = self.now.max(now);
        loop {
            if let Some(t) = self.next_opportunity().filter(|&t| t < self.dark_until && t <= now) {
                let skipped = self.skip_to(now.min(self.dark_until - 1));
                debug_assert!(skipped > 0, "an opportunity at {t} in an outage was not skipped");
                self.counters.dark_opportunities += skipped;
                continue;
            }
            if self.queue.is_empty() && self.in_transit.is_none() {
                if sink.wants_opportunities() {
                    self.report_idle(now, sink);
                } else {
                    self.skip_idle(now);
                }
                return;
            }
            let Some(t) = self.next_opportunity() else { return };
            if t > now {
                return;
            }
            sink.opportunity(t);
            self.counters.opportunities += 1;
            self.step();
            let mut left = self.opportunity_bytes();
            while left > 0 {
                if self.bytes_left == 0 {
                    let next = self.queue.dequeue(t, &mut self.drops);
                    self.flush_drops(t, sink);
                    match next {
                        None => break,
                        Some(p) => {
                            debug_assert!(p.arrival < t);
                            self.bytes_left = p.size;
                            self.in_transit = Some(p);
                        }
                    }
                }
                let amount = left.min(self.bytes_left);
                left -= amount;
                self.bytes_left -= amount;
                if self.bytes_left == 0 {
                    let p = self.in_transit.take().expect("packet in transit");
                    self.counters.departed_packets += 1;
                    self.counters.departed_bytes += p.size as u64;
                    sink.departure(t, p);
                }
            }
        }
    }

    fn flush_drops<S: Sink<P>>(&mut self, t: Nanos, sink: &mut S) {
        if self.drops.is_empty() {
            return;
        }
        self.counters.dropped_packets += self.drops.len() as u64;
        self.counters.dropped_bytes += self.drops.iter().map(|p| p.size as u64).sum::<u64>();
        sink.drop(t, &self.drops);
        self.drops.clear();
    }

    /// A packet of charged `size` arrives at `now`.
    /// An arrival earlier than a time the link already ran to counts as then.
    pub fn enqueue<S: Sink<P>>(&mut self, size: u32, payload: P, now: Nanos, sink: &mut S) {
        let now = now.max(self.now);
        self.advance_to(now, sink);
        sink.arrival(now, size);
        self.join(size, payload, now, now, sink);
    }

    /// A packet that reached the link at `ingress` and was held by a stage in
    /// front of the queue (workload-aware replay) joins the queue at `now`;
    /// its arrival was reported to the sink at `ingress` already.
    pub fn enqueue_held<S: Sink<P>>(&mut self, size: u32, payload: P, ingress: Nanos, now: Nanos, sink: &mut S) {
        let now = now.max(self.now);
        self.advance_to(now, sink);
        self.join(size, payload, ingress, now, sink);
    }

    fn join<S: Sink<P>>(&mut self, size: u32, payload: P, ingress: Nanos, now: Nanos, sink: &mut S) {
        self.counters.arrived_packets += 1;
        self.counters.arrived_bytes += size as u64;
        self.queue.enqueue(Queued { size, arrival: now, ingress, payload }, now, &mut self.drops);
        self.flush_drops(now, sink);
    }

    /// Nothing queued and nothing partly sent.
    pub fn idle(&self) -> bool {
        self.queue.is_empty() && self.in_transit.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueueConfig;

    #[derive(Default)]
    struct Rec {
        deps: Vec<(Nanos, u32)>,
        opps: bool,
        opp_ms: Vec<u64>,
        drops: Vec<(Nanos, u32)>,
    }
    impl Sink<u32> for Rec {
        fn departure(&mut self, t: Nanos, p: Queued<u32>) {
            self.deps.push((t, p.payload));
        }
        fn opportunity(&mut self, t: Nanos) {
            self.opp_ms.push(t / MS);
        }
        fn wants_opportunities(&self) -> bool {
            self.opps
        }
        fn drop(&mut self, t: Nanos, dropped: &[Queued<u32>]) {
            self.drops.extend(dropped.iter().map(|p| (t, p.payload)));
        }
    }

    fn link(trace: &str, spread: bool) -> Link<u32> {
        let t = Arc::new(Trace::parse("t", trace).unwrap());
        Link::new(t, QueueConfig::default(), LinkOptions { spread, repeat: true }, 1)
    }

    #[test]
    fn full_packet_uses_one_opportunity_and_never_the_arrival_instant() {
        let mut l = link("1\n2\n3\n", false);
        let mut s = Rec::default();
        l.enqueue(1504, 0, MS, &mut s); // arrives exactly at the opportunity of 1 ms
        l.advance_to(10 * MS, &mut s);
        assert_eq!(s.deps, vec![(2 * MS, 0)]);
    }

    #[test]
    fn a_restart_starts_the_trace_over_at_its_instant_and_keeps_the_queue() {
        // Opportunities at 1, 5 and 10 ms of a 10 ms loop.
        let mut l = link("1\n5\n10\n", false);
        let mut s = Rec::default();
        l.advance_to(23 * MS, &mut s); // idle, mid-way through the third loop
        l.enqueue(1504, 0, 23 * MS, &mut s);
        l.enqueue(1504, 1, 23 * MS, &mut s);
        l.enqueue(1504, 2, 23 * MS, &mut s);
        l.restart_trace(23 * MS);
        l.advance_to(40 * MS, &mut s);
        // Without the restart: 25, 30 and 31 ms.
        assert_eq!(s.deps, vec![(24 * MS + 1, 0), (28 * MS + 1, 1), (33 * MS + 1, 2)]);
        // A restart asked for before the time the link already ran to is taken at that time.
        l.restart_trace(35 * MS);
        l.enqueue(1504, 3, 40 * MS, &mut s);
        l.advance_to(50 * MS, &mut s);
        assert_eq!(s.deps[3], (41 * MS + 1, 3));
    }

    #[test]
    fn an_outage_carries_nothing_and_keeps_or_flushes_the_queue() {
        // An opportunity every millisecond; an outage from 10 to 20 ms.
        for flush in [false, true] {
            let mut l = link("1\n", false);
            let mut s = Rec { opps: true, ..Rec::default() };
            l.advance_to(10 * MS, &mut s);
            for id in 0..3 {
                l.enqueue(1504, id, 10 * MS, &mut s);
            }
            l.outage(20 * MS, flush, &mut s);
            // the queued packets wait (nothing wakes the caller before the end), then go
            assert_eq!(l.next_event(), if flush { None } else { Some(20 * MS) });
            l.enqueue(1504, 3, 15 * MS, &mut s);
            l.advance_to(30 * MS, &mut s);
            let after: Vec<u64> = s.opp_ms.iter().copied().filter(|&ms| ms > 10).collect();
            assert_eq!(after.first(), Some(&20), "no opportunity is seen in the outage");
            assert_eq!(l.counters.dark_opportunities, 9, "11..=19 ms");
            if flush {
                assert_eq!(s.drops, vec![(10 * MS, 0), (10 * MS, 1), (10 * MS, 2)]);
                assert_eq!(s.deps, vec![(20 * MS, 3)]);
            } else {
                assert!(s.drops.is_empty());
                assert_eq!(s.deps, vec![(20 * MS, 0), (21 * MS, 1), (22 * MS, 2), (23 * MS, 3)]);
            }
        }
        // an idle link skips an outage's opportunities arithmetically, not seen either
        let mut l = link("1\n", false);
        let mut s = Rec::default();
        l.advance_to(5 * MS, &mut s);
        l.outage(1_000 * MS, false, &mut s);
        l.advance_to(2_000 * MS, &mut s);
        assert_eq!(l.counters.dark_opportunities, 994);
        assert_eq!(l.counters.opportunities, 5 + 1_001);
        // a restart ends an outage
        l.outage(3_000 * MS, false, &mut s);
        l.restart_trace(2_000 * MS);
        l.enqueue(1504, 9, 2_000 * MS, &mut s);
        l.advance_to(2_010 * MS, &mut s);
        assert_eq!(s.deps.last(), Some(&(2_001 * MS + 1, 9)));
    }

    #[test]
    fn a_trace_switch_restarts_or_keeps_the_phase_of_the_last_restart() {
        // Old: an opportunity every ms. New: at 3 and 10 ms of a 10 ms loop.
        let new = Arc::new(Trace::parse("n", "3\n10\n").unwrap());
        let mut l = link("1\n", false);
        let mut s = Rec::default();
        l.restart_trace(100 * MS); // the trace's run starts at 100 ms + 1 ns
        l.advance_to(124 * MS, &mut s);
        l.switch_trace(new.clone(), false);
        l.enqueue(1504, 0, 124 * MS, &mut s);
        l.enqueue(1504, 1, 124 * MS, &mut s);
        l.advance_to(200 * MS, &mut s);
        // restarted: 3 and 10 ms after the switch
        assert_eq!(s.deps, vec![(127 * MS + 1, 0), (134 * MS + 1, 1)]);
        let mut l = link("1\n", false);
        let mut s = Rec::default();
        l.restart_trace(100 * MS);
        l.advance_to(124 * MS, &mut s);
        l.switch_trace(new, true);
        l.enqueue(1504, 0, 124 * MS, &mut s);
        l.enqueue(1504, 1, 124 * MS, &mut s);
        l.advance_to(200 * MS, &mut s);
        // aligned: as if it had run since 100 ms: 103, 110, 113, 120, 123, 130 ...
        assert_eq!(s.deps, vec![(130 * MS + 1, 0), (133 * MS + 1, 1)]);
    }

    #[test]
    fn small_packets_share_and_big_ones_carry_over() {
        let mut l = link("1\n2\n3\n", false);
        let mut s = Rec::default();
        l.enqueue(504, 0, 0, &mut s);
        l.enqueue(504, 1, 0, &mut s);
        l.enqueue(1000, 2, 0, &mut s); // 496 in opp 1, 504 in opp 2
        l.enqueue(1504, 3, 0, &mut s); // 1000 left in opp 2, 504 in opp 3
        l.advance_to(10 * MS, &mut s);
        assert_eq!(s.deps, vec![(MS, 0), (MS, 1), (2 * MS, 2), (3 * MS, 3)]);
    }

    #[test]
    fn spread_places_shared_millisecond_opportunities_evenly() {
        let mut l = link("1\n1\n1\n1\n", true);
        let mut s = Rec::default();
        for i in 0..4 {
            l.enqueue(1504, i, 0, &mut s);
        }
        l.advance_to(2 * MS, &mut s);
        let times: Vec<_> = s.deps.iter().map(|d| d.0).collect();
        assert_eq!(times, vec![MS, MS + 250_000, MS + 500_000, MS + 750_000]);
    }

    #[test]
    fn idle_skip_matches_stepping() {
        for spread in [false, true] {
            let mut a = link("0\n0\n3\n3\n3\n7\n", spread);
            let mut b = link("0\n0\n3\n3\n3\n7\n", spread);
            let (mut sa, mut sb) = (Rec::default(), Rec { opps: true, ..Default::default() });
            let mut now = 0;
            for i in 0..200u32 {
                now += (i as u64 * 7919 % 23) * 400_000 + 1;
                a.enqueue(100 + (i * 37 % 1400), i, now, &mut sa);
                b.enqueue(100 + (i * 37 % 1400), i, now, &mut sb);
            }
            a.advance_to(now + 100 * MS, &mut sa);
            b.advance_to(now + 100 * MS, &mut sb);
            assert_eq!(sa.deps, sb.deps);
            assert_eq!(a.counters, b.counters);
        }
    }

    #[test]
    fn idle_opportunities_are_reported_a_millisecond_at_a_time_and_all_of_them() {
        // Every trace line is one opportunity at its millisecond, loop after
        // loop, whether the link was busy or idle and however it was advanced.
        let trace = "0\n0\n3\n3\n3\n7\n9\n9\n";
        let lines = [0u64, 0, 3, 3, 3, 7, 9, 9];
        for spread in [false, true] {
            let mut l = link(trace, spread);
            let mut s = Rec { opps: true, ..Default::default() };
            let mut now = 0;
            for i in 0..300u32 {
                now += (i as u64 * 7919 % 31) * 300_000 + 1;
                if i % 7 == 0 {
                    l.enqueue(1504, i, now, &mut s);
                } else {
                    l.advance_to(now, &mut s);
                }
            }
            // Period 9 ms: the next loop's 0 ms lines fall in the 9th millisecond.
            let want: Vec<u64> = (0..).flat_map(|lp| lines.iter().map(move |ms| lp * 9 + ms)).take_while(|t| t * MS <= now).collect();
            let n = s.opp_ms.len();
            assert_eq!(l.counters.opportunities as usize, n);
            // The last millisecond may be cut at `now` differently (spread times).
            assert!(n.abs_diff(want.len()) <= 2, "{n} vs {}", want.len());
            assert_eq!(s.opp_ms[..n - 2], want[..n - 2], "spread={spread}");
            assert_eq!(s.deps.len(), 300 / 7 + 1);
        }
    }
}
