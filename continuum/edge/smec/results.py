"""SMEC's records in a run's results: its network-time estimate, budget and
drop reason beside each request (raw/smec-NODE[-APP].csv, written by the
servers' EdgeTiming), and how close the estimate came."""

from __future__ import annotations

import json
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from continuum.results.timeline import Panel, Timeline


def add_estimates(df: pd.DataFrame, smec_csvs: list[Path]) -> pd.DataFrame:
    """SMEC's estimates beside each request: its network-time estimate and
    the truth (uplink + downlink on the shared clock), its budget, and why it
    was dropped early ("budget") or processed with a spent budget ("refresh")."""
    parts = [pd.read_csv(p) for p in smec_csvs if p.exists() and p.stat().st_size > 0]
    if not parts:
        return df
    est = pd.concat(parts, ignore_index=True).drop_duplicates("request_id")
    est["request_id"] = est["request_id"].astype(str)
    keep = ["request_id", "network_est_ns", "budget_ns"] + (["drop_reason"] if "drop_reason" in est else [])
    df = df.merge(est[keep], on="request_id", how="left")
    df["network_est_ms"] = df["network_est_ns"] / 1e6
    df["network_true_ms"] = df["uplink_ms"] + df["downlink_ms"]
    df["network_err_ms"] = df["network_est_ms"] - df["network_true_ms"]
    df["budget_ms"] = df["budget_ns"] / 1e6
    return df.drop(columns=["network_est_ns", "budget_ns"])


def estimates(df: pd.DataFrame) -> dict | None:
    """How close SMEC's network estimate came (measured requests that came
    back, answered or dropped early: both crossed the network both ways)."""
    if "network_err_ms" not in df:
        return None
    m = df[(df["phase"] == "measure") & df["status"].isin(["ok", "early_drop"])]
    err = m["network_err_ms"].dropna().abs()
    out: dict = {"requests": int(len(m)), "estimated": int(len(err))}
    if len(err):
        out.update({"network_abs_error_ms_p50": float(np.percentile(err, 50)), "network_abs_error_ms_p90": float(np.percentile(err, 90)),
                    "network_abs_error_ms_max": float(err.max())})
    return out


def summarize(run_dir: Path, df: pd.DataFrame) -> dict | None:
    """SMEC's part of summary.json: its network estimates' error (None: no estimates in the run)."""
    return estimates(df)


def render(part: dict) -> None:
    """Nothing printed: the estimates' error is in summary.json and the manager's figure."""
    return None


def time_series(run_dir: Path, df: pd.DataFrame, tl: Timeline) -> list[Panel]:
    """The manager's decisions (what each app held, from raw/smec-decisions.csv: a
    step at each raise and return) and each request's budget when its processing
    started, for report.html's time axis."""
    from continuum.results.timeline import Line, Panel

    panels = []
    path = run_dir / "raw" / "smec-decisions.csv"
    dec = pd.read_csv(path).dropna(subset=["cpus"]) if path.exists() and path.stat().st_size > 0 else pd.DataFrame()
    if not dec.empty:
        man = json.loads((run_dir / "manifest.json").read_text()) if (run_dir / "manifest.json").exists() else {}
        # several apps in quota mode share the node's CPUs by weight: the steps are what it decides (as smec_manager.png)
        weights = dec["app"].nunique() > 1 and (man.get("edge_manager") or {}).get("mode", "quota") == "quota"
        col, what = ("units", "CPU weight (steps)") if weights else ("cpus", "CPUs held")
        lines = []
        for app, d in dec.groupby("app", sort=False):
            t = list(tl.seconds(d["t_ns"])) + [tl.workload_end_s]
            y = list(d[col]) + [d[col].iloc[-1]]
            lines.append(Line(f"SMEC: {app} {what}", t, y, "steps", str(app)))
        panels.append(Panel(f"SMEC: {what} per app", tuple(lines)))
    if "budget_ms" in df:
        r = df.dropna(subset=["budget_ms"])
        groups = r.groupby("app", sort=False) if "app" in r and r["app"].nunique() > 1 else [("", r)]
        lines = [Line(f"SMEC: {app + ' ' if app else ''}budget at processing start", tl.seconds(g["t_server_start"]),
                      g["budget_ms"], "markers", str(app) or None) for app, g in groups]
        if lines:
            panels.append(Panel("SMEC: request budget ms", tuple(lines)))
    return panels
