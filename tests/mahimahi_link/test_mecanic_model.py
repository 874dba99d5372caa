"""MECaNIC's queueing (Algorithm 1) in the reference model, against
schedules worked out here by hand: the dequeue order by latency priority
with aging (dp += dp_tick on every dequeue, ties round robin), the
starvation bound it gives, and the reliability priority's queue ranges,
preemption and release under per-queue bandwidth caps (the paper's worked
example, scaled). The live ingress stage will be held to this model packet
by packet (issue 40)."""

from __future__ import annotations

import random
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-link" / "reference"))
import mecanic_model as model  # noqa: E402

US = 1000  # ns
SIZE = 1250  # bytes: 1 us at 10 Gbit/s, 1 ms at a 10-Mbit/s queue cap


def _order(result: model.Result) -> list[tuple[str, int, int]]:
    return [(flow, seq, t) for t, flow, seq, _, _ in result.departures]


def test_the_largest_dp_goes_first_and_everything_queued_ages():
    """H (P^l 10) and L (P^l 1) each in a queue of their own, all queued at t = 0: H's two go
    first (10, then 20 after aging, against L's 2), then L's three in order."""
    rules = {"H": model.Rule(0, 0, 1, 10), "L": model.Rule(1, 1, 1, 1)}
    arrivals = [(0, "L", SIZE)] * 3 + [(0, "H", SIZE)] * 2
    got = _order(model.simulate(arrivals, rules, rate_bps=10**10, queues=2))
    assert got == [("H", 0, 1 * US), ("H", 1, 2 * US), ("L", 0, 3 * US), ("L", 1, 4 * US), ("L", 2, 5 * US)]


def test_aging_bounds_how_long_a_low_priority_packet_waits():
    """H sends one packet per transmission time (the path's whole rate), each arriving with dp 10;
    one L packet (P^l 1) waits, its dp growing by 1 per dequeue: 1 + k before the k-th decision.
    At k = 9 it ties H9's 10 and wins the round robin (queue 0 was served last), so it leaves at
    10 us; H9, aged to 20, goes next, ahead of H10's fresh 10."""
    rules = {"H": model.Rule(0, 0, 1, 10), "L": model.Rule(1, 1, 1, 1)}
    arrivals = sorted([(k * US, "H", SIZE) for k in range(20)] + [(0, "L", SIZE)], key=lambda a: (a[0], a[1] != "L"))
    got = _order(model.simulate(arrivals, rules, rate_bps=10**10, queues=2))
    assert got[:9] == [("H", k, (k + 1) * US) for k in range(9)]
    assert got[9] == ("L", 0, 10 * US)
    assert got[10:12] == [("H", 9, 11 * US), ("H", 10, 12 * US)]


def _rate(result: model.Result, flow: str, start_ms: float, end_ms: float) -> float:
    """Mbit/s of `flow` leaving in [start, end)."""
    bits = sum(size * 8 for t, f, _, size, _ in result.departures if f == flow and start_ms * 1e6 <= t < end_ms * 1e6)
    return bits / ((end_ms - start_ms) / 1e3) / 1e6


def test_reliability_priority_takes_queues_and_gives_them_back():
    """The paper's worked example, scaled: 4 queues of 10 Mbit/s each (the path: 100 Mbit/s), A
    (queues 0-3, P^r 1), B (0-1, P^r 3), each offering 50 Mbit/s for 200 ms; C (0-2, P^r 5)
    offering 50 Mbit/s from 100 to 150 ms. B takes its two queues from A (20 Mbit/s each for A and
    B); C takes three (30 Mbit/s), leaving A one (10) and B none (its packets dropped: no queue
    allowed); once C stops its queues empty and return: A and B at 20 again."""
    rules = {"A": model.Rule(0, 3, 1, 100), "B": model.Rule(0, 1, 3, 50), "C": model.Rule(0, 2, 5, 200)}
    every = 200 * US  # 1250 B every 0.2 ms: 50 Mbit/s
    arrivals = sorted([(t, f, SIZE) for f in ("A", "B") for t in range(0, 200_000 * US, every)]
                      + [(t, "C", SIZE) for t in range(100_000 * US, 150_000 * US, every)])
    r = model.simulate(arrivals, rules, rate_bps=10**8, queues=4, queue_rate_bps=10**7, queue_packets=5)
    assert abs(_rate(r, "A", 40, 90) - 20) <= 1 and abs(_rate(r, "B", 40, 90) - 20) <= 1
    assert abs(_rate(r, "C", 110, 150) - 30) <= 1 and abs(_rate(r, "A", 110, 150) - 10) <= 1
    assert _rate(r, "B", 110, 150) == 0
    assert any(f == "B" and why == "no queue" and 100e6 <= t < 150e6 for t, f, _, why in r.drops)
    assert not any(f == "B" and why == "no queue" and (t < 100e6 or t >= 160e6) for t, f, _, why in r.drops)
    assert abs(_rate(r, "A", 170, 200) - 20) <= 1 and abs(_rate(r, "B", 170, 200) - 20) <= 1
    # every queue empty at the end gives its P^r back: nothing is left holding one
    assert len(r.departures) + len(r.drops) == len(arrivals)


def _core(mml: Path, arrivals, rules: dict, rate: int, queues: int, queue_rate: int | None, queue_packets: int):
    args = [str(mml), "simulate-mecanic", f"--rate-bps={rate}", f"--queues={queues}", f"--queue-packets={queue_packets}",
            *([f"--queue-rate-bps={queue_rate}"] if queue_rate else []),
            *(f"--rule={f}:{r.lo}:{r.hi}:{r.pr}:{r.pl}" for f, r in rules.items())]
    out = subprocess.run(args, input="".join(f"{t} {f} {s}\n" for t, f, s in arrivals), capture_output=True, text=True,
                         check=True).stdout.split("\n")
    deps = [(int(t), f, int(q), int(s), int(k)) for kind, t, f, q, s, k in (x.split() for x in out if x.startswith("d "))]
    drops = [(int(t), f, int(q), "no queue" if w == "noqueue" else w) for kind, t, f, q, w in (x.split() for x in out if x.startswith("x "))]
    return deps, drops


@pytest.mark.parametrize("case", range(24))
def test_the_emulators_stage_agrees_with_the_model_event_for_event(mml, case):
    """Random pools, ranges, priorities, caps, queue sizes and bursts: mahimahi-link's stage core
    (src/mecanic/, `simulate-mecanic`) and this model give the same departures (time, flow,
    sequence, queue) and drops (and why), to the nanosecond."""
    rng = random.Random(zlib.crc32(f"mecanic-{case}".encode()))
    queues = rng.choice([1, 2, 4, 8, 20])
    rules = {}
    for f in "ABCD"[: rng.randint(1, 4)]:
        lo = rng.randrange(queues)
        rules[f] = model.Rule(lo, rng.randrange(lo, queues), rng.randint(0, 6), rng.choice([1, 2, 5, 10, 50, 200]))
    rate = rng.choice([10**6, 10**7, 10**8, 10**9])
    queue_rate = rng.choice([None, rate // 4, rate // 10, rate // 2])
    queue_packets = rng.choice([1, 2, 5, 50])
    t, arrivals = 0, []
    gap = 1500 * 8 * 10**9 // rate  # a full-size packet's time on the path
    for _ in range(rng.randint(20, 300)):
        t += rng.choice([0, 0, gap // 3, gap, 2 * gap, rng.randrange(1, 4 * gap + 2)])
        arrivals.append((t, rng.choice(list(rules)), rng.randint(40, 1500)))
    ours = model.simulate(arrivals, rules, rate, queues, queue_rate, queue_packets)
    deps, drops = _core(mml, arrivals, rules, rate, queues, queue_rate, queue_packets)
    assert [(t, f, q, s, k) for t, f, q, s, k in ours.departures] == deps
    assert ours.drops == drops
    assert len(deps) + len(drops) == len(arrivals)
