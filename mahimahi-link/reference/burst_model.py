"""An independent, deliberately simple model of workload-aware replay
(CellReplay, NSDI 2025): a light trace (base delay and a packet train's
delivery offsets) in front of the heavy trace's link queue.

It exists to check the Rust core (mahimahi-link/src/burst.rs): the tests
feed both the same arrivals and traces and require identical departures.
It is written from the semantics in docs/link-replay.md, in two plain
steps: first every packet's release time and whether it may bypass the
heavy queue (this depends only on the arrivals and the light trace), then
the heavy link (mmlink_model.simulate) with the releases as its arrivals,
where a bypassing packet leaves at its release if the heavy queue is empty.

Times are integer nanoseconds; light-trace times, delays and offsets are
milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import mmlink_model as mm

MS = mm.MS


@dataclass
class LightLine:
    t_ms: int
    base_ms: int
    pdos_ms: list[int]


def parse_light(text: str) -> list[LightLine]:
    lines = []
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        f = [int(x) for x in raw.split()]
        lines.append(LightLine(f[0], f[1], f[2:]))
    return lines


def base_delay(lines: list[LightLine], now: int) -> tuple[int, int]:
    """The interpolated base delay (ns) at `now` and the index of the line whose train is used.
    The trace loops with period = last time - first time; the last line only ends the interpolation."""
    t0 = lines[0].t_ms * MS
    period = lines[-1].t_ms * MS - t0
    pos = now % period + t0
    i = max(k for k in range(len(lines) - 1) if lines[k].t_ms * MS <= pos)
    a, b = lines[i], lines[i + 1]
    span = (b.t_ms - a.t_ms) * MS
    return a.base_ms * MS + ((pos - a.t_ms * MS) * (b.base_ms - a.base_ms) * MS) // span, i


def size_offset(offsets_ms: list[float], size: int) -> int:
    """The delay offset (ns) of a packet of charged `size`: the 100-byte bins' offsets, interpolated."""
    if not offsets_ms:
        return 0
    ns = [round(o * MS) for o in offsets_ms]
    idx, rem = size // 100 - 1, size % 100
    if idx < 0:
        return ns[0]
    if idx >= len(ns) - 1:
        return ns[-1]
    return ns[idx] + (rem * (ns[idx + 1] - ns[idx])) // 100


def releases(lines: list[LightLine], arrivals: list[tuple[int, int]], pdo_bytes: int, idle_ns: int,
             offsets_ms: list[float] = (), active_ns: int | None = None) -> list[tuple[int, bool]]:
    """Each packet's (release time ns, may bypass the heavy queue). active_ns None: CellReplay's rule (a
    packet whose release would come idle_ns after the last one's starts a burst); a number: the burst
    lasts until the link released its last packet idle_ns ago, and a packet in it leaves no sooner than
    active_ns after it came."""
    out = []
    start = base = None
    last = 0       # the previous packet's release from the light trace (before its size offset)
    end = 0        # the previous packet's final release: releases never go backwards
    train: list[int] = []
    idx = cap = 0
    for now, size in arrivals:
        if base is None or (now > last + idle_ns if active_ns is not None else now + base > last + idle_ns):
            fresh = True
            # a new burst: this packet is the train's first
            base, line = base_delay(lines, now)
            start, train, idx, cap = now, [p * MS for p in lines[line].pdos_ms], 0, pdo_bytes
        else:
            fresh = False
        # an offset has passed: CellReplay, when the packet came later than it after the first one; active, when its release passed
        elapsed = max(0, now - start - base) if active_ns is not None else now - start
        while idx < len(train) and elapsed > train[idx]:
            idx, cap = idx + 1, pdo_bytes  # offsets that passed before the packet came
        if cap >= size:
            cap -= size
        else:
            # whole offsets of its own: from this one if no packet used it yet, else from the next
            need = -(-size // pdo_bytes)
            idx += need - (1 if cap == pdo_bytes else 0)
            cap = need * pdo_bytes - size
        if idx < len(train):
            release, bypass = start + base + train[idx], True
        elif active_ns is not None:
            release, bypass = max(now, start + base + train[-1]), False  # past the train: the heavy queue, after the grants came
        else:
            release, bypass = now + max(base, train[-1]), False  # past the train: the heavy queue
        if active_ns is not None and not fresh:
            release = max(release, now + active_ns)
        last = release
        off = size_offset(list(offsets_ms), size)
        if release + off >= end:
            release += off
        if active_ns is not None and not fresh:
            release = max(release, now + active_ns)  # the size offset does not go below the active link's floor
        release = max(release, now)
        if release < end:
            release, bypass = end, False
        end = release
        out.append((release, bypass))
    return out


def simulate(trace_ms: list[int], lines: list[LightLine], arrivals: list[tuple[int, int]], queue: mm.Queue,
             pdo_bytes: int = 1504, idle_ns: int = 0, offsets_ms: list[float] = (), spread=True, repeat=True,
             active_ns: int | None = None):
    """Events [("d"|"x", packet id, time ns)] in the order they happen."""
    rel = releases(lines, arrivals, pdo_bytes, idle_ns, offsets_ms, active_ns)
    return mm.simulate(trace_ms, [(r, size) for (r, _), (_, size) in zip(rel, arrivals)], queue, spread=spread,
                       repeat=repeat, bypass=[b for _, b in rel])
