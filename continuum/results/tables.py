"""Per-request rows -> latency metrics and the summary (count, median, P95,
P99, max for each metric; no trimming: the tail is the point).

Metrics (thesis names), from the records of workloads/contract.py:
M1 uplink = server received - endpoint published; M2 downlink = endpoint
received - server published; M3 pre-processing = published - data drawn
(drawing, pre-processing proper, framing); M4 server = server published -
server received (queueing + processing). They add up exactly to end-to-end =
received - drawn. `status` is ok, early_drop (an edge manager dropped it
and said so: its budget was spent), timeout (no answer within timeout_s) or
unanswered (the run was stopped first); `dropped` marks requests the server
never received."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from continuum.errors import ContinuumError
from workloads.contract import RECORD_FIELDS

METRICS = {
    "uplink_ms": "M1 uplink",
    "downlink_ms": "M2 downlink",
    "preprocessing_ms": "M3 pre-processing",
    "server_ms": "M4 server",
    "inference_ms": "  of which inference",
    "e2e_ms": "end-to-end",
}


def add_metrics(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    ms = lambda a, b: (df[a] - df[b]) / 1e6  # noqa: E731
    df["uplink_ms"] = ms("t_server_received", "t_published")
    df["downlink_ms"] = ms("t_received", "t_server_published")
    df["preprocessing_ms"] = ms("t_published", "t_drawn")
    df["server_ms"] = ms("t_server_published", "t_server_received")
    df["inference_ms"] = ms("t_server_done", "t_server_start")
    df["e2e_ms"] = ms("t_received", "t_drawn")
    return df


def merge(endpoint_csvs: list[Path], server_csvs: list[Path]) -> pd.DataFrame:
    """All endpoints' rows, with `dropped` (the server never saw the request) and the metrics."""
    parts = []
    for p in endpoint_csvs:
        if not p.exists() or p.stat().st_size == 0:
            continue
        part = pd.read_csv(p)
        missing = [c for c in RECORD_FIELDS if c not in part.columns]
        if missing:
            raise ContinuumError(f"{p}: the records lack the contract's columns {', '.join(missing)} (see docs/workloads.md)")
        parts.append(part)
    if not parts:
        return add_metrics(pd.DataFrame(columns=[*RECORD_FIELDS, "dropped"]))
    df = pd.concat(parts, ignore_index=True)
    seen = set()
    for p in server_csvs:
        if p.exists() and p.stat().st_size > 0:
            seen |= set(pd.read_csv(p, usecols=["request_id"])["request_id"].astype(str))
    df["request_id"] = df["request_id"].astype(str)
    df["dropped"] = (~df["request_id"].isin(seen)).astype(int)
    df = df.sort_values(["repetition", "t_drawn", "endpoint"]).reset_index(drop=True)
    return add_metrics(df)


def summarize(df: pd.DataFrame) -> dict:
    measured = df[df["phase"] == "measure"]
    answered = measured[measured["status"] == "ok"]
    out: dict = {
        "requests": int(len(measured)),
        "answered": int(len(answered)),
        "timeouts": int(measured["status"].isin(["timeout", "unanswered"]).sum()),
        "early_drops": int((measured["status"] == "early_drop").sum()),
        "dropped": int(measured["dropped"].sum()) if "dropped" in measured else 0,
        "warmup_requests": int((df["phase"] == "warmup").sum()),
        "request_bytes_median": float(answered["request_bytes"].median()) if len(answered) else None,
        "metrics": {},
    }
    for col in METRICS:
        x = answered[col].astype(float).to_numpy()
        if len(x) == 0:
            out["metrics"][col] = {"count": 0}
            continue
        out["metrics"][col] = {
            "count": int(len(x)),
            "median": float(np.median(x)),
            "p95": float(np.percentile(x, 95)),
            "p99": float(np.percentile(x, 99)),
            "max": float(x.max()),
            "mean": float(x.mean()),
        }
    if len(answered):
        out["decomposition"] = decomposition(answered)
    return out


PARTS = ("preprocessing_ms", "uplink_ms", "server_ms", "downlink_ms")


def server_too_slow(summary: dict, df: pd.DataFrame, server_csvs: list[Path]) -> dict | None:
    """Why most requests timed out, when it is the server: what it processed took longer per
    request than the endpoints' spacing, so the rest queued there until their timeout (a TCG
    guest ran W1's model at 11 s a request against 2 requests/s: "0 of 20 answered"). None
    when most were answered or the server kept pace."""
    if not summary["requests"] or summary["timeouts"] < summary["requests"] / 2:
        return None
    frames = [pd.read_csv(p) for p in server_csvs if p.exists() and p.stat().st_size > 0]
    served = pd.concat(frames) if frames else pd.DataFrame()
    if served.empty or not {"t_server_start", "t_server_done"} <= set(served.columns):
        return None
    ms = (served["t_server_done"] - served["t_server_start"]).astype(float) / 1e6
    measured = df[df["phase"] == "measure"]
    span_s = (measured["t_drawn"].max() - measured["t_drawn"].min()) / 1e9 if len(measured) > 1 else 0.0
    offered = (len(measured) - 1) / span_s if span_s > 0 else None
    median = float(ms.median())
    if offered is None or median / 1000 * offered < 1:
        return None
    return {"processed": int(len(served)), "median_processing_ms": round(median, 1), "offered_per_s": round(offered, 3)}


def decomposition(answered: pd.DataFrame) -> dict:
    """Where the time of typical and of slow requests goes. Percentiles do not
    add up (the P99 of each part comes from different requests), so each
    group is a set of whole requests and each part is their mean: the parts
    then sum exactly to the group's mean end-to-end latency.
    around_median: the requests between the end-to-end P45 and P55 (at least
    the one nearest the median); slowest_1pct: those at or above the P99."""
    e2e = answered["e2e_ms"].astype(float)
    p45, p50, p55, p99 = np.percentile(e2e, [45, 50, 55, 99])
    near = answered[(e2e >= p45) & (e2e <= p55)]
    if near.empty:
        near = answered.loc[[(e2e - p50).abs().idxmin()]]
    slow = answered[e2e >= p99]
    groups = {}
    for name, g, band in (("around_median", near, [float(p45), float(p55)]), ("slowest_1pct", slow, [float(p99), float(e2e.max())])):
        parts = {c: float(g[c].mean()) for c in PARTS}
        net = parts["uplink_ms"] + parts["downlink_ms"]
        groups[name] = {
            "requests": int(len(g)), "e2e_band_ms": band, "mean_e2e_ms": float(g["e2e_ms"].mean()),
            "mean_parts_ms": parts, "network_share": net / max(1e-9, float(g["e2e_ms"].mean())),
            "uplink_share_of_network": parts["uplink_ms"] / max(1e-9, net),
        }
    return groups


def write(df: pd.DataFrame, summary: dict, run_dir: Path) -> None:
    df.to_csv(run_dir / "requests.csv", index=False)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def render(summary: dict):
    """The summary as rich tables: the metrics, the load, each edge system's own, then per
    application (a mix) and the shared cell's classes, if the run had them."""
    from rich.console import Group
    from rich.markup import escape

    from continuum.edge.registry import SYSTEMS
    from continuum.results import apps, cell, events, load

    parts = [_metrics_table(summary)]
    if "load" in summary:
        parts.append(load.render(summary["load"]))
        if any(e["label"].startswith("load ") for e in summary.get("timeline") or []):
            parts.append(escape("note: [[timeline]] load steps change the offered load while the run goes; the table above "
                                "is the file's load before the first step (timeline.csv has each step)"))
    for s in SYSTEMS.values():
        own = summary.get(s.summary_key) if s.summary_key else None
        table = s.render(own) if own else None
        if table is not None:
            parts.append(table)
    if "server_too_slow" in summary:
        w = summary["server_too_slow"]
        parts.append(f"[yellow]note: most requests timed out waiting for the server: it processed {w['processed']}, a median "
                     f"{w['median_processing_ms']:.0f} ms each, while {w['offered_per_s']:g} arrived per second; the node is too "
                     "slow for this load (lower workload.rate, give the node more CPUs, or raise timeout_s; a qemu guest under "
                     "TCG emulates its CPU in software: docs/experiment-file.md)[/]")
    if "apps" in summary:
        parts.append(apps.render(summary["apps"]))
    if "cell" in summary:
        parts.append(cell.render(summary["cell"]))
    if summary.get("timeline"):
        parts.append(events.render(summary["timeline"]))
    if summary.get("srsran"):
        k = summary["srsran"]
        m = k["median"]
        parts.append(f"srsRAN's cell (srsENB, {k['periods']} one-second reports while measuring): median MCS "
                     f"{m['dl_mcs']:g} down / {m['ul_mcs']:g} up, BLER {100 * m['dl_bler']:.1f}% / {100 * m['ul_bler']:.1f}%, "
                     f"CQI {m['dl_cqi']:g}; peak {k['max_dl_mbps']:g} Mbit/s down, {k['max_ul_mbps']:g} up")
        if "pace" in k:
            parts.append(srsran_pace(k["pace"]))
    return Group(*parts)


# Below this pace every delay srsRAN adds in TTIs (SR period, grant pipeline, HARQ) is stretched by over
# 10%. ZMQ's radio sleeps a subframe's time for each subframe, so even an idle stack runs a little behind.
SRSRAN_PACE_FLOOR = 0.9


def srsran_pace(p: dict) -> str:
    """The stack's TTIs against the wall clock, with a warning when it fell behind: its ZMQ radio has no
    clock, so on a machine without CPU to spare every delay srsRAN adds is stretched by the machine."""
    text = (f"srsRAN's pace: {100 * p['pace']:.1f}% of real time, a TTI every {1 / p['pace']:.2f} ms ({p['seconds']:g} s "
            f"of srsENB's TTIs against the wall clock, from its MAC pcap)")
    if p["pace"] < SRSRAN_PACE_FLOOR:
        text += ("\n[yellow]srsRAN fell behind real time: its delays here are stretched by this machine's CPU "
                 "(give it more cores, or fewer other processes), not only the stack's[/]")
    return text


def _metrics_table(summary: dict):
    from rich.table import Table

    t = Table(title=f"{summary['answered']} of {summary['requests']} requests answered "
                    f"({summary['timeouts']} timeouts, {summary['dropped']} dropped"
                    + (f", {summary['early_drops']} dropped early at the edge (budget spent)" if summary.get("early_drops") else "") + "); milliseconds")
    for h in ("metric", "count", "median", "P95", "P99", "max"):
        t.add_column(h, justify="left" if h == "metric" else "right")
    for col, label in METRICS.items():
        s = summary["metrics"][col]
        if not s.get("count"):
            t.add_row(label, "0", "-", "-", "-", "-")
            continue
        t.add_row(label, str(s["count"]), *(f"{s[k]:.2f}" for k in ("median", "p95", "p99", "max")))
    return t
