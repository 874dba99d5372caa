"""MOSAIC's class fingerprints (SPEC-mosaic.md, "Class fingerprints"): a
centroid per class, moved towards each finished task's features with an
exponential moving average (alpha = 0.15), a confidence
kappa_n = 1 - exp(-n/10), and classification of a task by its nearest
centroid.

The paper's features are PMU readings (IPC, LLC miss rate, memory
bandwidth, branch misses). Where the kernel gives no PMU, as here, the
executor gives what /proc and the cgroup measure instead: CPU use per wall
second, peak memory, I/O bytes per second, context switches per second.
Every feature is compared on a log scale (log1p), so that no single unit
dominates the distance."""

from __future__ import annotations

import math

ALPHA = 0.15


def confidence(n: int) -> float:
    return 1.0 - math.exp(-n / 10.0)


class Fingerprints:
    def __init__(self) -> None:
        self.centroid: dict[str, dict[str, float]] = {}
        self.n: dict[str, int] = {}

    def update(self, cls: str, features: dict[str, float]) -> None:
        x = {k: math.log1p(max(0.0, v)) for k, v in features.items()}
        c = self.centroid.get(cls)
        if c is None:
            self.centroid[cls] = x
        else:
            for k, v in x.items():
                c[k] = (1 - ALPHA) * c.get(k, v) + ALPHA * v
        self.n[cls] = self.n.get(cls, 0) + 1

    def confidence(self, cls: str) -> float:
        return confidence(self.n.get(cls, 0))

    def classify(self, features: dict[str, float]) -> tuple[str | None, float]:
        """The nearest centroid's class and its distance (None: nothing learned yet)."""
        x = {k: math.log1p(max(0.0, v)) for k, v in features.items()}
        best, best_d = None, math.inf
        for cls, c in self.centroid.items():
            d = math.sqrt(sum((x.get(k, 0.0) - c.get(k, 0.0)) ** 2 for k in x.keys() | c.keys()))
            if d < best_d:
                best, best_d = cls, d
        return best, best_d
