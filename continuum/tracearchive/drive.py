"""Handovers from a recorded drive: the times at which a G-NetTrack log (the
Irish 5G dataset's driving logs: one row per second with the serving cell's
CellID) changes cell. The times are on the clock of the trace converted from
the same log (convert.read_gnettrack: second 0 is the log's first second), so
replaying both puts each handover where the recorded rates show it.

Bad rows (a timestamp or CellID that does not parse) are errors naming the
file and line; rows whose timestamp goes back are left out and named in a
note; gaps (seconds with no row) are notes naming the lines around them: a cell change across a gap happened somewhere in it, and is placed at
the first row after it."""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass

from continuum.tracearchive.convert import ConvertError
from continuum.tracearchive.index import Entry


@dataclass(frozen=True)
class Handover:
    t_s: int  # seconds after the log's first second
    source: str  # the serving cell before
    target: str  # and after
    line: int  # the row of the log where the new cell first appears


@dataclass(frozen=True)
class Drive:
    handovers: tuple[Handover, ...]
    duration_s: int  # the log's span (first to last second, inclusive)
    notes: tuple[str, ...]


def read_cells(text: str, name: str) -> Drive:
    """Every change of the serving cell in a G-NetTrack CSV, in time order."""
    rows = csv.DictReader(io.StringIO(text))
    if not rows.fieldnames or "Timestamp" not in rows.fieldnames or "CellID" not in rows.fieldnames:
        raise ConvertError(f"{name}: not a G-NetTrack CSV with cells: needs the columns Timestamp and CellID")
    errors: list[str] = []
    back: list[int] = []  # rows earlier than the row before (the phone's clock stepped back): left out
    seen: list[tuple[int, str, int]] = []  # (second, cell, line)
    for line, row in enumerate(rows, 2):
        stamp, cell = (row.get("Timestamp") or "").strip(), (row.get("CellID") or "").strip()
        try:
            t = int(dt.datetime.strptime(stamp, "%Y.%m.%d_%H.%M.%S").timestamp())
        except ValueError:
            errors.append(f"{name}:{line}: bad Timestamp {stamp!r} (expected YYYY.MM.DD_HH.MM.SS)")
            continue
        if not cell.isdigit():
            errors.append(f"{name}:{line}: bad CellID {cell!r} (expected the serving cell's number)")
            continue
        if seen and t < seen[-1][0]:
            back.append(line)
            continue
        seen.append((t, cell, line))
    if errors:
        more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
        raise ConvertError("; ".join(errors[:10]) + more)
    if not seen:
        raise ConvertError(f"{name}: no rows")
    first = seen[0][0]
    notes = []
    if back:
        lines = ", ".join(map(str, back[:10])) + (f" and {len(back) - 10} more" if len(back) > 10 else "")
        notes.append(f"{name}: line(s) {lines} go back in time (the row before is later): left out")
    handovers = []
    for (t0, c0, l0), (t1, c1, l1) in zip(seen, seen[1:]):
        if t1 - t0 > 1:
            notes.append(f"{name}:{l0}-{l1}: {t1 - t0 - 1} second(s) without a row"
                         + (f"; the change from cell {c0} to {c1} is placed at line {l1}" if c1 != c0 else ""))
        if c1 != c0:
            handovers.append(Handover(t1 - first, c0, c1, l1))
    return Drive(tuple(handovers), seen[-1][0] - first + 1, tuple(notes))


def of_entry(entry: Entry, mirror=None) -> Drive:
    """The handovers of an archive entry converted from a G-NetTrack log (its
    downlink's source), on its traces' clock (less the seconds it skips)."""
    from continuum.tracearchive import fetch

    conv = entry.convert.get("down") or entry.convert.get("up")
    if entry.kind != "external" or conv is None or conv.format != "gnettrack":
        raise ConvertError(f"trace {entry.id!r} was not converted from a G-NetTrack drive log, which records the "
                           "serving cell: no handovers to replay (irish-5g-* entries are)")
    src = fetch.source_path(entry, conv.source, mirror, download=False, say=lambda _m: None, remember=False)
    text = fetch._member_text(src, conv.member) if conv.member else src.read_text(errors="replace")
    d = read_cells(text, f"{src.name}:{conv.member or ''}")
    if conv.skip_s:
        d = Drive(tuple(Handover(h.t_s - conv.skip_s, h.source, h.target, h.line) for h in d.handovers
                        if h.t_s >= conv.skip_s), d.duration_s - conv.skip_s, d.notes)
    return d
