"""Mahimahi traces as numbers. One line = one millisecond timestamp = one
delivery opportunity of 1500 IP bytes (12000 bits); the trace loops with
period = its last timestamp.

Seconds are the intervals (1000k, 1000k+1000] ms, so a trace made of whole
seconds ends exactly at its duration and loops with the right period."""

from __future__ import annotations

from pathlib import Path

import numpy as np

# One delivery opportunity: a 1500-byte IP packet (12000 bits of trace capacity), charged by mm-link
# as 1504 bytes (its TUN header): mahimahi-link's OPPORTUNITY_BYTES (src/lib.rs; tests/orchestrator/test_facts.py).
OPPORTUNITY_IP_BYTES = 1500
OPPORTUNITY_BYTES = OPPORTUNITY_IP_BYTES + 4
OPPORTUNITY_BITS = OPPORTUNITY_IP_BYTES * 8
MAX_TIMESTAMP_MS = 1 << 40  # mahimahi-link's trace parser (src/trace.rs) refuses more: over 34 years


class TraceReadError(ValueError):
    def __init__(self, path: Path | str, line: int | None, why: str):
        self.path, self.line, self.why = str(path), line, why
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {why}")


def read(path: Path) -> np.ndarray:
    """Timestamps (int64 ms). Raises TraceReadError with file and line for a
    line that is not a plain non-negative integer (ASCII digits, surrounding
    whitespace allowed: the emulator's grammar, so `+5`, `5_000` or `-0` are
    refused here as there) or beyond the emulator's limit; ordering is left
    to `checks`."""
    text = Path(path).read_bytes()
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceReadError(path, None, "not text (expected one integer millisecond timestamp per line)") from None
    tokens = text.split(b"\n")
    if tokens and tokens[-1] == b"":
        tokens.pop()
    strict = not text.translate(None, b"0123456789 \t\r\n\x0b\x0c")
    try:
        if not strict:
            raise ValueError("not only digits and whitespace")
        ts = np.array(tokens, dtype=np.int64) if tokens else np.zeros(0, dtype=np.int64)
        if len(ts) and ts.max() > MAX_TIMESTAMP_MS:
            raise ValueError("beyond the emulator's limit")
    except (ValueError, OverflowError):
        # The first problem by line, as the emulator reports it: a decrease
        # before the bad line comes first.
        prev = -1
        for i, tok in enumerate(tokens, 1):
            s = tok.strip()
            if not (s.isdigit() and s.isascii()):
                shown = s.decode(errors="replace")[:40]
                raise TraceReadError(path, i, f"{shown!r} is not a non-negative integer millisecond timestamp") from None
            if int(s) > MAX_TIMESTAMP_MS:
                raise TraceReadError(path, i, f"timestamp {int(s)} ms is absurdly large (over 34 years)") from None
            if int(s) < prev:
                raise TraceReadError(path, i, f"timestamp {int(s)} is smaller than the one before ({prev}); timestamps must not decrease") from None
            prev = int(s)
        raise
    return ts


def write(path: Path, timestamps) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ts = np.asarray(timestamps, dtype=np.int64)
    path.write_bytes(("\n".join(map(str, ts.tolist())) + "\n").encode() if len(ts) else b"")
    return path


def per_second(ts: np.ndarray) -> np.ndarray:
    """Opportunities in each second of one period: second k holds the
    timestamps in (1000k, 1000k+1000]; a timestamp 0 counts in second 0."""
    if len(ts) == 0:
        return np.zeros(0, dtype=np.int64)
    seconds = int(np.ceil(ts[-1] / 1000)) or 1
    idx = np.maximum(ts - 1, 0) // 1000
    return np.bincount(idx, minlength=seconds)


def mbps(counts: np.ndarray) -> np.ndarray:
    return counts * OPPORTUNITY_BITS / 1e6


def from_rates(bps_per_ms: np.ndarray) -> np.ndarray:
    """Timestamps for a rate given per millisecond (bit/s during ms t+1):
    the opportunities are where the cumulative bits cross multiples of 12000,
    i.e. evenly spread within a constant rate, the fraction carried forward.
    Exact integer arithmetic (bit/s x ms = millibits)."""
    rates = np.asarray(bps_per_ms, dtype=np.int64)
    if (rates < 0).any():
        raise ValueError("negative rate")
    cum = np.cumsum(rates) // (OPPORTUNITY_BITS * 1000)
    new = np.diff(cum, prepend=0)
    ms = np.arange(1, len(rates) + 1, dtype=np.int64)
    return np.repeat(ms, new)


def intervals_to_ms(intervals, duration_ms: int | None = None) -> np.ndarray:
    """[(start_ms, end_ms, bit/s), ...] -> bit/s per ms, for `from_rates`.
    Gaps between intervals are zero rate."""
    end = max((e for _, e, _ in intervals), default=0)
    n = int(duration_ms if duration_ms is not None else end)
    out = np.zeros(n, dtype=np.int64)
    for s, e, bps in intervals:
        s, e = max(int(s), 0), min(int(e), n)
        if e > s:
            out[s:e] = int(round(bps))
    return out


def keep_period(ts: np.ndarray, duration_ms: int) -> tuple[np.ndarray, bool]:
    """A trace whose last seconds have no capacity would loop early (the
    period is the last timestamp, so a zero-rate tail vanishes). Add one
    opportunity at the intended end; returns (timestamps, whether added)."""
    if duration_ms <= 0 or (len(ts) and ts[-1] >= duration_ms):
        return ts, False
    return np.append(ts, np.int64(duration_ms)), True
