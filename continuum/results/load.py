"""The load a run's servers got, in units of their calibrated capacity, and
whether the calibration still held while it ran: each app's asked and
offered utilisation, the service time calibrated next to the processing
time its server measured in the run, what it served per second, and the
share of the measured window its server was busy (the measured
utilisation, which a load-sensitive experiment checks its premise with).

The service time is the server's `process` call, in the calibration and in
the run alike (t_server_start to t_server_done). Their fast requests, the
10th percentile of each, are compared: under a CFS quota a request either
runs at the node's speed or also waits out a throttle, and how many wait
depends on the load, while the fast ones show the node's speed at any load.
Their ratio is the drift between calibration and run: a busier machine,
another process on the node, a cache that was measured elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd


def summarize(run_dir: Path, df: pd.DataFrame) -> dict | None:
    """summary.json's `load`; None when the run had no calibration."""
    man = run_dir / "manifest.json"
    if not man.exists():
        return None
    m = json.loads(man.read_text())
    cal = (m.get("calibration") or {}).get("apps") or {}
    if not cal:
        return None
    apps = m.get("apps", {})
    queued = m["server_queue"] if "server_queue" in m else _queued(m)
    measured = df[df["phase"] == "measure"] if "phase" in df else df.iloc[0:0]
    out = {}
    for name, c in cal.items():
        if "app" in measured and len(apps) > 1:
            mine = measured[measured["app"] == name]
        else:
            mine = measured
        done = mine[mine["status"] == "ok"]
        s: dict = {"utilisation_asked": c.get("utilisation_asked"), "utilisation_offered": c["utilisation"],
                   "capacity_rps": c["capacity_rps"], "calibrated_ms": c["service_ms"]["median"],
                   "calibrated_mean_ms": c["service_ms"]["mean"], "calibrated_p10_ms": c["service_ms"].get("p10"),
                   "source": c["source"], "concurrency": c["concurrency"]}
        if len(done):
            proc = done["inference_ms"].astype(float)
            start, end = int(mine["t_drawn"].min()), int(done["t_received"].max())
            window_s = (end - start) / 1e9
            s["run_ms"] = float(np.median(proc))
            s["run_mean_ms"] = float(proc.mean())
            s["run_p10_ms"] = float(np.percentile(proc, 10))
            s["drift"] = s["run_p10_ms"] / s["calibrated_p10_ms"] if s["calibrated_p10_ms"] else None
            s["served_rps"] = len(done) / window_s if window_s > 0 else None
            if not queued:  # an admission stage's processing time includes its queue: no busy share
                s["busy"] = float(proc.sum() / 1000 / window_s / max(1, c["concurrency"])) if window_s > 0 else None
        out[name] = s
    return out


def _queued(manifest: dict) -> bool:
    """A run folder written before manifest.json had `server_queue`: its edge systems say."""
    from continuum.edge.registry import SYSTEMS

    return any(s.queued_requests(manifest) for s in SYSTEMS.values())


def render(load: dict):
    from rich.table import Table

    t = Table(title="load, in units of each app's service time calibrated on its node "
                    "(busy: the share of the measured window its server was processing)")
    for h in ("app", "asked", "offered", "capacity /s", "served /s", "service ms: calibrated", "in the run", "P10 run / calibrated", "busy"):
        t.add_column(h, justify="left" if h == "app" else "right")

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    for name, s in load.items():
        t.add_row(name, f(s.get("utilisation_asked"), ".2f"), f(s["utilisation_offered"], ".2f"), f(s["capacity_rps"], ".2f"),
                  f(s.get("served_rps"), ".2f"), f"median {s['calibrated_ms']:.1f}, P10 {f(s['calibrated_p10_ms'], '.1f')} ({s['source']})",
                  f"median {f(s.get('run_ms'), '.1f')}, P10 {f(s.get('run_p10_ms'), '.1f')}", f(s.get("drift"), ".2f"),
                  f(s.get("busy"), ".0%"))
    return t
