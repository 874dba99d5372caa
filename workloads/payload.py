"""Payload size distributions: each app builds its data bank so its requests
follow the experiment's `[workload.payload]` (an image of about that many
bytes for W1, a phrase of that length for W2, random bytes for the example)."""

from __future__ import annotations

import numpy as np

DISTRIBUTIONS = ("uniform", "fixed", "normal", "lognormal")


def draw_sizes(payload: dict, n: int, rng: np.random.Generator, default: tuple[int, int]) -> list[int]:
    """n target sizes in bytes, clipped to [min_bytes, max_bytes].

    uniform: between min_bytes and max_bytes; fixed: mean_bytes; normal:
    mean_bytes, sd_bytes; lognormal: median mean_bytes, sigma (of the log)."""
    lo = int(payload.get("min_bytes", default[0]))
    hi = int(payload.get("max_bytes", default[1]))
    mean = float(payload.get("mean_bytes", (lo + hi) / 2))
    kind = payload.get("distribution", "uniform")
    if kind == "uniform":
        x = rng.uniform(lo, hi, n)
    elif kind == "fixed":
        x = np.full(n, mean)
    elif kind == "normal":
        x = rng.normal(mean, float(payload.get("sd_bytes", (hi - lo) / 4)), n)
    elif kind == "lognormal":
        x = rng.lognormal(np.log(mean), float(payload.get("sigma", 0.5)), n)
    else:
        raise ValueError(f"unknown payload distribution {kind!r}; valid: {', '.join(DISTRIBUTIONS)}")
    return [int(v) for v in np.clip(np.round(x), lo, hi)]
