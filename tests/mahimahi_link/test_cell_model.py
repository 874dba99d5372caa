"""The emulator's shared cell (`mahimahi-link simulate-cell`) must agree
exactly with the independent reference model (reference/cell_model.py):
every departure at the same nanosecond, every slot's allocation and every
detected request start, for random channels, arrivals, schedulers and
uplink signalling settings (SR period, k2, BSR)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-link" / "reference"))
import cell_model as model  # noqa: E402

MS = 1_000_000


def run_cell(mml: Path, trace_files, events, args):
    cmd = [str(mml), "simulate-cell", *(f"--trace={f}" for f in trace_files), *args]
    stdin = "".join(f"{t} {ue} {' '.join(map(str, what)) if isinstance(what, tuple) else what}\n" for t, ue, what in events)
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    deps, slots, starts = [], [], []
    for line in p.stdout.splitlines():
        f = line.split()
        if f[0] == "d":
            deps.append((int(f[1]), int(f[2]), int(f[3])))
        elif f[0] == "s":
            slots.append((int(f[1]), [int(x) for x in f[2:]]))
        elif f[0] == "r":
            starts.append((int(f[1]), int(f[2]), int(f[3])))
    return deps, slots, starts


def random_trace(rng: random.Random) -> list[int]:
    per_ms = rng.choice([1, 2, 4, 8])
    length = rng.randint(5, 60)
    out, ms = [], 0
    for _ in range(length):
        ms += rng.choice([0, 1, 1, 1, 2, 3])
        out += [max(ms, 1)] * rng.randint(1, per_ms)
    return out


@pytest.mark.parametrize("seed", range(45))
def test_cell_agrees_with_the_reference_model(mml, tmp_path, seed):
    rng = random.Random(seed)
    n = rng.randint(1, 5)
    traces = [random_trace(rng) for _ in range(n)]
    files = []
    for i, t in enumerate(traces):
        f = tmp_path / f"ue{i}.trace"
        f.write_text("".join(f"{x}\n" for x in t))
        files.append(f)
    name = ["rr", "pf", "smec", "tutti"][seed % 4] if seed < 40 else "mrfs"
    signalling = None if seed % 3 == 0 else (rng.choice([1, 5, 20]), rng.choice([0, 2, 4]), rng.choice([1, 2, 8]),
                                             rng.choice([None, 1, 10, 40]))
    blocks = rng.choice([1, 7, 51, 106])
    if signalling and signalling[2] > blocks:
        signalling = (signalling[0], signalling[1], blocks, signalling[3])
    slot_us = rng.choice([250, 500, 1000])
    classes = [rng.choice(["be", f"lc:{rng.randint(5, 80)}"]) for _ in range(n)]
    events, t = [], 0
    for _ in range(rng.randint(20, 300)):
        t += rng.choice([0, rng.randint(0, 3 * MS), rng.randint(0, 60 * MS)])
        ue = rng.randrange(n)
        if name == "mrfs" and rng.random() < 0.15:  # the CU's metadata: the bytes left of the UE's flow
            events.append((t, ue, ("flow", rng.choice([0, rng.randint(1, 3000), rng.randint(1, 10**6)]))))
            continue
        events.append((t, ue, "start" if name == "tutti" and rng.random() < 0.1 else rng.randint(40, 1504)))
    args = [f"--scheduler={name}", f"--blocks={blocks}", f"--slot-us={slot_us}", "--be-starvation-slots=13",
            *(f"--class={c}" for c in classes)]
    if signalling:
        args += ["--uplink-signalling", f"--sr-period-slots={signalling[0]}", f"--k2-slots={signalling[1]}",
                 f"--sr-grant-blocks={signalling[2]}"] + ([f"--periodic-bsr-slots={signalling[3]}"] if signalling[3] else [])
    alpha, beta = rng.choice([(1.0, 1.0), (1.0, 0.5), (2.0, 1.0), (0.0, 1.0)])
    window = rng.choice([100, 20])
    if name == "pf":
        args += [f"--pf-alpha={alpha}", f"--pf-beta={beta}", f"--pf-window-slots={window}"]
    deps, slots, starts = run_cell(mml, files, events, args)

    slot_ns = slot_us * 1000
    cls = [None if c == "be" else -(-int(c[3:]) * MS // slot_ns) for c in classes]
    sched = {"rr": model.RR(), "pf": model.PF(alpha, beta), "smec": model.Deadline(cls, 13),
             "tutti": model.Deadline(cls, 13, tutti=True), "mrfs": model.MRFS()}[name]
    m_deps, m_slots, m_starts = model.simulate(traces, events, sched, slot_ns=slot_ns, blocks=blocks, signalling=signalling,
                                               avg_slots=float(window if name == "pf" else 100))
    packets = sum(1 for e in events if isinstance(e[2], int))
    assert len(m_deps) == packets, "the model delivered every packet"
    assert sorted(deps) == sorted(m_deps), f"{name}, signalling {signalling}: departures differ"
    assert slots == m_slots, f"{name}: slot allocations differ"
    assert starts == [tuple(x) for x in m_starts], f"{name}: detected starts differ"
