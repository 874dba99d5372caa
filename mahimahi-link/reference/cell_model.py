"""An independent, deliberately plain model of a shared cell (issue #18), to
check the emulator's cell (`mahimahi-link simulate-cell`): both get the same
channels and arrivals and must give the same departures, slot allocations
and detected request starts.

Written from the rules, not from the Rust code: the trace is unrolled into
explicit opportunity times (mmlink_model.opportunity_times) and the cell
walks one slot at a time, each UE's opportunities carrying its share of
1504 bytes. Queues are infinite (what simulate-cell uses).

Rules, per slot (length S, B blocks):
- A UE's channel this slot: the opportunities of the slot's millisecond in
  its trace x 1504 bytes x S / 1 ms.
- Blocks a UE needs: 0 without backlog; all when its channel is 0; else
  ceil(backlog x B / channel), between 1 and B.
- Without signalling (downlink, ideal uplink) the scheduler sees the queues
  and its allocation applies at once; blocks nobody needs are spread over
  all UEs (the remainder to UE i when (i + slot) mod n < remainder).
- With signalling (TS 38.321): a UE with data, nothing reported, no grant
  on its way and no SR answered-pending raises an SR, delivered at slot
  s when s mod P == i mod P; the scheduler sees the reports (or, for an SR,
  the bytes of the SR grant's blocks) and decides for slot s + k2; the slot
  uses what was decided for it; a UE that transmitted reports its buffer at
  the slot's end (short BSR, rounded up): always, or with a periodic-BSR
  timer of T slots only if it sent less than its grant, if its last report
  was 0 and it has data now, or if T slots passed since its last report.
- An opportunity carries floor((1504 x b + carry) / B) bytes, the
  remainder carried to the UE's next busy opportunity; an idle UE's
  opportunities are not counted.
- PF's average: R = (1 - 1/W) R + (1/W) served bytes each slot; a stretch
  with nothing to schedule at all is skipped at once, R multiplied by
  (1 - 1/W) ** slots.
"""

from __future__ import annotations

import math
from fractions import Fraction
from collections import deque

from mmlink_model import MS, OPPORTUNITY, opportunity_times

SHORT_BSR = [0, 10, 14, 20, 28, 38, 53, 74, 102, 142, 198, 276, 384, 535, 745, 1038, 1446, 2014, 2806, 3909, 5446, 7587,
             10570, 14726, 20516, 28581, 39818, 55474, 77284, 107669, 150000]


def short_bsr(b: int) -> int:
    return next((lvl for lvl in SHORT_BSR if lvl >= b), 150001)


def needed(backlog: int, cap: int, blocks: int) -> int:
    if backlog == 0:
        return 0
    if cap == 0:
        return blocks
    return min(max(-(-backlog * blocks // cap), 1), blocks)


class RR:
    def __init__(self):
        self.next = 0

    def allocate(self, slot, ues, blocks):
        n = len(ues)
        out = [0] * n
        need = [needed(u["backlog"], u["cap"], blocks) for u in ues]
        water_fill(self.next, need, out, blocks)
        self.next = (self.next + 1) % n
        return out


def water_fill(first, need, out, left):
    """Equal parts of `left` to the UEs that still need blocks, in turn from
    `first` (the remainder to the first in turn); returns what is left."""
    n = len(need)
    while True:
        wanting = [(first + k) % n for k in range(n) if need[(first + k) % n] > 0]
        if not wanting or left == 0:
            return left
        part = max(left // len(wanting), 1)
        for i in wanting:
            g = min(part, need[i], left)
            out[i] += g
            need[i] -= g
            left -= g
            if left == 0:
                return left


def in_order(order, ues, blocks):
    """Each UE in `order` takes the blocks it needs until none are left."""
    out, left = [0] * len(ues), blocks
    for i in order:
        g = min(needed(ues[i]["backlog"], ues[i]["cap"], blocks), left)
        out[i] = g
        left -= g
        if left == 0:
            break
    return out


class PF:
    def __init__(self, alpha=1.0, beta=1.0):
        self.alpha, self.beta = alpha, beta

    def allocate(self, slot, ues, blocks):
        order = sorted((i for i, u in enumerate(ues) if u["backlog"] > 0),
                       key=lambda i: (-(float(ues[i]["cap"]) ** self.alpha / max(ues[i]["avg"], 1.0) ** self.beta), i))
        return in_order(order, ues, blocks)


class MRFS:
    """pDCell's minimum remaining flow size: backlogged UEs by bytes left of their flow over this
    slot's channel (the CU's metadata; the queue where the CU said nothing), no channel last, ties by
    index; each takes what it needs."""

    def __init__(self):
        self.remaining = {}

    def flow(self, ue, left):
        self.remaining[ue] = left

    def allocate(self, slot, ues, blocks):
        rem = [self.remaining.get(i, u["backlog"]) for i, u in enumerate(ues)]
        order = sorted((i for i, u in enumerate(ues) if u["backlog"] > 0),
                       key=lambda i: (ues[i]["cap"] == 0, Fraction(rem[i], ues[i]["cap"]) if ues[i]["cap"] else 0, i))
        return in_order(order, ues, blocks)


class Deadline:
    """SMEC (starts from reports) or Tutti-like (starts from the edge)."""

    def __init__(self, classes, starve, tutti=False):
        n = len(classes)
        self.classes, self.starve, self.tutti = classes, starve, tutti
        self.last = [0] * n
        self.start = [None] * n
        self.detected = []
        self.served = [0] * n
        self.rr = 0

    def notice(self, ue, slot):
        """Every notice is logged (one per request the edge saw); it starts a request only if none is open."""
        if self.tutti:
            if self.start[ue] is None:
                self.start[ue] = slot
            self.detected.append((ue, slot, slot))

    def allocate(self, slot, ues, blocks):
        n = len(ues)
        for i, u in enumerate(ues):
            sr_only = u["sr"] is not None
            if u["backlog"] == 0 and not sr_only and not u["pending"]:
                self.start[i] = None
            elif not self.tutti and (u["backlog"] > self.last[i] or sr_only) and self.start[i] is None:
                s = u["sr"] if u["sr"] is not None else slot
                self.start[i] = s
                self.detected.append((i, s, slot))
            self.last[i] = 0 if sr_only else u["backlog"]
        out = [0] * n
        left = [blocks]

        def give(i):
            g = min(max(needed(ues[i]["backlog"], ues[i]["cap"], blocks) - out[i], 0), left[0])
            out[i] += g
            left[0] -= g

        for i in range(n):
            if ues[i]["sr"] is not None:
                give(i)
        starved = [max(needed(u["backlog"], u["cap"], blocks) - out[i], 0)
                   if self.classes[i] is None and u["backlog"] > 0 and slot - min(self.served[i], slot) > self.starve else 0
                   for i, u in enumerate(ues)]
        left[0] = water_fill(self.rr, starved, out, left[0])
        lc = []
        for i in range(n):
            if self.classes[i] is not None and self.start[i] is not None and ues[i]["backlog"] > 0:
                lc.append((self.classes[i] - (slot - self.start[i]), i))
        for _budget, i in sorted(lc, key=lambda x: (max(x[0], -1), x[0], x[1])):
            give(i)
        need = [max(needed(u["backlog"], u["cap"], blocks) - out[i], 0) for i, u in enumerate(ues)]
        left[0] = water_fill(self.rr, need, out, left[0])
        self.rr = (self.rr + 1) % max(n, 1)
        for i in range(n):
            if out[i] > 0:
                self.served[i] = slot
        return out


class UE:
    def __init__(self, trace_ms):
        self.trace_ms = trace_ms
        self.times = opportunity_times(trace_ms, spread=True, repeat=True)
        self.next_t = next(self.times)
        self.queue = deque()  # [id, size, arrival]
        self.left = 0  # bytes of the head packet still to send
        self.share = (1, 1)
        self.carry = 0
        self.departed = 0
        # signalling
        self.reported = self.in_flight = self.granted_now = 0
        self.sr_pending = self.sr_received = False
        self.sr_slot = None
        self.last_bsr_slot, self.last_bsr_empty = 0, False
        counts = {}
        for t in trace_ms:
            counts[t] = counts.get(t, 0) + 1
        self.counts, self.period = counts, trace_ms[-1]

    def backlog(self):
        return sum(p[1] for p in self.queue) - (self.queue[0][1] - self.left if self.queue and self.left else 0)

    def opp_in_ms(self, ms):
        j, r = divmod(ms, self.period)
        return self.counts.get(r, 0) + (self.counts.get(self.period, 0) if r == 0 and j >= 1 else 0)

    def run_to(self, now, out, ue):
        while self.next_t <= now:
            t = self.next_t
            self.next_t = next(self.times)
            if not self.queue:
                continue
            b, n = self.share
            if b == n:
                room = OPPORTUNITY
            else:
                room, self.carry = divmod(OPPORTUNITY * b + self.carry, n)
            while room > 0 and self.queue and self.queue[0][2] < t:
                if self.left == 0:
                    self.left = self.queue[0][1]
                amount = min(room, self.left)
                room -= amount
                self.left -= amount
                if self.left == 0:
                    pid, size, _ = self.queue.popleft()
                    self.departed += size
                    out.append((ue, pid, t))


def simulate(traces, events, scheduler, slot_ns=500_000, blocks=51, avg_slots=100.0, signalling=None):
    """events: (t, ue, size, 'start' or ('flow', bytes left)), sorted by t. signalling: None or
    (sr_period, k2, sr_grant_blocks). Returns departures, slot log, detections."""
    ues = [UE(t) for t in traces]
    n = len(ues)
    avg = [0.0] * n
    out, log = [], []
    st = {"slot": 0, "allocated": False, "alloc": [0] * n, "at_start": [0] * n}
    grants = deque()

    def cap(i, slot):
        return ues[i].opp_in_ms(slot * slot_ns // MS) * OPPORTUNITY * slot_ns // MS

    def idle():
        return (all(not u.queue for u in ues) and all(not any(g) for _, g in grants)
                and all(not (u.sr_pending or u.sr_received or u.reported or u.in_flight) for u in ues))

    def allocate():
        s = st["slot"]
        if signalling is None:
            views = [{"backlog": u.backlog(), "cap": cap(i, s), "avg": avg[i], "sr": None, "pending": False} for i, u in enumerate(ues)]
            alloc = scheduler.allocate(s, views, blocks)
            decided = list(alloc)  # the log shows the scheduler's decision, not the spread
            spare = blocks - sum(alloc)
            alloc = [a + spare // n + (1 if (i + s) % n < spare % n else 0) for i, a in enumerate(alloc)]
        else:
            period, k2, sr_blocks = signalling[:3]
            for i, u in enumerate(ues):
                if u.backlog() > 0 and u.reported == 0 and u.in_flight == 0 and not u.sr_received:
                    u.sr_pending = True
                if u.sr_pending and s % period == i % period:
                    u.sr_pending, u.sr_received, u.sr_slot = False, True, s
            target = s + k2
            views = []
            for i, u in enumerate(ues):
                c = cap(i, target)
                b = u.reported if u.reported > 0 else (max(c * sr_blocks // blocks, 1) if u.sr_received else 0)
                views.append({"backlog": b, "cap": c, "avg": avg[i], "sr": u.sr_slot if u.sr_received else None,
                              "pending": u.in_flight > 0})
            decided = scheduler.allocate(target, views, blocks)
            for i, u in enumerate(ues):
                if decided[i] > 0:
                    b = views[i]["cap"] * decided[i] // blocks
                    u.reported = max(u.reported - b, 0)
                    u.in_flight += b
                    u.sr_received, u.sr_slot = False, None
            grants.append((target, decided))
            while grants and grants[0][0] < s:
                grants.popleft()
            alloc = grants.popleft()[1] if grants and grants[0][0] == s else [0] * n
            for i, u in enumerate(ues):
                u.granted_now = cap(i, s) * alloc[i] // blocks
        for i, u in enumerate(ues):
            u.share = (alloc[i], blocks)
            st["at_start"][i] = u.departed
        log.append((s, list(decided if signalling is None else alloc)))
        st["alloc"], st["allocated"] = alloc, True

    def close():
        if signalling is not None:
            timer = signalling[3] if len(signalling) > 3 else None
            for i, u in enumerate(ues):
                if st["alloc"][i] > 0:
                    u.in_flight = max(u.in_flight - u.granted_now, 0)
                    sent = u.departed - st["at_start"][i]
                    if (timer is None or sent < u.granted_now or (u.last_bsr_empty and u.backlog() > 0)
                            or st["slot"] >= u.last_bsr_slot + timer):
                        u.reported = short_bsr(u.backlog())
                        u.last_bsr_slot, u.last_bsr_empty = st["slot"], u.backlog() == 0
                u.granted_now = 0
        w = 1.0 / avg_slots
        for i, u in enumerate(ues):
            avg[i] = (1.0 - w) * avg[i] + w * float(u.departed - st["at_start"][i])
        st["slot"] += 1
        st["allocated"] = False

    def advance(now):
        while True:
            start = st["slot"] * slot_ns
            if start > now:
                return
            if not st["allocated"] and idle():
                target = now // slot_ns
                if target > st["slot"]:
                    decay = math.pow(1.0 - 1.0 / avg_slots, float(target - st["slot"]))
                    for i in range(n):
                        avg[i] *= decay
                        ues[i].run_to(target * slot_ns - 1, out, i)
                    st["slot"] = target
                    continue
            if not st["allocated"]:
                allocate()
            end = start + slot_ns
            until = min(now, end - 1)
            for i, u in enumerate(ues):
                u.run_to(until, out, i)
            if until < end - 1:
                return
            close()

    for k, (t, ue, what) in enumerate(events):
        advance(t)
        if what == "start":
            if hasattr(scheduler, "notice"):
                scheduler.notice(ue, t // slot_ns)
            continue
        if isinstance(what, tuple):  # ("flow", bytes left): pDCell's metadata from the CU
            if hasattr(scheduler, "flow"):
                scheduler.flow(ue, what[1])
            continue
        ues[ue].queue.append([k, what, t])
    # Drain as the emulator does: to the next busy UE's opportunity or the
    # slot's end, whichever is first, until nothing is left to do.
    while not idle():
        busy = [u.next_t for u in ues if u.queue]
        advance(min([*busy, (st["slot"] + 1) * slot_ns]))
    return out, log, getattr(scheduler, "detected", [])
