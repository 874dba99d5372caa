"""Public dataset formats -> Mahimahi traces. Each reader turns its source
into rate intervals [(start_ms, end_ms, bit/s)]; `to_trace` makes the
opportunities (r Mbit/s for a second = r*1e6/12000 of them, spread evenly,
the fraction carried forward) and keeps a zero-rate tail in the period.

Formats:
- per-second: "seconds Mbit/s" per line (the Lumos5G-derived set);
- gnettrack: G-NetTrack Pro CSV (the Irish 5G dataset): DL_bitrate /
  UL_bitrate in kbit/s, one row per second, with duplicated seconds and gaps;
- sixcol: the Norway HSDPA / Belgium 4G logs: six columns, the last two
  being bytes received and milliseconds since the previous row;
- csv: any time,rate table, with the units named."""

from __future__ import annotations

import csv as csvmod
import datetime as dt
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from continuum.tracearchive import checks, mahimahi

RATE_UNITS = {"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "Bps": 8, "kBps": 8e3, "MBps": 8e6, "GBps": 8e9}
TIME_UNITS = {"s": 1000.0, "ms": 1.0, "us": 1e-3}
FORMATS = ("per-second", "gnettrack", "sixcol", "csv")


class ConvertError(ValueError):
    pass


@dataclass
class Source:
    """A source read into rate intervals, with notes for the user."""
    name: str
    intervals: list[tuple[int, int, float]]
    duration_ms: int
    sample_mbps: list[float]
    first_line: int = 1
    notes: list[str] = field(default_factory=list)


def _rate_unit(unit: str) -> float:
    if unit in RATE_UNITS:
        return RATE_UNITS[unit]
    if "B" not in unit:  # bits, any case: Mbps, MBit/s spelled mbps...
        for k, v in RATE_UNITS.items():
            if "B" not in k and unit.lower() == k:
                return v
    raise ConvertError(f"rate unit {unit!r}: valid units are {', '.join(RATE_UNITS)} (b = bits, B = bytes)")


def _seconds_series(name: str, seconds: list[int], rates_bps: list[float], gap_fill: str, notes: list[str]) -> Source:
    """One rate per whole second -> intervals; duplicate seconds are averaged,
    missing ones filled (hold the previous rate, or zero)."""
    by_sec: dict[int, list[float]] = {}
    for s, r in zip(seconds, rates_bps):
        by_sec.setdefault(s, []).append(r)
    dups = sum(len(v) - 1 for v in by_sec.values())
    if dups:
        notes.append(f"{dups} duplicated second(s): their samples are averaged")
    first, last = min(by_sec), max(by_sec)
    intervals, samples, missing, prev = [], [], 0, 0.0
    for s in range(first, last + 1):
        if s in by_sec:
            r = float(np.mean(by_sec[s]))
        else:
            missing += 1
            r = prev if gap_fill == "hold" else 0.0
        prev = r
        k = s - first
        intervals.append((k * 1000, (k + 1) * 1000, r))
        samples.append(r / 1e6)
    if missing:
        notes.append(f"{missing} missing second(s) filled with {'the previous rate' if gap_fill == 'hold' else 'zero'} (--gap-fill)")
    return Source(name, intervals, (last - first + 1) * 1000, samples, notes=notes)


def read_per_second(path: Path, gap_fill: str = "hold") -> Source:
    seconds, rates = [], []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        parts = line.replace(",", " ").split()
        if not parts or parts[0].startswith("#"):
            continue
        try:
            t, r = float(parts[0]), float(parts[1])
        except (ValueError, IndexError):
            raise ConvertError(f"{path}:{i}: expected 'seconds Mbit/s', got {line.strip()[:60]!r}") from None
        seconds.append(int(round(t)))
        rates.append(r * 1e6)
    if not seconds:
        raise ConvertError(f"{path}: no 'seconds Mbit/s' lines")
    return _seconds_series(str(path), seconds, rates, gap_fill, [])


def read_gnettrack(path: Path | None, direction: str, gap_fill: str = "hold", text: str | None = None, name: str | None = None) -> Source:
    column = {"down": "DL_bitrate", "up": "UL_bitrate"}[direction]
    name = name or str(path)
    if text is None:
        if path is None:
            raise ConvertError("read_gnettrack needs a path or the text")
        text = Path(path).read_text(errors="replace")
    rows = csvmod.DictReader(io.StringIO(text))
    if not rows.fieldnames or column not in rows.fieldnames or "Timestamp" not in rows.fieldnames:
        raise ConvertError(f"{name}: not a G-NetTrack CSV: needs the columns Timestamp and {column}")
    seconds, rates = [], []
    for i, row in enumerate(rows, 2):
        try:
            t = dt.datetime.strptime(row["Timestamp"].strip(), "%Y.%m.%d_%H.%M.%S")
            r = float(row[column])
        except (ValueError, TypeError):
            raise ConvertError(f"{name}:{i}: bad Timestamp {row.get('Timestamp')!r} or {column} {row.get(column)!r}") from None
        seconds.append(int(t.timestamp()))
        rates.append(r * 1e3)  # kbit/s
    if not seconds:
        raise ConvertError(f"{name}: no rows")
    return _seconds_series(name, seconds, rates, gap_fill, [])


def read_sixcol(path: Path) -> Source:
    intervals, samples, t = [], [], 0
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise ConvertError(f"{path}:{i}: expected six columns (time, time, latitude, longitude, bytes, ms), got {len(parts)}")
        try:
            nbytes, ms = float(parts[4]), float(parts[5])
        except ValueError:
            raise ConvertError(f"{path}:{i}: bytes and milliseconds must be numbers") from None
        if ms <= 0:
            raise ConvertError(f"{path}:{i}: elapsed milliseconds must be > 0, got {parts[5]}")
        end = t + int(round(ms))
        bps = nbytes * 8 / (ms / 1000)
        intervals.append((t, end, bps))
        samples.append(bps / 1e6)
        t = end
    if not intervals:
        raise ConvertError(f"{path}: no rows")
    return Source(str(path), intervals, t, samples)


def read_csv(path: Path, time_col: str, rate_col: str, time_unit: str = "s", rate_unit: str = "mbps", delimiter: str = ",") -> Source:
    if time_unit not in TIME_UNITS:
        raise ConvertError(f"time unit {time_unit!r}: valid units are {', '.join(TIME_UNITS)}")
    scale = _rate_unit(rate_unit)
    rows = list(csvmod.reader(Path(path).read_text().splitlines(), delimiter=delimiter))
    if not rows:
        raise ConvertError(f"{path}: empty")
    header = rows[0]

    def col(c: str) -> int:
        if c in header:
            return header.index(c)
        if c.isdigit() and int(c) < len(header):
            return int(c)
        raise ConvertError(f"{path}: no column {c!r}; columns: {', '.join(header)}")

    ti, ri = col(time_col), col(rate_col)
    body = rows[1:] if not all(_is_number(x) for x in header) else rows
    first_line = 2 if body is not rows else 1
    times, rates = [], []
    for i, row in enumerate(body, first_line):
        if not row:
            continue
        try:
            times.append(float(row[ti]) * TIME_UNITS[time_unit])
            rates.append(float(row[ri]) * scale)
        except (ValueError, IndexError):
            raise ConvertError(f"{path}:{i}: time {row[ti] if ti < len(row) else ''!r} or rate is not a number") from None
    if not times:
        raise ConvertError(f"{path}: no rows")
    t0 = times[0]
    times = [t - t0 for t in times]
    for i in range(1, len(times)):
        if times[i] < times[i - 1]:
            raise ConvertError(f"{path}:{first_line + i}: time goes backwards")
    step = float(np.median(np.diff(times))) if len(times) > 1 else 1000.0
    ends = times[1:] + [times[-1] + step]
    intervals = [(int(round(s)), int(round(e)), r) for s, e, r in zip(times, ends, rates)]
    return Source(str(path), intervals, int(round(ends[-1])), [r / 1e6 for r in rates], first_line)


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def scaled(src: Source, factor: float) -> Source:
    """The same source with every rate multiplied by factor (a stand-in for an
    unrecorded direction, e.g. a 5G uplink from its downlink)."""
    return Source(
        name=f"{src.name} x{factor:g}",
        intervals=[(a, b, r * factor) for a, b, r in src.intervals],
        duration_ms=src.duration_ms,
        sample_mbps=[r * factor for r in src.sample_mbps],
        first_line=src.first_line,
        notes=[*src.notes, f"rates scaled by {factor:g}"],
    )


def skipped(src: Source, seconds: int) -> Source:
    """A one-rate-per-second source without its first `seconds` (e.g. the idle
    start of a recording, before the transfer began)."""
    cut = seconds * 1000
    if cut >= src.duration_ms:
        raise ConvertError(f"{src.name}: cannot skip {seconds} s of a {src.duration_ms / 1000:g} s source")
    return Source(
        name=f"{src.name} from {seconds} s",
        intervals=[(max(a, cut) - cut, b - cut, r) for a, b, r in src.intervals if b > cut],
        duration_ms=src.duration_ms - cut,
        sample_mbps=src.sample_mbps[seconds:],
        first_line=src.first_line + seconds,
        notes=[*src.notes, f"first {seconds} s left out"],
    )


def to_trace(src: Source) -> tuple[np.ndarray, list[checks.Finding]]:
    """The trace, and the findings on its source (errors mean: do not write)."""
    findings = checks.check_rates(src.sample_mbps, src.name, src.first_line)
    if any(f.level == "error" for f in findings):
        return np.zeros(0, dtype=np.int64), findings
    ts = mahimahi.from_rates(mahimahi.intervals_to_ms(src.intervals, src.duration_ms))
    ts, _ = mahimahi.keep_period(ts, src.duration_ms)
    return ts, findings
