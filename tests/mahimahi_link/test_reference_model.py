"""The emulator's core, under a virtual clock, must agree exactly with the
independent reference model: every departure and drop, at the same
nanosecond, for random traces, arrivals and queue disciplines, and for the
public Mahimahi traces."""

from __future__ import annotations

import random
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-link" / "reference"))
import mmlink_model as model  # noqa: E402

MS = model.MS


def run_core(mml: Path, trace_file: Path, arrivals, qargs: list[str], spread: bool, repeat: bool):
    args = [str(mml), "simulate", str(trace_file), *qargs]
    if not spread:
        args.append("--ms-bursts")
    if not repeat:
        args.append("--once")
    stdin = "".join(f"{t} {s}\n" for t, s in arrivals)
    out = subprocess.run(args, input=stdin, capture_output=True, text=True, check=True).stdout.splitlines()
    events = [(kind, int(i), int(t)) for kind, i, t in (line.split() for line in out if line[0] in "dx")]
    counters = dict(kv.split("=") for kv in out[-1].split()[1:])
    return events, counters


QUEUES = [
    ("infinite", "", {}),
    ("droptail", "packets=20", {"packets": 20}),
    ("droptail", "bytes=30000", {"bytes": 30000}),
    ("drophead", "packets=15, bytes=20000", {"packets": 15, "bytes": 20000}),
    ("codel", "target=5, interval=100", {"target_ms": 5, "interval_ms": 100}),
    ("codel", "packets=200, target=2, interval=20", {"packets": 200, "target_ms": 2, "interval_ms": 20}),
    ("pie", "qdelay_ref=15, max_burst=150", {"qdelay_ref_ms": 15, "max_burst_ms": 150}),
    ("pie", "packets=300, qdelay_ref=5, max_burst=20", {"packets": 300, "qdelay_ref_ms": 5, "max_burst_ms": 20}),
]


def random_trace(rng: random.Random) -> list[int]:
    t, out = 0, []
    for _ in range(rng.randint(1, 120)):
        t += rng.choice([0, 0, 1, 1, 1, 2, 5, 30])
        out.extend([t] * rng.choice([1, 1, 2, 3, 8]))
    if out[-1] == 0:
        out.append(1)
    return out


def random_arrivals(rng: random.Random, n: int, mean_gap_ns: int) -> list[tuple[int, int]]:
    t, out = 0, []
    for _ in range(n):
        # bursts (gap 0), exact millisecond instants, and arbitrary nanoseconds
        gap = rng.choice([0, 0, int(rng.expovariate(1 / mean_gap_ns)), MS - t % MS])
        t += gap
        out.append((t, rng.choice([44, 64, 104, 580, 1004, 1504, rng.randint(1, 1504)])))
    return out


@pytest.mark.parametrize("case", range(48))
def test_random_cases_agree_exactly(mml, tmp_path, case):
    rng = random.Random(1000 + case)
    trace = random_trace(rng)
    tf = tmp_path / "t.trace"
    tf.write_text("".join(f"{x}\n" for x in trace))
    kind, args, kw = QUEUES[case % len(QUEUES)]
    spread = case % 3 != 0
    repeat = case % 5 != 4
    arrivals = random_arrivals(rng, rng.randint(50, 1500), rng.choice([50_000, 300_000, 2 * MS]))
    qargs = [f"--queue={kind}", f"--queue-args={args}", "--seed=7"]
    got, counters = run_core(mml, tf, arrivals, qargs, spread, repeat)
    want = model.simulate(trace, arrivals, model.Queue(kind=kind, seed=7, **kw), spread=spread, repeat=repeat)
    assert got == want, f"first difference at {next(i for i, (a, b) in enumerate(zip(got, want)) if a != b) if got[:len(want)] != want[:len(got)] else min(len(got), len(want))}"
    assert int(counters["departed"]) == sum(1 for e in want if e[0] == "d")
    assert int(counters["dropped"]) == sum(1 for e in want if e[0] == "x")


@pytest.mark.parametrize("name", ["Verizon-LTE-short.up", "TMobile-LTE-short.down", "ATT-LTE-driving.up"])
@pytest.mark.parametrize("qi", [0, 1, 4, 6])
def test_public_traces_agree_exactly(mml, shared_traces, name, qi):
    tf = shared_traces / "mahimahi" / name
    trace = [int(x) for x in tf.read_text().split()]
    rng = random.Random(zlib.crc32(f"{name}/{qi}".encode()))
    # Poisson arrivals of mixed sizes at 1.3x the trace's mean byte capacity:
    # queues build (so limits and AQM act) and drain in the trace's gaps.
    sizes = [64, 580, 1504, 1504]
    capacity_bytes_per_ns = len(trace) * model.OPPORTUNITY / (trace[-1] * MS)
    mean_gap = sum(sizes) / len(sizes) / (1.3 * capacity_bytes_per_ns)
    t, arrivals = 0, []
    for _ in range(5000):
        t += int(rng.expovariate(1 / mean_gap))
        arrivals.append((t, rng.choice(sizes)))
    kind, args, kw = QUEUES[qi]
    got, _ = run_core(mml, tf, arrivals, [f"--queue={kind}", f"--queue-args={args}", "--seed=3"], True, True)
    want = model.simulate(trace, arrivals, model.Queue(kind=kind, seed=3, **kw))
    assert len(want) > 3000
    if kind != "infinite":
        assert any(e[0] == "x" for e in want), "this case should exercise drops"
    assert got == want


def test_mahimahi_byte_accounting_by_hand(mml, tmp_path):
    """Worked example of the rules, independent of both implementations."""
    tf = tmp_path / "t"
    tf.write_text("1\n2\n3\n4\n")
    # a 1504 at 0 -> opp 1; a 1504 arriving exactly at 2 ms cannot use opp 2 -> opp 3;
    # 3 x 500 at 3.5 ms share opp 4.
    arr = [(0, 1504), (2 * MS, 1504), (3 * MS + MS // 2, 500), (3 * MS + MS // 2, 500), (3 * MS + MS // 2, 500)]
    got, _ = run_core(mml, tf, arr, [], False, True)
    assert got == [("d", 0, MS), ("d", 1, 3 * MS), ("d", 2, 4 * MS), ("d", 3, 4 * MS), ("d", 4, 4 * MS)]


@pytest.mark.parametrize("case", range(24))
def test_random_timelines_agree_exactly(mml, tmp_path, case):
    """Outages (queue kept or flushed) and trace switches (restarted or phase-aligned) at random
    times, some at an arrival's or an opportunity's very instant: the emulator's core (simulate
    --timeline, the forward mode's file) and the reference model agree on every departure and drop."""
    rng = random.Random(5000 + case)
    trace, other = random_trace(rng), random_trace(rng)
    tf, of = tmp_path / "t.trace", tmp_path / "o.trace"
    tf.write_text("".join(f"{x}\n" for x in trace))
    of.write_text("".join(f"{x}\n" for x in other))
    kind, args, kw = QUEUES[case % len(QUEUES)]
    spread, repeat = case % 3 != 0, case % 7 != 6
    arrivals = random_arrivals(rng, rng.randint(200, 1200), rng.choice([100_000, 300_000, MS]))
    span = arrivals[-1][0]
    changes, lines = [], []
    for _ in range(rng.randint(1, 6)):
        at = rng.choice([rng.randrange(span), arrivals[rng.randrange(len(arrivals))][0], rng.randrange(span // MS + 1) * MS])
        at -= at % 1000  # the file's times are ms with 3 decimals: whole microseconds
        if rng.random() < 0.5:
            dur = rng.choice([1, 7, 50, 400]) * MS + rng.choice([0, 500_000])
            flush = rng.random() < 0.5
            changes.append((at, "outage", dur, flush))
            lines.append(f"{at / 1e6:.3f} ue outage {dur / 1e6:.3f} {'flush' if flush else 'keep'}")
        else:
            new, path = (other, of) if rng.random() < 0.6 else (trace, tf)
            aligned = rng.random() < 0.5
            changes.append((at, "trace", new, aligned))
            lines.append(f"{at / 1e6:.3f} * uplink-trace {path} {'aligned' if aligned else 'restart'}")
    order = sorted(range(len(changes)), key=lambda k: changes[k][0])  # stable: the file's order at equal times
    (tmp_path / "timeline.txt").write_text("\n".join(lines) + "\n")
    qargs = [f"--queue={kind}", f"--queue-args={args}", "--seed=7", f"--timeline={tmp_path / 'timeline.txt'}"]
    got, _ = run_core(mml, tf, arrivals, qargs, spread, repeat)
    want = model.simulate(trace, arrivals, model.Queue(kind=kind, seed=7, **kw), spread=spread, repeat=repeat,
                          timeline=[changes[k] for k in order])
    assert len(want) > 0
    assert got == want, f"first difference at {next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))}"
