"""One time axis for every time-series of a run. Requests, node samples and
link logs each start their own clock (first request, sampler start, link
start); plotted on those, three figures of one run cannot be read together.
Everything here is put on seconds since the first *measured* request was
drawn: the warm-up lies at negative times, the wind-down after the last
answer past the measured window, and both can be shaded the same way in
every figure."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd




@dataclass(frozen=True)
class Line:
    """One series of a time-series panel, in no plotting library's terms (an
    edge system's decisions, drawn by report.html): x in seconds on the
    run's axis; kind "steps" (a value held until the next), "lines" or "markers"."""

    name: str
    x: Any
    y: Any
    kind: str = "lines"
    app: str | None = None  # whose: drawn in the app's colour where the page has one


@dataclass(frozen=True)
class Panel:
    """A row of report.html's time series: its axis title and its lines."""

    title: str
    lines: tuple[Line, ...]
    log: bool = False


@dataclass(frozen=True)
class Timeline:
    origin_ns: int  # epoch ns of the first measured request (the first request if none was measured)
    warmups: tuple[tuple[float, float], ...]  # per repetition: warm-up start, end (s since origin)
    workload_end_s: float  # the last answer (or last request drawn) of the run
    events: tuple[tuple[float, str], ...] = ()  # [[timeline]]'s changes as applied: (s since origin, label)

    def seconds(self, epoch_ns: Any) -> Any:
        """Epoch ns (a number or a Series) -> seconds on the run's axis."""
        return (epoch_ns - self.origin_ns) / 1e9


def of_requests(df: pd.DataFrame) -> Timeline | None:
    """The run's timeline from its request rows (None without requests)."""
    if not len(df):
        return None
    measured = df[df["phase"] == "measure"]
    origin = int((measured if len(measured) else df)["t_drawn"].min())
    warmups = []
    for _, rep in df.groupby("repetition"):
        warm = rep[rep["phase"] == "warmup"]
        if not len(warm):
            continue
        meas = rep[rep["phase"] == "measure"]
        end = meas["t_drawn"].min() if len(meas) else warm["t_drawn"].max()
        warmups.append(((warm["t_drawn"].min() - origin) / 1e9, (end - origin) / 1e9))
    ends = pd.concat([df["t_received"].dropna(), df["t_drawn"]])
    ends = ends[ends > 0]
    return Timeline(origin, tuple(warmups), float((ends.max() - origin) / 1e9))


def link_log_header(path: Path) -> tuple[int | None, int]:
    """An mm-link-format log's clock start (epoch ms) and its header line count."""
    init, n = None, 0
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            n += 1
            if line.startswith("# init timestamp:"):
                init = int(line.split(":", 1)[1])
    return init, n


def link_bins(path: Path, tl: Timeline, bin_s: float = 0.5) -> pd.DataFrame | None:
    """An mm-link log on the run's time axis, in bins of bin_s: capacity and
    delivered Mbit/s, mean queueing delay of the packets that left, drops.
    Bins the log does not cover whole (the first and the last) are left out:
    a partial bin would read as a fall in capacity. None without a log."""
    if not path.exists():
        return None
    st = path.stat()  # the plots and report.html read the same logs: parsed once per build (100 UEs: 200 logs of ~2M lines)
    b = _link_bins(path, st.st_mtime_ns, st.st_size, tl.origin_ns, bin_s)
    return None if b is None else b.copy()


@functools.lru_cache(maxsize=512)
def _link_bins(path: Path, _mtime_ns: int, _size: int, origin_ns: int, bin_s: float) -> pd.DataFrame | None:
    init, header = link_log_header(path)
    if init is None:
        return None
    ev = pd.read_csv(path, sep=" ", skiprows=header, header=None, names=["t", "ev", "a", "b"], dtype={"ev": str})
    if ev.empty:
        return None
    at = (init * 1_000_000 + ev["t"].to_numpy(dtype=np.int64) * 1_000_000 - origin_ns) / 1e9
    ev["bin"] = np.floor(at / bin_s).astype(int)
    first = int(np.ceil((init * 1_000_000 - origin_ns) / 1e9 / bin_s))
    last = int(np.floor(at.max() / bin_s)) - 1  # the bin holding the log's last event is partial
    scale = 8 / bin_s / 1e6
    idx = pd.RangeIndex(first, last + 1)
    dep = ev[ev["ev"] == "-"]
    out = pd.DataFrame({
        "capacity_mbps": ev[ev["ev"] == "#"].groupby("bin")["a"].sum().reindex(idx, fill_value=0) * scale,
        "delivered_mbps": dep.groupby("bin")["a"].sum().reindex(idx, fill_value=0) * scale,
        "queue_delay_ms": dep.groupby("bin")["b"].mean().reindex(idx),
        "drops": ev[ev["ev"] == "d"].groupby("bin")["a"].sum().reindex(idx, fill_value=0),
    }, index=idx)
    out.insert(0, "t_s", out.index * bin_s)
    return out.reset_index(drop=True)


def node_samples(path: Path, tl: Timeline) -> pd.DataFrame | None:
    """nodes.csv with a t_s column on the run's time axis."""
    if not path.exists():
        return None
    s = pd.read_csv(path)
    if s.empty:
        return None
    s["t_s"] = tl.seconds(s["time_ns"])
    return s


def links_together(links: dict[str, dict[str, pd.DataFrame | None]], direction: str,
                   shared_cell: bool = False) -> pd.DataFrame | None:
    """Many endpoints' link bins of one direction as one series (indexed by
    t_s): capacity and delivery summed over the links, the median and the
    worst link's queueing delay per bin. In a shared cell every member's log
    holds the cell's opportunities, so the capacity is the cell's (their
    largest), not a sum. attrs["links"]: how many logs. None without any."""
    bins = [b.set_index("t_s") for per in links.values() if (b := per.get(direction)) is not None and not b.empty]
    if not bins:
        return None
    caps = pd.concat([b["capacity_mbps"] for b in bins], axis=1)
    queue = pd.concat([b["queue_delay_ms"] for b in bins], axis=1)
    out = pd.DataFrame({
        "capacity_mbps": caps.max(axis=1) if shared_cell else caps.sum(axis=1, min_count=1),
        "delivered_mbps": pd.concat([b["delivered_mbps"] for b in bins], axis=1).sum(axis=1, min_count=1),
        "queue_median_ms": queue.median(axis=1),
        "queue_max_ms": queue.max(axis=1),
    }).sort_index()
    out.attrs["links"] = len(bins)
    return out


MANY_NODES = 6  # more nodes than this in one panel: the endpoints drawn as one group (plots and report.html)


def endpoint_nodes(names: list[str], roles: dict) -> list[str]:
    """The endpoints among these nodes, to be drawn as one group when there are more than MANY_NODES
    nodes (none otherwise): by the manifest's role, by name where it has none (older runs)."""
    if len(names) <= MANY_NODES:
        return []
    return [n for n in names if (roles.get(n) or {}).get("role", "endpoint" if str(n).startswith("endpoint") else "") == "endpoint"]
