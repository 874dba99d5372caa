//! Workload-aware replay (CellReplay, NSDI 2025): a light trace in front of
//! the heavy trace's link, so a burst that finds the radio idle sees the
//! base delay and the delivery offsets a real cell gave a short packet train,
//! not the next opportunity of a trace recorded under saturation.
//!
//! A packet that arrives when the link has been idle (its release would come
//! more than `idle` after the last one's) starts a burst: it is released
//! after the base delay, interpolated between the light trace's lines around
//! its arrival (the trace loops). The packets after it in the burst take the
//! train's delivery offsets (each carries `pdo_bytes`; an offset that passed
//! before a packet arrived is not used by it) and bypass the heavy queue; a
//! packet past the train's last offset joins the heavy queue instead, at its
//! arrival plus the base delay or the train's last offset, whichever is
//! later. A bypassing packet leaves at its release when the heavy queue is
//! idle, otherwise it joins the queue then. Releases never go backwards; a
//! per-size offset (100-byte bins) moves a release when that keeps the order.
//!
//! Pure like [`crate::link`]: the caller passes `now` and asks
//! [`Burst::next_event`] when to call again. `mahimahi-link/reference/
//! burst_model.py` is the independent model it is checked against.

use crate::link::{Link, Sink, MS};
use crate::queue::Queued;
use crate::trace::TraceError;
use crate::Nanos;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

/// One light-trace line: at `t_ms`, a one-way base delay and the delivery
/// offsets of a train's packets from its first one (the first is 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LightLine {
    pub t_ms: u64,
    pub base_ms: u64,
    pub pdos_ms: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LightTrace {
    pub source: String,
    pub lines: Vec<LightLine>,
}

fn read_text(path: &Path, what: &str) -> Result<String, TraceError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| TraceError { file: file.clone(), line: None, message: format!("cannot read {what}: {e}") })?;
    String::from_utf8(bytes).map_err(|_| TraceError { file, line: None, message: format!("{what} is not text") })
}

impl LightTrace {
    pub fn load(path: &Path) -> Result<LightTrace, TraceError> {
        LightTrace::parse(&path.display().to_string(), &read_text(path, "light trace")?)
    }

    /// CellReplay's format: `TIME_MS BASE_DELAY_MS PDO_MS...` per line, times
    /// increasing, offsets non-decreasing from 0; `#` lines are comments.
    pub fn parse(name: &str, text: &str) -> Result<LightTrace, TraceError> {
        const WANT: &str = "expected \"TIME_MS BASE_DELAY_MS PDO_MS...\" (integers; the first delivery offset 0)";
        let err = |line: Option<usize>, message: String| TraceError { file: name.to_string(), line, message };
        let mut lines: Vec<LightLine> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let s = raw.trim();
            if s.starts_with('#') {
                continue;
            }
            if s.is_empty() {
                return Err(err(Some(n), format!("empty line ({WANT})")));
            }
            let mut f = Vec::new();
            for w in s.split_whitespace() {
                let digits = !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
                f.push(w.parse::<u64>().ok().filter(|_| digits).ok_or_else(|| err(Some(n), format!("not a non-negative integer: {w:?} ({WANT})")))?);
            }
            if f.len() < 3 {
                return Err(err(Some(n), format!("{} field(s) ({WANT})", f.len())));
            }
            let line = LightLine { t_ms: f[0], base_ms: f[1], pdos_ms: f[2..].to_vec() };
            if line.pdos_ms[0] != 0 {
                return Err(err(Some(n), format!("the first delivery offset is {} ms: offsets count from the train's first packet, which is 0", line.pdos_ms[0])));
            }
            if line.pdos_ms.windows(2).any(|w| w[1] < w[0]) {
                return Err(err(Some(n), "delivery offsets must be non-decreasing".into()));
            }
            if let Some(prev) = lines.last() {
                if line.t_ms <= prev.t_ms {
                    return Err(err(Some(n), format!("time {} ms is not after the previous line's {} ms (times must increase)", line.t_ms, prev.t_ms)));
                }
            }
            lines.push(line);
        }
        if lines.len() < 3 {
            return Err(err(None, format!("{} line(s): a light trace needs at least three (the last one ends the loop)", lines.len())));
        }
        Ok(LightTrace { source: name.to_string(), lines })
    }

    /// The loop's length: the last line's time from the first's.
    pub fn period_ns(&self) -> Nanos {
        (self.lines[self.lines.len() - 1].t_ms - self.lines[0].t_ms) * MS
    }

    /// The base delay at `now` (ns, interpolated between the lines around it)
    /// and the index of the line whose train applies.
    pub fn base_delay(&self, now: Nanos) -> (Nanos, usize) {
        let t0 = self.lines[0].t_ms * MS;
        let pos = now % self.period_ns() + t0;
        // the last line before pos, never the last line itself
        let i = self.lines[..self.lines.len() - 1].partition_point(|l| l.t_ms * MS <= pos) - 1;
        let (a, b) = (&self.lines[i], &self.lines[i + 1]);
        let span = ((b.t_ms - a.t_ms) * MS) as i128;
        let slope = (pos - a.t_ms * MS) as i128 * (b.base_ms as i128 - a.base_ms as i128) * MS as i128;
        (((a.base_ms * MS) as i128 + slope.div_euclid(span)) as Nanos, i)
    }
}

/// A delay offset per packet size: CellReplay's `PSIZE OFFSET_MS` lines for
/// 100, 200, ... bytes, interpolated between bins (ns here, not whole ms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeOffsets {
    pub ns: Vec<i64>,
}

impl SizeOffsets {
    pub fn load(path: &Path) -> Result<SizeOffsets, TraceError> {
        SizeOffsets::parse(&path.display().to_string(), &read_text(path, "size offset file")?)
    }

    pub fn parse(name: &str, text: &str) -> Result<SizeOffsets, TraceError> {
        let err = |line: Option<usize>, message: String| TraceError { file: name.to_string(), line, message };
        let mut ns = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let s = raw.trim();
            if s.is_empty() || s.starts_with('#') {
                continue;
            }
            let want = (ns.len() + 1) * 100;
            let f: Vec<&str> = s.split_whitespace().collect();
            let (Some(size), Some(off), 2) = (f.first().and_then(|w| w.parse::<usize>().ok()), f.get(1).and_then(|w| w.parse::<f64>().ok()), f.len()) else {
                return Err(err(Some(i + 1), format!("expected \"PACKET_SIZE OFFSET_MS\" (e.g. \"{want} 0.4\")")));
            };
            if size != want || !off.is_finite() {
                return Err(err(Some(i + 1), format!("sizes go 100, 200, ... in steps of 100 and offsets are numbers: expected size {want} here, got {size}")));
            }
            ns.push((off * MS as f64).round() as i64);
        }
        if ns.is_empty() {
            return Err(err(None, "no offsets (expected \"100 OFFSET_MS\", \"200 OFFSET_MS\", ...)".into()));
        }
        Ok(SizeOffsets { ns })
    }

    /// The offset of a packet of charged `size`.
    pub fn of(&self, size: u32) -> i64 {
        let (idx, rem) = ((size / 100) as i64 - 1, (size % 100) as i64);
        if idx < 0 {
            self.ns[0]
        } else if idx as usize >= self.ns.len() - 1 {
            self.ns[self.ns.len() - 1]
        } else {
            let (a, b) = (self.ns[idx as usize], self.ns[idx as usize + 1]);
            a + (rem * (b - a)).div_euclid(100)
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct BurstOptions {
    /// Bytes one train offset carries (the recorded train's packets, charged as the link charges).
    pub pdo_bytes: u32,
    /// How long without packets ends a burst (from when: see `active_ns`).
    pub idle_ns: Nanos,
    /// None: CellReplay's rule, a packet whose release would come `idle` after the last one's starts a
    /// new burst, and a train offset counts as passed once a packet arrives later than it after the
    /// burst's first arrival. Some(floor): the link stays active while it holds packets or released
    /// one less than `idle` ago, as a radio keeps granting while the UE's buffer has data; a packet
    /// that comes then takes the next offset whose release has not passed, and leaves no sooner than
    /// `floor` after it came (the stack's latency on an active link: a grant's k2 on an uplink, the
    /// pipeline on a downlink). The difference is a packet a TCP ACK clocks out mid-burst: CellReplay
    /// gives it a whole base delay again; srsRAN sent it with the burst's grants (a 14-16 ms round
    /// trip where the base delays add up to ~43 ms; experiments/srsran-vs-trace).
    pub active_ns: Option<Nanos>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BurstCounters {
    pub arrived_packets: u64,
    pub arrived_bytes: u64,
    /// Packets that left at their release, past an idle heavy queue.
    pub bypassed_packets: u64,
    pub bypassed_bytes: u64,
    pub bursts: u64,
}

struct Held<P> {
    release: Nanos,
    bypass: bool,
    size: u32,
    ingress: Nanos,
    payload: P,
}

pub struct Burst<P> {
    light: Arc<LightTrace>,
    offsets: Option<Arc<SizeOffsets>>,
    opts: BurstOptions,
    held: VecDeque<Held<P>>,
    /// The current burst: its first packet's arrival, base delay and train line.
    start: Nanos,
    base: Option<Nanos>,
    line: usize,
    /// The train offset the last packet took, and the bytes left in it.
    idx: usize,
    cap: u32,
    /// The last release from the light trace (before the size offset), and the last final one.
    last: Nanos,
    end: Nanos,
    /// Where the light trace's current run began (its last restart).
    origin: Nanos,
    pub counters: BurstCounters,
}

impl<P> Burst<P> {
    pub fn new(light: Arc<LightTrace>, offsets: Option<Arc<SizeOffsets>>, opts: BurstOptions) -> Self {
        debug_assert!(opts.pdo_bytes > 0);
        Burst { light, offsets, opts, held: VecDeque::new(), start: 0, base: None, line: 0, idx: 0, cap: 0, last: 0, end: 0, origin: 0, counters: BurstCounters::default() }
    }

    pub fn light(&self) -> &LightTrace {
        &self.light
    }

    /// Packets held in the stage (not yet released).
    pub fn held_packets(&self) -> usize {
        self.held.len()
    }

    /// A packet of charged `size` arriving at `now`: its release time and whether it may bypass the heavy queue.
    fn release_of(&mut self, now: Nanos, size: u32) -> (Nanos, bool) {
        let pdo = |l: &LightTrace, line: usize, k: usize| l.lines[line].pdos_ms[k] * MS;
        let active = self.opts.active_ns;
        let new_burst = match (self.base, active) {
            (None, _) => true,
            (Some(_), Some(_)) => now > self.last + self.opts.idle_ns,
            (Some(base), None) => now + base > self.last + self.opts.idle_ns,
        };
        if new_burst {
            let (base, line) = self.light.base_delay(now.saturating_sub(self.origin));
            (self.start, self.base, self.line, self.idx, self.cap) = (now, Some(base), line, 0, self.opts.pdo_bytes);
            self.counters.bursts += 1;
        }
        let base = self.base.expect("a burst");
        let train = self.light.lines[self.line].pdos_ms.len();
        // an offset passed: CellReplay, once the packet came later than it after the first arrival; active, once its release passed
        let elapsed = (now - self.start).saturating_sub(if active.is_some() { base } else { 0 });
        while self.idx < train && elapsed > pdo(&self.light, self.line, self.idx) {
            self.idx += 1;
            self.cap = self.opts.pdo_bytes;
        }
        if self.cap >= size {
            self.cap -= size;
        } else {
            // whole offsets of its own: from this one if nothing used it yet, else from the next
            let need = size.div_ceil(self.opts.pdo_bytes);
            let fresh = self.cap == self.opts.pdo_bytes;
            self.idx += need as usize - usize::from(fresh);
            self.cap = need * self.opts.pdo_bytes - size;
        }
        let (mut release, mut bypass) = if self.idx < train {
            (self.start + base + pdo(&self.light, self.line, self.idx), true)
        } else if active.is_some() {
            // past the train: the heavy queue, once the burst's grants have come
            ((self.start + base + pdo(&self.light, self.line, train - 1)).max(now), false)
        } else {
            (now + base.max(pdo(&self.light, self.line, train - 1)), false)
        };
        if let (Some(floor), false) = (active, new_burst) {
            release = release.max(now + floor);
        }
        self.last = release;
        if let Some(off) = &self.offsets {
            let moved = release as i64 + off.of(size);
            if moved >= self.end as i64 {
                release = moved.max(0) as Nanos;
            }
        }
        if let (Some(floor), false) = (active, new_burst) {
            release = release.max(now + floor); // a small packet's offset does not take it below an active link's latency
        }
        release = release.max(now);
        if release < self.end {
            (release, bypass) = (self.end, false);
        }
        self.end = release;
        (release, bypass)
    }

    /// A packet of charged `size` reaches the link at `now`.
    pub fn enqueue<S: Sink<P>>(&mut self, size: u32, payload: P, now: Nanos, link: &mut Link<P>, sink: &mut S) {
        self.advance_to(now, link, sink);
        sink.arrival(now, size);
        self.counters.arrived_packets += 1;
        self.counters.arrived_bytes += size as u64;
        let (release, bypass) = self.release_of(now, size);
        self.held.push_back(Held { release, bypass, size, ingress: now, payload });
    }

    /// Run the stage and the heavy link up to and including `now`: each held
    /// packet at its release, the link's opportunities up to then first.
    pub fn advance_to<S: Sink<P>>(&mut self, now: Nanos, link: &mut Link<P>, sink: &mut S) {
        while self.held.front().is_some_and(|h| h.release <= now) {
            let h = self.held.pop_front().expect("a held packet");
            link.advance_to(h.release, sink);
            if h.bypass && link.idle() && !link.dark_at(h.release) {
                self.counters.bypassed_packets += 1;
                self.counters.bypassed_bytes += h.size as u64;
                sink.departure(h.release, Queued { size: h.size, arrival: h.release, ingress: h.ingress, payload: h.payload });
            } else {
                link.enqueue_held(h.size, h.payload, h.ingress, h.release, sink);
            }
        }
        link.advance_to(now, sink);
    }

    /// Start the light trace over from its first line at `at` (with the heavy
    /// trace's restart); a burst under way and held packets keep their times.
    pub fn restart_trace(&mut self, at: Nanos) {
        self.origin = at;
    }

    /// The next held packet's release.
    pub fn next_release(&self) -> Option<Nanos> {
        self.held.front().map(|h| h.release)
    }

    /// When the caller must call `advance_to` again (None: only on arrival).
    pub fn next_event(&self, link: &Link<P>) -> Option<Nanos> {
        match (self.held.front().map(|h| h.release), link.next_event()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::QueueConfig;
    use crate::trace::Trace;
    use crate::link::LinkOptions;

    #[derive(Default)]
    struct Rec {
        deps: Vec<(Nanos, u32)>,
    }
    impl Sink<u32> for Rec {
        fn departure(&mut self, t: Nanos, p: Queued<u32>) {
            self.deps.push((t, p.payload));
        }
    }

    fn setup(light: &str, heavy: &str, idle_ms: u64) -> (Burst<u32>, Link<u32>) {
        let l = Arc::new(LightTrace::parse("light", light).unwrap());
        let h = Arc::new(Trace::parse("heavy", heavy).unwrap());
        (
            Burst::new(l, None, BurstOptions { pdo_bytes: 1504, idle_ns: idle_ms * MS, active_ns: None }),
            Link::new(h, QueueConfig::default(), LinkOptions { spread: false, repeat: true }, 1),
        )
    }

    #[test]
    fn the_base_delay_is_interpolated_and_loops() {
        let l = LightTrace::parse("l", "0 10 0\n100 20 0\n200 20 0\n").unwrap();
        assert_eq!(l.base_delay(0), (10 * MS, 0));
        assert_eq!(l.base_delay(50 * MS), (15 * MS, 0));
        assert_eq!(l.base_delay(150 * MS), (20 * MS, 1));
        assert_eq!(l.base_delay(250 * MS), (15 * MS, 0), "the loop is 200 ms");
    }

    #[test]
    fn a_burst_takes_the_base_delay_then_the_train_then_the_heavy_queue() {
        // base 30 ms, train offsets 0, 4, 8 ms; heavy: an opportunity every 10 ms
        let (mut b, mut link) = setup("0 30 0 4 8\n1000 30 0 4 8\n2000 30 0 4 8\n", "10\n", 0);
        let mut s = Rec::default();
        for id in 0..4 {
            b.enqueue(1504, id, 100 * MS, &mut link, &mut s);
        }
        b.advance_to(300 * MS, &mut link, &mut s);
        // 130, 134, 138 ms past the idle heavy queue; the fourth joins it at 100 + max(30, 8) = 130 ms... but
        // releases never go backwards: at 138 ms, then the next heavy opportunity after it, 140 ms
        assert_eq!(s.deps, vec![(130 * MS, 0), (134 * MS, 1), (138 * MS, 2), (140 * MS, 3)]);
        assert_eq!(b.counters.bypassed_packets, 3);
        assert_eq!(b.counters.bursts, 1);
        // idle long enough: a new burst, the base delay again
        b.enqueue(100, 9, 500 * MS, &mut link, &mut s);
        b.advance_to(600 * MS, &mut link, &mut s);
        assert_eq!(s.deps.last(), Some(&(530 * MS, 9)));
        assert_eq!(b.counters.bursts, 2);
    }

    #[test]
    fn small_packets_share_an_offset_and_a_passed_offset_is_not_used() {
        // idle 5 ms: the packet at 7 ms (release 17 ms, the last 15 ms) belongs to the same burst
        let (mut b, mut link) = setup("0 10 0 5 6 20\n1000 10 0 5 6 20\n2000 10 0 5 6 20\n", "1\n", 5);
        let mut s = Rec::default();
        b.enqueue(500, 0, 0, &mut link, &mut s); // offset 0 (1004 bytes left)
        b.enqueue(500, 1, 0, &mut link, &mut s); // offset 0 too
        b.enqueue(1000, 2, 0, &mut link, &mut s); // does not fit: offset 5 ms
        b.enqueue(100, 3, 7 * MS, &mut link, &mut s); // 5 and 6 ms passed: offset 20
        b.advance_to(100 * MS, &mut link, &mut s);
        assert_eq!(s.deps, vec![(10 * MS, 0), (10 * MS, 1), (15 * MS, 2), (30 * MS, 3)]);
    }

    #[test]
    fn a_packet_larger_than_an_offset_takes_whole_ones_from_an_unused_one() {
        // CellReplay's 1400-byte offsets, full 1504-byte packets: each takes two offsets
        let l = Arc::new(LightTrace::parse("l", "0 10 0 1 2 3 4 5\n1000 10 0 1 2 3 4 5\n2000 10 0\n").unwrap());
        let mut b = Burst::new(l, None, BurstOptions { pdo_bytes: 1400, idle_ns: MS, active_ns: None });
        let mut link = Link::new(Arc::new(Trace::parse("h", "1\n").unwrap()), QueueConfig::default(), LinkOptions { spread: false, repeat: true }, 1);
        let mut s = Rec::default();
        for id in 0..3 {
            b.enqueue(1504, id, 0, &mut link, &mut s);
        }
        b.advance_to(100 * MS, &mut link, &mut s);
        // offsets 0-1, then 2-3 (the second's 1296 bytes left in offset 1 are too few), then 4-5
        assert_eq!(s.deps, vec![(11 * MS, 0), (13 * MS, 1), (15 * MS, 2)]);
    }

    #[test]
    fn bad_light_traces_name_the_line() {
        let e = LightTrace::parse("f", "0 10 0\n5 10 3\n9 1 0\n").unwrap_err();
        assert_eq!((e.line, e.message.contains("first delivery offset")), (Some(2), true));
        let e = LightTrace::parse("f", "0 10 0\n0 10 0\n9 1 0\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        let e = LightTrace::parse("f", "0 10\n").unwrap_err();
        assert_eq!(e.line, Some(1));
        let e = LightTrace::parse("f", "0 10 0\n1 x 0\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(LightTrace::parse("f", "0 10 0\n1 10 0\n").unwrap_err().message.contains("three"));
        let e = SizeOffsets::parse("o", "100 0.5\n300 1\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        let o = SizeOffsets::parse("o", "100 0\n200 1\n300 2\n").unwrap();
        assert_eq!((o.of(50), o.of(150), o.of(300), o.of(1500)), (0, MS as i64 / 2, 2 * MS as i64, 2 * MS as i64));
    }
}
