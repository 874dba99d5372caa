"""An independent, deliberately plain model of MECaNIC's queueing (issue 40;
../shared/design/SPEC-mecanic.md, "Queuing (Algorithm 1)"), under a virtual
clock: what the live ingress stage will be held to packet by packet, and
what the hand-computed schedules of tests/mahimahi_link/test_mecanic_model.py
check first.

The stage forwards one packet at a time to the host at `rate_bps` (the
NIC-to-host path). Packets wait in a shared pool of `queues` FIFO queues:

- enqueue (a packet of flow f, whose rule gives a queue range [lo, hi], a
  reliability priority P^r and a latency priority P^l): the candidates are
  the queues lo..hi; allowed are those whose P^r is at most f's; among them
  (those with room first: `queue_packets`) the ones with the lowest P^r, and
  among those the queue least recently enqueued to (never used: first;
  ties: the lowest index). That queue takes f's P^r, and the packet goes in
  with dp = dp_tick = P^l. No queue allowed: the packet is dropped ("no
  queue"); every allowed queue full: it is dropped ("full"), the chosen queue
  claimed all the same. So a higher P^r takes queues even from a saturating
  lower one: they drain, and only flows of that P^r or more refill them.
- release: a queue that empties gives its P^r back (0: any flow may take it),
  so queues a high-P^r flow held return to the others once it stops.
- dequeue, each time the path is free: among the queues whose head may go
  (non-empty, and within the queue's bandwidth cap: a token bucket of
  `queue_rate_bps`, one maximum-size packet deep), the head with the largest
  dp; ties to the queue after the one served last (round robin). It leaves
  after its transmission time; then every packet still queued ages:
  dp += its dp_tick.

Times are integer nanoseconds. Events at one instant: arrivals first (in
the order given), then a dequeue decision.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    """What the classifier gives a flow: its queue range (inclusive), P^r and P^l."""

    lo: int
    hi: int
    pr: int
    pl: int


@dataclass
class Packet:
    flow: str
    seq: int
    size: int
    arrival: int
    dp: int
    tick: int


@dataclass
class Queue:
    pr: int = 0
    last_enqueue: int = -1  # the enqueue counter when last used (-1: never)
    packets: deque = field(default_factory=deque)
    tokens: int = 0  # bits x 1e9 (integers: exact, as in the Rust stage)
    tokens_at: int = 0  # ns


@dataclass(frozen=True)
class Result:
    departures: list  # (t_done_ns, flow, seq, size, queue)
    drops: list  # (t_ns, flow, seq, why): "no queue" | "full"


BUCKET = 1500 * 8 * 10**9  # a queue's token bucket, in bits x 1e9: one maximum-size packet deep


def simulate(arrivals: list[tuple[int, str, int]], rules: dict[str, Rule], rate_bps: int, queues: int = 20,
             queue_rate_bps: int | None = None, queue_packets: int = 1000) -> Result:
    """arrivals: (t_ns, flow, size_bytes), in time order; every flow has a rule. Rates in bit/s
    (integers: every time is exact, a transmission's rounded up to the next ns)."""
    rate_bps, queue_rate_bps = int(rate_bps), None if queue_rate_bps is None else int(queue_rate_bps)
    pool = [Queue() for _ in range(queues)]
    if queue_rate_bps is not None:
        for q in pool:
            q.tokens = BUCKET
    seqs: dict[str, int] = {}
    departures, drops = [], []
    enqueues = 0
    last_served = queues - 1  # round robin starts at queue 0
    busy_until = 0
    i = 0
    now = 0

    def refill(q: Queue, t: int) -> None:
        if queue_rate_bps is not None:
            q.tokens = min(BUCKET, q.tokens + (t - q.tokens_at) * queue_rate_bps)
            q.tokens_at = t

    def may_go(q: Queue, t: int) -> bool:
        if not q.packets:
            return False
        if queue_rate_bps is None:
            return True
        refill(q, t)
        return q.tokens >= q.packets[0].size * 8 * 10**9

    def ready_at(q: Queue, t: int) -> int:
        """When a non-empty queue's head is within its cap."""
        if queue_rate_bps is None:
            return t
        refill(q, t)
        missing = q.packets[0].size * 8 * 10**9 - q.tokens
        return t if missing <= 0 else t + -(-missing // queue_rate_bps)

    while True:
        # arrivals up to now
        while i < len(arrivals) and arrivals[i][0] <= now:
            t, flow, size = arrivals[i]
            i += 1
            seq = seqs.get(flow, 0)
            seqs[flow] = seq + 1
            r = rules[flow]
            allowed = [k for k in range(r.lo, r.hi + 1) if pool[k].pr <= r.pr]
            if not allowed:
                drops.append((t, flow, seq, "no queue"))
                continue
            room = [k for k in allowed if len(pool[k].packets) < queue_packets]
            among = room or allowed
            lowest = min(pool[k].pr for k in among)
            k = min((k for k in among if pool[k].pr == lowest), key=lambda k: (pool[k].last_enqueue, k))
            q = pool[k]
            q.pr = r.pr  # claimed, even when full: it drains, and only flows of this P^r or more may refill it
            q.last_enqueue = enqueues
            enqueues += 1
            if not room:
                drops.append((t, flow, seq, "full"))
                continue
            q.packets.append(Packet(flow, seq, size, t, r.pl, r.pl))
        # a dequeue when the path is free
        if now >= busy_until:
            eligible = [k for k in range(queues) if may_go(pool[k], now)]
            if eligible:
                best = max(pool[k].packets[0].dp for k in eligible)
                order = [(last_served + 1 + j) % queues for j in range(queues)]
                k = next(k for k in order if k in eligible and pool[k].packets[0].dp == best)
                q = pool[k]
                p = q.packets.popleft()
                if queue_rate_bps is not None:
                    q.tokens -= p.size * 8 * 10**9
                last_served = k
                busy_until = now + -(-p.size * 8 * 10**9 // rate_bps)
                departures.append((busy_until, p.flow, p.seq, p.size, k))
                if not q.packets:
                    q.pr = 0  # released
                for other in pool:
                    for w in other.packets:
                        w.dp += w.tick
        # the next event: an arrival, the path free again, or a capped head within its cap
        nxt = [arrivals[i][0]] if i < len(arrivals) else []
        waiting = [q for q in pool if q.packets]
        if waiting:
            nxt.append(busy_until if now < busy_until else max(now + 1, min(ready_at(q, now) for q in waiting)))
        if not nxt:
            return Result(departures, drops)
        now = max(now, min(nxt))
