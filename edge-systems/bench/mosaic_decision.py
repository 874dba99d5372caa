"""MOSAIC's admission decision time (SPEC-mosaic.md: ~280 us in the paper;
issue #20's target: a median of 50 us or less). One decision = the four rules
for one candidate against 7 running tasks (n_max 8), every pair of the 6x6
matrix observed. Prints the median and P99 over 20,000 decisions.

    .venv/bin/python smec-edge/bench/mosaic_decision.py"""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mosaic.classes import CLASSES, Task  # noqa: E402
from mosaic.interference import Interference  # noqa: E402
from mosaic.policies import Mosaic  # noqa: E402

MS = 1_000_000


def main() -> None:
    rng = random.Random(42)
    names = [c.name for c in CLASSES]
    m = Interference(names)
    for a in names:
        for b in names:
            m.m[(a, b)], m.n[(a, b)] = rng.uniform(0, 0.3), rng.randint(1, 40)
    p = Mosaic(m, n_max=8)
    running = [Task(f"r{i}", rng.choice(names), 0, 60_000, rng.uniform(10, 500)) for i in range(7)]
    times = []
    for i in range(20_000):
        c = Task(f"c{i}", rng.choice(names), 0, rng.uniform(100, 60_000), rng.uniform(10, 500))
        times.append(p.check(c, running, 10 * MS).ns / 1000)
    q = statistics.quantiles(times, n=100)
    print(f"MOSAIC admission, 7 running: median {statistics.median(times):.1f} us, P99 {q[98]:.1f} us "
          f"over {len(times)} decisions (paper: ~280 us; target: median <= 50 us)")


if __name__ == "__main__":
    main()
