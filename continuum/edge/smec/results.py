"""SMEC's records in a run's results: its network-time estimate, budget and
drop reason beside each request (raw/smec-NODE[-APP].csv, written by the
servers' EdgeTiming), and how close the estimate came."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


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
