"""Trace checks: Mahimahi's rules (errors: the emulator refuses the trace)
plus ours (warnings: valid, but probably not what the author meant). Every
finding names the file and, where it has one, the line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from continuum.tracearchive import mahimahi

ABSURD_MBPS = 100_000  # 100 Gbit/s in one second: a units mistake, not a radio
TAIL_GAP_MS = 1000
LONGEST_RATE_CHECK_MS = 30 * 86_400_000  # per-second statistics of a longer period would not fit in memory


@dataclass(frozen=True)
class Finding:
    level: str  # "error" or "warning"
    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.level}: {self.message}"


def check_file(path: Path, warnings: bool = True) -> list[Finding]:
    """Errors (what the emulator refuses) and, with warnings, our findings."""
    path = Path(path)
    if not path.is_file():
        return [Finding("error", str(path), None, "no such file")]
    try:
        ts = mahimahi.read(path)
    except mahimahi.TraceReadError as e:
        return [Finding("error", e.path, e.line, e.why)]
    return check_timestamps(ts, str(path), warnings)


def check_timestamps(ts: np.ndarray, name: str, warnings: bool = True) -> list[Finding]:
    f: list[Finding] = []
    if len(ts) == 0:
        return [Finding("error", name, None, "empty: a trace needs at least one timestamp (one line per delivery opportunity)")]
    down = np.nonzero(np.diff(ts) < 0)[0]
    if len(down):
        i = int(down[0]) + 2
        f.append(Finding("error", name, i, f"timestamp {ts[i - 1]} is smaller than the one before ({ts[i - 2]}); timestamps must not decrease"))
        return f
    if ts[-1] == 0:
        what = "every timestamp is 0 (all-zero trace)" if (ts == 0).all() else "the last timestamp is 0"
        f.append(Finding("error", name, len(ts), f"{what}: the trace loops with period = last timestamp, which must be > 0"))
        return f
    if not warnings:
        return f
    if ts[-1] > LONGEST_RATE_CHECK_MS:
        f.append(Finding("warning", name, len(ts), f"the period is {ts[-1] / 86_400_000:.0f} days: too long to check its rates per second"))
        return f
    counts = mahimahi.per_second(ts)
    rates = mahimahi.mbps(counts)
    if rates.max() > ABSURD_MBPS:
        k = int(np.argmax(rates))
        line = int(np.searchsorted(ts, 1000 * k + 1)) + 1
        f.append(Finding("warning", name, line, f"second {k} carries {rates[k]:.0f} Mbit/s (> {ABSURD_MBPS} Mbit/s): absurd for a cellular link; check the units of the source"))
    if len(ts) >= 2 and ts[-1] - ts[-2] > TAIL_GAP_MS:
        gap = int(ts[-1] - ts[-2])
        f.append(Finding("warning", name, len(ts), f"the last {gap} ms carry only the final opportunity: a zero-rate tail kept by a sentinel, or an outage at the end of every loop; check that this is intended"))
    outage = sum(int(e - s) for s, e in _gaps(ts))
    if outage > 0.5 * ts[-1]:
        f.append(Finding("warning", name, None, f"{outage / 1000:.1f} s of {ts[-1] / 1000:.1f} s are outages (gaps > 100 ms): mostly no capacity"))
    return f


def _gaps(ts: np.ndarray):
    from continuum.tracearchive.stats import outages

    return outages(ts)


def check_rates(rates_mbps, name: str, first_line: int = 1) -> list[Finding]:
    """Checks on a per-second source before conversion (all-zero, absurd,
    zero-rate tail), with the source's line numbers."""
    r = np.asarray(rates_mbps, dtype=float)
    f: list[Finding] = []
    if len(r) == 0:
        return [Finding("error", name, None, "no rate samples")]
    if (r <= 0).all():
        f.append(Finding("error", name, None, "every rate is zero: the trace would carry nothing"))
        return f
    if (r < 0).any():
        i = int(np.argmax(r < 0))
        f.append(Finding("error", name, first_line + i, f"negative rate {r[i]}"))
    if r.max() > ABSURD_MBPS:
        i = int(np.argmax(r))
        f.append(Finding("warning", name, first_line + i, f"{r[i]:.0f} Mbit/s is absurd for a cellular link; check the rate unit"))
    nz = np.nonzero(r > 0)[0]
    tail = len(r) - 1 - int(nz[-1])
    if tail:
        f.append(Finding("warning", name, first_line + int(nz[-1]) + 1, f"the last {tail} sample(s) have zero rate; kept with a one-opportunity sentinel at the end so the trace still loops with the full period"))
    return f
