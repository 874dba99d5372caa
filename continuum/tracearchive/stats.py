"""What a trace offers: capacity per second, outages, summary numbers."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from continuum.tracearchive import mahimahi

OUTAGE_MS = 100  # a gap between opportunities longer than this is an outage


@dataclass
class TraceStats:
    duration_s: float
    opportunities: int
    mean_mbps: float
    median_mbps: float
    p5_mbps: float
    p95_mbps: float
    max_mbps: float
    outage_s: float
    outages: list[tuple[int, int]] = field(default_factory=list)  # (start_ms, end_ms)
    per_second_mbps: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        d = asdict(self)
        d.pop("per_second_mbps")
        d.pop("outages")
        d["outage_count"] = len(self.outages)
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in d.items()}


def outages(ts: np.ndarray, min_gap_ms: int = OUTAGE_MS) -> list[tuple[int, int]]:
    """Gaps longer than `min_gap_ms` between consecutive opportunities within
    one period, including a gap at the start."""
    if len(ts) == 0:
        return []
    points = np.concatenate(([0], ts))
    gaps = np.diff(points)
    where = np.nonzero(gaps > min_gap_ms)[0]
    return [(int(points[i]), int(points[i + 1])) for i in where]


def compute(ts: np.ndarray) -> TraceStats:
    if len(ts) and 0 < ts[-1] < 1000:
        # a period shorter than a second (Mahimahi's constant-rate form): every
        # second holds 1000 / period loops of it
        rates = np.array([len(ts) * mahimahi.OPPORTUNITY_BITS / 1e6 * 1000 / ts[-1]])
    else:
        counts = mahimahi.per_second(ts)
        rates = mahimahi.mbps(counts) if len(counts) else np.zeros(1)
    out = outages(ts)
    duration = float(ts[-1]) / 1000 if len(ts) else 0.0
    return TraceStats(
        duration_s=duration,
        opportunities=int(len(ts)),
        mean_mbps=float(len(ts) * mahimahi.OPPORTUNITY_BITS / 1e6 / duration) if duration else 0.0,
        median_mbps=float(np.median(rates)),
        p5_mbps=float(np.percentile(rates, 5)),
        p95_mbps=float(np.percentile(rates, 95)),
        max_mbps=float(rates.max()),
        outage_s=sum(e - s for s, e in out) / 1000,
        outages=out,
        per_second_mbps=[float(x) for x in rates],
    )
