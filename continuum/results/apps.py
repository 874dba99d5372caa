"""Per-application results of a mix ([workload.apps]): SLO satisfaction,
end-to-end P50/P99, early drops and goodput, app by app, as SMEC's
evaluation reports them.

SLO satisfaction counts every measured request: one dropped early, timed
out or lost misses its SLO just as a late one does. Goodput is the request
bytes of the measured requests that were answered, over the time from the
first of them drawn to the last answer: what a best-effort app (file
transfer) moved."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd


def apps_of(run_dir: Path) -> dict[str, dict]:
    """The manifest's apps (name -> app, endpoints, slo_ms); {} for older runs."""
    man = run_dir / "manifest.json"
    return json.loads(man.read_text()).get("apps", {}) if man.exists() else {}


def label(df: pd.DataFrame, apps: dict[str, dict]) -> pd.DataFrame:
    """An `app` column: which application each request belongs to."""
    owner = {e: name for name, a in apps.items() for e in a["endpoints"]}
    return df.assign(app=df["endpoint"].map(owner)) if owner else df


def summarize(df: pd.DataFrame, apps: dict[str, dict]) -> dict | None:
    """summary.json's `apps`; None for a run with one app."""
    if len(apps) < 2 or "app" not in df:
        return None
    measured = df[df["phase"] == "measure"]
    out = {}
    for name, a in apps.items():
        sent = measured[measured["app"] == name]
        ok = sent[sent["status"] == "ok"]
        e2e = ok["e2e_ms"].astype(float)
        s: dict = {"app": a["app"], "endpoints": len(a["endpoints"]), "slo_ms": a.get("slo_ms"),
                   "requests": int(len(sent)), "answered": int(len(ok)),
                   "early_drops": int((sent["status"] == "early_drop").sum()),
                   "timeouts": int(sent["status"].isin(["timeout", "unanswered"]).sum()),
                   "e2e_ms_p50": float(np.median(e2e)) if len(e2e) else None,
                   "e2e_ms_p99": float(np.percentile(e2e, 99)) if len(e2e) else None}
        if a.get("slo_ms") and len(sent):
            s["slo_met"] = float(((sent["status"] == "ok") & (sent["e2e_ms"].astype(float) <= a["slo_ms"])).mean())
        if len(ok):  # from the first request drawn to the last answer in
            window_s = (int(ok["t_received"].max()) - int(sent["t_drawn"].min())) / 1e9
            if window_s > 0:
                s["goodput_mbps"] = float(ok["request_bytes"].sum()) * 8 / window_s / 1e6
        out[name] = s
    return out


def render(apps: dict):
    from rich.table import Table

    t = Table(title="per application (SLO met: answered within the SLO, of all measured requests)")
    for h in ("app", "endpoints", "SLO ms", "SLO met", "P50 ms", "P99 ms", "early drops", "timeouts", "goodput Mbit/s"):
        t.add_column(h, justify="left" if h == "app" else "right")

    def f(v, fmt="{:.1f}"):
        return "-" if v is None else fmt.format(v)

    for name, s in apps.items():
        t.add_row(f"{name} ({s['app']})", str(s["endpoints"]), f(s["slo_ms"], "{:g}") if s["slo_ms"] else "best effort",
                  f(s.get("slo_met"), "{:.1%}"), f(s["e2e_ms_p50"]), f(s["e2e_ms_p99"]),
                  f"{s['early_drops']} of {s['requests']}", str(s["timeouts"]), f(s.get("goodput_mbps"), "{:.2f}"))
    return t
