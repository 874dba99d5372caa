"""Flow sizes from published data-center measurements, as CDF points
(bytes, cumulative probability) read off the papers' figures, and sampling
with linear interpolation between points (as the simulators that use them
do).

- "web-search": a production web-search cluster, DCTCP (M. Alizadeh et al.,
  "Data Center TCP (DCTCP)", SIGCOMM 2010, Fig. 4), as pFabric (SIGCOMM
  2013, Fig. 4a) used it; the points as transcribed in
  github.com/datacenter/empirical-traffic-gen (DCTCP_CDF), the first one set
  at 4 KB, not 0, as the figures show.
- "data-mining": a data-mining cluster, VL2 (A. Greenberg et al., "VL2: A
  Scalable and Flexible Data Center Network", SIGCOMM 2009, Fig. 2), as
  pFabric (Fig. 4b) used it; the points as transcribed there (VL2_CDF), the
  first one set at 100 bytes. Its largest flows (to 1 GB) take minutes at a
  cell's rates: `max_bytes` cuts the distribution (the cut is said in the
  results as the share of draws it changed).
"""

from __future__ import annotations

import bisect
import random

CDFS: dict[str, tuple[tuple[int, float], ...]] = {
    "web-search": ((4_000, 0.0), (10_000, 0.15), (20_000, 0.2), (30_000, 0.3), (50_000, 0.4), (80_000, 0.53), (200_000, 0.6),
                   (1_000_000, 0.7), (2_000_000, 0.8), (5_000_000, 0.9), (10_000_000, 0.97), (30_000_000, 1.0)),
    "data-mining": ((100, 0.0), (180, 0.1), (216, 0.2), (560, 0.3), (900, 0.4), (1_100, 0.5), (1_870, 0.6), (3_160, 0.7),
                    (10_000, 0.8), (400_000, 0.9), (3_160_000, 0.95), (100_000_000, 0.98), (1_000_000_000, 1.0)),
}


class Sizes:
    """Draws from one of CDFS, cut at `max_bytes`."""

    def __init__(self, cdf: str, max_bytes: int, seed: int):
        self.points = CDFS[cdf]
        self.max_bytes = max_bytes
        self.rng = random.Random(seed)
        self.probs = [p for _, p in self.points]

    def draw(self) -> int:
        u = self.rng.random()
        k = max(1, bisect.bisect_left(self.probs, u))
        (s0, p0), (s1, p1) = self.points[k - 1], self.points[k]
        size = s1 if p1 == p0 else s0 + (s1 - s0) * (u - p0) / (p1 - p0)
        return max(1, min(self.max_bytes, round(size)))


def mean_bytes(cdf: str, max_bytes: int) -> float:
    """The mean flow size, cut at max_bytes (piecewise linear between the points): what a load's rate is computed from."""
    points = CDFS[cdf]
    total = 0.0
    for (s0, p0), (s1, p1) in zip(points, points[1:]):
        if p1 == p0:
            continue
        lo, hi = min(s0, max_bytes), min(s1, max_bytes)
        if s1 <= max_bytes:
            total += (p1 - p0) * (s0 + s1) / 2
        elif s0 >= max_bytes:
            total += (p1 - p0) * max_bytes
        else:  # the segment crosses the cut: the part below it uniform, the rest at the cut
            f = (max_bytes - s0) / (s1 - s0)
            total += (p1 - p0) * (f * (lo + hi) / 2 + (1 - f) * max_bytes)
    return total
