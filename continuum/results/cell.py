"""A shared cell's results (issue #18): what its scheduler log and the
requests say per class of UE.

- RAN latency of a request: its uplink time (M1: server received - endpoint
  published) less the core's one-way delay to the offload target; what is
  left is the cellular hop (scheduling, signalling, transmission) plus the
  broker's forwarding, well under a millisecond here.
- Start-estimation error: when the uplink scheduler believed a request began
  (SMEC: the SR before the BSR that grew; Tutti: the edge's notice) minus
  when the application published it. SMEC: the first estimate after the
  request was published and before the endpoint's next request counts; a
  request with none was merged into an earlier one (its UE's buffer never
  emptied). Tutti: the edge sends one notice per request that arrived, so
  each pairs with the request the server received just after it.
- Throughput per UE: what left its link in the measured window (mm-link log).
- Share: each UE's part of the cell's resource blocks, slot by slot."""

from __future__ import annotations

import json
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from continuum.config.raw import ESTIMATING_SCHEDULERS, NOTICE_SCHEDULERS
from continuum.results import timeline
from continuum.results.timeline import Timeline


# A notice (Tutti's) pairs with a request the server received at most this long
# after it (the broker's hand-over) or this long before it (the notice's own
# way: the edge agent, the core, the emulator picking it up; 6-12 ms on a
# loaded 2-core machine with a 0.5 ms core). Both stay far below the gap
# between one UE's requests, so a notice cannot pair with the wrong one.
NOTICE_PAIR_NS = (50_000_000, 30_000_000)


@dataclass
class CellLog:
    direction: str
    scheduler: str
    slot_ns: int
    blocks: int
    members: list[str]
    t0_ns: int | None
    slots: pd.DataFrame  # slot, then one column of blocks per member
    starts: pd.DataFrame  # ue (member name), start_slot, detected_slot
    # several cells: (name, scheduler, blocks) each, each member's first cell, and its handovers
    # (member, the cell it is in from then on or "-": in none, slot)
    cells: list[tuple[str, str, int]] = dataclasses.field(default_factory=list)
    start: list[str] = dataclasses.field(default_factory=list)
    moves: list[tuple[str, str, int]] = dataclasses.field(default_factory=list)

    def cell_at(self, member: str, slots: np.ndarray) -> np.ndarray:
        """The cell a member was in at each slot ("-": in none, a handover's interruption)."""
        out = np.full(len(slots), self.start[self.members.index(member)] if self.start else "", dtype=object)
        for m, c, at in self.moves:
            if m == member:
                out[slots >= at] = c
        return out

    def slot_time_ns(self, slot):
        return (self.t0_ns or 0) + slot * self.slot_ns


def read_log(path: Path) -> CellLog | None:
    """mahimahi-link's --cell-log (see its README, Shared cell); None if absent."""
    if not path.exists():
        return None
    head: dict[str, str] = {}
    t0 = None
    rows: list[list[int]] = []
    starts: list[tuple[int, int, int]] = []
    moves: list[tuple[int, str, int]] = []
    with open(path) as f:
        first = f.readline()
        for part in first.split(")", 1)[-1].split():
            k, _, v = part.partition("=")
            head[k] = v
        direction = first.split("(", 1)[1].split(")", 1)[0] if "(" in first else "?"
        for line in f:
            c = line[:1]
            if c.isdigit():
                rows.append([int(x) for x in line.split(" | ", 1)[0].split()])
            elif line.startswith("start "):
                _, ue, s, d = line.split()
                starts.append((int(ue), int(s), int(d)))
            elif line.startswith("t0 "):
                t0 = int(line.split()[1])
            elif line.startswith("move "):
                _, ue, c, at = line.split()
                moves.append((int(ue), c, int(at)))
    members = head.get("members", "").split(",")
    cells = [(n, sch, int(b)) for n, sch, b in (x.split(":") for x in head["cells"].split(","))] if head.get("cells") else []
    slots = pd.DataFrame(rows, columns=["slot", *members]) if rows else pd.DataFrame(columns=["slot", *members])
    st = pd.DataFrame(starts, columns=["ue", "start_slot", "detected_slot"])
    st["ue"] = [members[u] for u in st["ue"]]
    return CellLog(direction, head.get("scheduler", "?"), int(head.get("slot_ns", 500000)), int(head.get("blocks", 0)),
                   members, t0, slots, st, cells, head["start"].split(",") if head.get("start") else [],
                   [(members[u], c, at) for u, c, at in moves])


def share_bins(log: CellLog, tl: Timeline, bin_s: float, cell: str | None = None) -> pd.DataFrame:
    """Each member's share of the cell's blocks per bin of the run's time axis
    (slots the cell was idle in, absent from the log, count as unused); with
    several cells, of `cell`'s blocks, counting each member's blocks while it was there."""
    if log.slots.empty or log.t0_ns is None:
        return pd.DataFrame()
    slot = log.slots["slot"].to_numpy(dtype=np.int64)
    t = tl.seconds(log.slot_time_ns(slot))
    b = np.floor(t / bin_s).astype(int)
    blocks = next((n for name, _, n in log.cells if name == cell), log.blocks)
    per_bin = bin_s * 1e9 / log.slot_ns * blocks
    got = log.slots[log.members]
    if cell is not None:
        got = got.copy()
        for m in log.members:
            got.loc[log.cell_at(m, slot) != cell, m] = 0
    out = got.groupby(b).sum() / per_bin
    out.index = out.index * bin_s
    return out.iloc[1:-1]  # the first and last bins are partial


def start_errors(df: pd.DataFrame, log: CellLog) -> pd.DataFrame:
    """Per request of a cell member: the scheduler's estimated start and its
    error (ms); NaN where the request got no estimate of its own."""
    rows = []
    for ep, g in df[df["endpoint"].isin(log.members)].groupby("endpoint"):
        g = g.sort_values("t_published")
        est = np.sort(log.slot_time_ns(log.starts.loc[log.starts["ue"] == ep, "start_slot"].to_numpy(dtype=np.int64)))
        pub = g["t_published"].to_numpy(dtype=np.int64)
        if log.scheduler in NOTICE_SCHEDULERS:
            # A notice says "this request arrived at the edge": pair it with
            # the request the server received nearest after it (the broker
            # hands the request on a few ms later); a request whose notice
            # was lost gets none, and nothing shifts.
            srv = g["t_server_received"].to_numpy(dtype=float)
            for idx, p, r in zip(g.index, pub, srv):
                e = None
                if not np.isnan(r):
                    j = np.searchsorted(est, r + NOTICE_PAIR_NS[1], side="right") - 1
                    if j >= 0 and r - NOTICE_PAIR_NS[0] <= est[j] and est[j] >= p:
                        e = int(est[j])
                rows.append({"index": idx, "start_estimate_ns": e, "start_error_ms": (e - p) / 1e6 if e is not None else np.nan})
            continue
        nxt = np.append(pub[1:], np.iinfo(np.int64).max)
        # An estimate is dated at slot granularity: one that falls in the slot
        # the request was published in counts as after it.
        k = np.searchsorted(est, pub - log.slot_ns, side="left")
        for idx, p, n, i in zip(g.index, pub, nxt, k):
            e = est[i] if i < len(est) and est[i] < n else None
            rows.append({"index": idx, "start_estimate_ns": e, "start_error_ms": (e - p) / 1e6 if e is not None else np.nan})
    return pd.DataFrame(rows).set_index("index") if rows else pd.DataFrame(columns=["start_estimate_ns", "start_error_ms"])


def _pct(x: pd.Series, q: float) -> float | None:
    x = x.dropna().astype(float)
    return float(np.percentile(x, q)) if len(x) else None


def summarize(run_dir: Path, df: pd.DataFrame, tl: Timeline | None) -> dict | None:
    """The cell's part of summary.json: per class and per UE; None without a cell."""
    man = json.loads((run_dir / "manifest.json").read_text()) if (run_dir / "manifest.json").exists() else {}
    cell = man.get("cell")
    if not cell:
        return None
    logs = {d: read_log(run_dir / "links" / f"cell-{d}.log") for d in ("uplink", "downlink")}
    members = {m["name"]: m for m in cell["members"]}
    one_way = float(cell.get("offload_one_way_ms", 0.0))
    measured = df[(df["phase"] == "measure") & df["endpoint"].isin(members)].copy()
    answered = measured[measured["status"] == "ok"].copy()
    answered["ran_ms"] = answered["uplink_ms"].astype(float) - one_way
    up = logs["uplink"]
    if up is not None and up.scheduler in ESTIMATING_SCHEDULERS:
        members_rows = df[df["endpoint"].isin(members)]
        measured = measured.join(start_errors(members_rows, up))
    window = _measured_window(df)
    out: dict = {"uplink": cell.get("uplink"), "downlink": cell.get("downlink"), "ran_latency": "M1 uplink - core one-way "
                 f"{one_way:g} ms", "classes": {}, "ues": {}}
    for cls in ("lc", "be"):
        names = [n for n, m in members.items() if m["cls"] == cls]
        app = answered[answered["endpoint"].isin(names)]
        sent = measured[measured["endpoint"].isin(names)]
        if not names:
            continue
        c: dict = {"ues": len(names), "requests": int(len(sent)), "answered": int(len(app))}
        if len(sent):
            slo = sent["endpoint"].map(lambda e: members[e]["slo_ms"]).astype(float)
            ok = (sent["status"] == "ok") & (sent["e2e_ms"].astype(float) <= slo)
            c["slo_met"] = float(ok.mean())
            c["ran_ms_p50"], c["ran_ms_p99"] = _pct(app["ran_ms"], 50), _pct(app["ran_ms"], 99)
            if "start_error_ms" in sent:
                c["start_error_ms_p50"], c["start_error_ms_p99"] = _pct(sent["start_error_ms"], 50), _pct(sent["start_error_ms"], 99)
                c["start_not_estimated"] = float(sent["start_error_ms"].isna().mean())
        c["throughput_mbps_uplink"] = _sum([_throughput(run_dir, n, "uplink", window) for n in names])
        c["throughput_mbps_downlink"] = _sum([_throughput(run_dir, n, "downlink", window) for n in names])
        out["classes"][cls] = c
    for name, m in members.items():
        u: dict = {"class": m["cls"], "slo_ms": m["slo_ms"] if m["cls"] == "lc" else None}
        for d, log in logs.items():
            u[f"throughput_mbps_{d}"] = _throughput(run_dir, name, d, window)
            if log is not None and not log.slots.empty and tl is not None:
                u[f"share_{d}"] = _share(log, name, tl, window)
        out["ues"][name] = u
    return out


def _sum(xs: list[float | None]) -> float | None:
    known = [x for x in xs if x is not None]
    return float(sum(known)) if known else None


def _measured_window(df: pd.DataFrame) -> tuple[int, int] | None:
    m = df[df["phase"] == "measure"]
    if m.empty:
        return None
    return int(m["t_drawn"].min()), int(m["t_drawn"].max())


def _throughput(run_dir: Path, name: str, direction: str, window: tuple[int, int] | None) -> float | None:
    """Mbit/s that left the UE's link in the measured window."""
    path = run_dir / "links" / f"{name}.{direction}.log"
    if window is None or not path.exists():
        return None
    init, header = timeline.link_log_header(path)
    if init is None:
        return None
    ev = pd.read_csv(path, sep=" ", skiprows=header, header=None, names=["t", "ev", "a", "b"], dtype={"ev": str})
    t_ns = init * 1_000_000 + ev["t"].to_numpy(dtype=np.int64) * 1_000_000
    inside = (ev["ev"] == "-").to_numpy() & (t_ns >= window[0]) & (t_ns < window[1])
    return float(ev.loc[inside, "a"].sum() * 8 / ((window[1] - window[0]) / 1e9) / 1e6)


def _share(log: CellLog, name: str, tl: Timeline, window: tuple[int, int] | None) -> float | None:
    if window is None or log.t0_ns is None:
        return None
    s = (window[0] - log.t0_ns) // log.slot_ns, (window[1] - log.t0_ns) // log.slot_ns
    inside = log.slots[(log.slots["slot"] >= s[0]) & (log.slots["slot"] < s[1])]
    return float(inside[name].sum() / max(1, (s[1] - s[0]) * log.blocks))


def render(cell: dict):
    """The per-class table."""
    from rich.table import Table

    t = Table(title=f"shared cell: uplink {cell['uplink'] or 'private'}, downlink {cell['downlink'] or 'private'}; "
                    f"RAN latency = {cell['ran_latency']}")
    for h in ("class", "UEs", "requests", "SLO met", "RAN P50 ms", "RAN P99 ms", "start err P50 ms", "start err P99 ms",
              "up Mbit/s", "down Mbit/s"):
        t.add_column(h, justify="left" if h == "class" else "right")
    f = lambda v, fmt="{:.1f}": "-" if v is None else fmt.format(v)  # noqa: E731
    for cls, c in cell["classes"].items():
        t.add_row("latency-critical" if cls == "lc" else "best effort", str(c["ues"]), str(c["requests"]),
                  f(c.get("slo_met"), "{:.1%}") if cls == "lc" else "-", f(c.get("ran_ms_p50")), f(c.get("ran_ms_p99")),
                  f(c.get("start_error_ms_p50")), f(c.get("start_error_ms_p99")),
                  f(c.get("throughput_mbps_uplink")), f(c.get("throughput_mbps_downlink")))
    return t
