"""An independent, deliberately simple model of mm-link's link queue.

It exists to check the Rust emulation core: the tests feed both the same
arrivals and traces and require identical departure and drop times. It is
written from the semantics (SPEC-testbed.md, RFC 8289, RFC 8033), not from
the Rust code, and favours plainness over speed: the trace is unrolled into
explicit opportunity times and the simulation walks one event at a time.

Times are integer nanoseconds; trace timestamps are milliseconds.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

MS = 1_000_000
OPPORTUNITY = 1504  # bytes per delivery opportunity (1500 + 4-byte TUN header)


class SplitMix64:
    """The same tiny generator as the emulator, so seeded draws agree."""

    MASK = (1 << 64) - 1

    def __init__(self, seed: int):
        self.state = seed & self.MASK

    def next_u64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def next_f64(self) -> float:
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))


def opportunity_times(trace_ms: list[int], spread: bool, repeat: bool):
    """Yield every opportunity time (ns), looping with period = last timestamp.

    With spread, the n opportunities of one millisecond sit at k/n ms. If the
    trace starts at 0, the last millisecond of a loop and the first of the next
    are the same instant: their opportunities are spread together (last loop's
    first), so that time never runs backwards at the wrap.
    """
    period = trace_ms[-1]
    counts: dict[int, int] = {}
    for t in trace_ms:
        counts[t] = counts.get(t, 0) + 1
    wrap = trace_ms[0] == 0 and len(counts) > 1
    loop = 0
    while True:
        seen: dict[int, int] = {}
        for t in trace_ms:
            k = seen.get(t, 0)
            seen[t] = k + 1
            if not spread:
                offset = t * MS
            elif wrap and t == period:
                offset = t * MS + k * MS // (counts[period] + counts[0])
            elif wrap and t == 0:
                offset = (counts[period] + k) * MS // (counts[period] + counts[0])
            else:
                offset = t * MS + k * MS // counts[t]
            yield loop * period * MS + offset
        if not repeat:
            return
        loop += 1


class ByteDeque(deque):
    """A deque of packets that keeps its total size, for queue limits."""

    def __init__(self):
        super().__init__()
        self.total = 0

    def append(self, p):
        self.total += p.size
        super().append(p)

    def popleft(self):
        p = super().popleft()
        self.total -= p.size
        return p


@dataclass
class Packet:
    id: int
    size: int
    arrival: int


@dataclass
class Queue:
    kind: str = "infinite"
    packets: int | None = None
    bytes: int | None = None
    target_ms: int = 0
    interval_ms: int = 0
    qdelay_ref_ms: int = 0
    max_burst_ms: int = 0
    seed: int = 1
    items: ByteDeque = field(default_factory=ByteDeque)
    # CoDel
    first_above: int = 0
    drop_next: int = 0
    count: int = 0
    lastcount: int = 0
    dropping: bool = False
    # PIE
    drop_prob: float = 0.0
    burst_allowance: int = 0
    qdelay_old: float = 0.0
    current_qdelay: float = 0.0
    dq_count: int | None = None
    dq_tstamp: int = 0
    avg_dq_rate: float = 0.0
    last_update: int = 0
    rng: SplitMix64 | None = None

    def __post_init__(self):
        self.burst_allowance = self.max_burst_ms * MS
        self.rng = SplitMix64(self.seed)

    def size_bytes(self) -> int:
        return self.items.total

    def fits(self, extra_bytes: int, extra_packets: int) -> bool:
        b = self.size_bytes() + extra_bytes
        n = len(self.items) + extra_packets
        return (self.bytes is None or b <= self.bytes) and (self.packets is None or n <= self.packets)

    # --- enqueue -------------------------------------------------------
    def enqueue(self, p: Packet, now: int) -> list[Packet]:
        if self.kind == "infinite":
            self.items.append(p)
            return []
        if self.kind in ("droptail", "codel"):
            if self.fits(p.size, 1):
                self.items.append(p)
                return []
            return [p]
        if self.kind == "drophead":
            self.items.append(p)
            dropped = []
            while not self.fits(0, 0):
                dropped.append(self.items.popleft())
            return dropped
        if self.kind == "pie":
            self.pie_update(now)
            if not self.fits(p.size, 1) or self.pie_drop_early():
                return [p]
            self.items.append(p)
            return []
        raise ValueError(self.kind)

    # --- dequeue -------------------------------------------------------
    def dequeue(self, now: int) -> tuple[Packet | None, list[Packet]]:
        if self.kind == "codel":
            return self.codel_dequeue(now)
        if not self.items:
            return None, []
        p = self.items.popleft()
        if self.kind == "pie":
            self.pie_after_dequeue(now, p.size)
            self.pie_update(now)
        return p, []

    # CoDel, RFC 8289 section 5 pseudo-code
    def codel_dodequeue(self, now: int):
        if not self.items:
            self.first_above = 0
            return None, False
        p = self.items.popleft()
        target, interval = self.target_ms * MS, self.interval_ms * MS
        ok = False
        if now - p.arrival < target or self.size_bytes() <= OPPORTUNITY:
            self.first_above = 0
        elif self.first_above == 0:
            self.first_above = now + interval
        elif now >= self.first_above:
            ok = True
        return p, ok

    def control_law(self, t: int) -> int:
        return t + int(self.interval_ms * MS / math.sqrt(self.count))

    def codel_dequeue(self, now: int):
        dropped = []
        p, ok = self.codel_dodequeue(now)
        if p is None:
            self.dropping = False
            return None, dropped
        if self.dropping:
            if not ok:
                self.dropping = False
            while self.dropping and now >= self.drop_next:
                dropped.append(p)
                self.count += 1
                p, ok = self.codel_dodequeue(now)
                if p is None or not ok:
                    self.dropping = False
                else:
                    self.drop_next = self.control_law(self.drop_next)
        elif ok:
            dropped.append(p)
            p, _ = self.codel_dodequeue(now)
            self.dropping = True
            delta = (self.count - self.lastcount) & 0xFFFFFFFF
            recent = now - self.drop_next < 16 * self.interval_ms * MS
            self.count = delta if delta > 1 and recent else 1
            self.drop_next = self.control_law(now)
            self.lastcount = self.count
        return p, dropped

    # PIE, RFC 8033 with the periodic update run lazily for elapsed periods
    T_UPDATE = 15 * MS

    def pie_update(self, now: int):
        qref = float(self.qdelay_ref_ms)
        while now >= self.last_update + self.T_UPDATE:
            self.last_update += self.T_UPDATE
            self.qdelay_old = self.current_qdelay
            b = self.size_bytes()
            self.current_qdelay = b / self.avg_dq_rate if self.avg_dq_rate > 0.0 else 0.0
            p = 0.125 * (self.current_qdelay - qref) + 1.25 * (self.current_qdelay - self.qdelay_old)
            for bound, div in ((0.000001, 2048.0), (0.00001, 512.0), (0.0001, 128.0), (0.001, 32.0), (0.01, 8.0), (0.1, 2.0)):
                if self.drop_prob < bound:
                    p /= div
                    break
            self.drop_prob += p
            if self.current_qdelay == 0.0 and self.qdelay_old == 0.0:
                self.drop_prob *= 0.98
            self.drop_prob = min(1.0, max(0.0, self.drop_prob))
            if self.drop_prob == 0.0 and self.current_qdelay < qref / 2 and self.qdelay_old < qref / 2:
                self.burst_allowance = self.max_burst_ms * MS
            self.burst_allowance = max(0, self.burst_allowance - self.T_UPDATE)

    def pie_drop_early(self) -> bool:
        if self.burst_allowance > 0:
            return False
        if self.qdelay_old < self.qdelay_ref_ms / 2 and self.drop_prob < 0.2:
            return False
        if self.size_bytes() < 2 * OPPORTUNITY:
            return False
        return self.rng.next_f64() < self.drop_prob

    def pie_after_dequeue(self, now: int, size: int):
        b = self.size_bytes()
        if b >= 16384 and self.dq_count is None:
            self.dq_tstamp = now
            self.dq_count = 0
        if self.dq_count is not None:
            self.dq_count += size
            if self.dq_count >= 16384:
                dtime = now - self.dq_tstamp
                if dtime > 0:
                    rate = self.dq_count / (dtime / MS)
                    self.avg_dq_rate = rate if self.avg_dq_rate == 0.0 else 0.875 * self.avg_dq_rate + 0.125 * rate
                    if b < 16384:
                        self.dq_count = None
                    else:
                        self.dq_count = 0
                        self.dq_tstamp = now


def simulate(trace_ms: list[int], arrivals: list[tuple[int, int]], queue: Queue, spread=True, repeat=True,
             timeline=(), bypass=None):
    """Return events [("d"|"x", packet id, time ns)] in the order they happen.

    `timeline`: changes (at_ns, "outage", duration_ns, flush) and (at_ns, "trace", trace_ms, aligned),
    in time order. An opportunity at a change's instant comes before it, an arrival at it after it.
    Outage: no opportunity in [at, at + duration) is served; flush drops the packet partly sent, then
    the queue, at `at`. Trace switch: restarted, the new trace's opportunities from at + 1 ns;
    aligned, the new trace's own times from 0 (the simulation's start), those after `at`.
    `bypass`: per arrival, whether it leaves at its arrival when nothing is queued or partly sent (and no
    outage holds) instead of joining the queue (workload-aware replay's train packets, burst_model.py)."""
    events = []
    opps = opportunity_times(trace_ms, spread, repeat)
    next_opp = next(opps, None)
    in_transit: Packet | None = None
    left = 0
    i = 0
    changes = list(timeline)
    dark_until = 0

    def change(c):
        nonlocal opps, next_opp, in_transit, left, dark_until
        at, kind, *rest = c
        if kind == "outage":
            duration, flush = rest
            dark_until = max(dark_until, at + duration)
            if flush:
                if in_transit is not None:
                    events.append(("x", in_transit.id, at))
                    in_transit, left = None, 0
                while queue.items:
                    events.append(("x", queue.items.popleft().id, at))
        else:
            new, aligned = rest
            base = 0 if aligned else at + 1
            opps = (base + t for t in opportunity_times(new, spread, repeat))
            next_opp = next(opps, None)
            while aligned and next_opp is not None and next_opp <= at:
                next_opp = next(opps, None)

    def serve(t):
        nonlocal in_transit, left
        budget = OPPORTUNITY
        while budget > 0:
            if left == 0:
                p, dropped = queue.dequeue(t)
                events.extend(("x", d.id, t) for d in dropped)
                if p is None:
                    return
                in_transit, left = p, p.size
            use = min(budget, left)
            budget -= use
            left -= use
            if left == 0:
                events.append(("d", in_transit.id, t))
                in_transit = None

    while True:
        te = changes[0][0] if changes else None
        if next_opp is not None and next_opp < dark_until:  # an outage: not served, not seen
            next_opp = next(opps, None)
            continue
        if te is not None and (next_opp is None or te < next_opp) and (i >= len(arrivals) or te <= arrivals[i][0]):
            if i >= len(arrivals) and not queue.items and left == 0:
                break  # nothing left that a change could touch
            change(changes.pop(0))
            continue
        if i < len(arrivals) and (next_opp is None or arrivals[i][0] < next_opp):
            t, size = arrivals[i]
            if bypass is not None and bypass[i] and not queue.items and left == 0 and t >= dark_until:
                events.append(("d", i, t))
            else:
                for d in queue.enqueue(Packet(i, size, t), t):
                    events.append(("x", d.id, t))
            i += 1
            continue
        if next_opp is None or (i >= len(arrivals) and not queue.items and left == 0):
            break  # trace over (--once), or nothing left to send
        serve(next_opp)
        next_opp = next(opps, None)
    return events
