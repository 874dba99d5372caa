"""Admission control's results (workload edge_tasks: MOSAIC or a baseline on
the edge node), as MOSAIC's evaluation reports them, overall and per class.

The same definitions serve `continuum run` (tasks of the measured requests)
and `python -m continuum.edge.mosaic.standalone` (every task drawn), so their numbers compare:

- hit: finished within its deadline, of all tasks that arrived (one never
  started or never finished misses);
- p99_ms: response time (arrival at the edge to finish) of the finished;
- starved: waited longer than 3 x its deadline to start, or never started;
- tps: tasks finished, over the window the tasks arrived in;
- mission: finished at all, of the tiers 1-2 (MOSAIC's three
  mission-critical classes);
- queue: the queue's depth at each 100-ms tick;
- decisions: the time of each admission decision (MOSAIC's; the
  starvation guard's bypass is not a decision and is left out).

A request that never reached the edge (lost on the link) has no task row:
it counts as arrived and missed, in no class."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mosaic.classes import CLASSES

if TYPE_CHECKING:
    from continuum.results.timeline import Panel, Timeline

TIERS = {c.name: c.tier for c in CLASSES}


PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}  # the syscall's number


def hardware_counters() -> tuple[bool, str]:
    """Whether this kernel lets a process count its own instructions
    (perf_event_open, PERF_TYPE_HARDWARE, user space only), and why not."""
    nr = PERF_EVENT_OPEN.get(platform.machine())
    if nr is None:
        return False, f"perf_event_open not probed on {platform.machine()}"
    attr = bytearray(128)  # struct perf_event_attr: type 0 (hardware), size, config 1 (instructions)
    struct.pack_into("IIQ", attr, 0, 0, len(attr), 1)
    struct.pack_into("Q", attr, 40, (1 << 0) | (1 << 5) | (1 << 6))  # disabled, exclude_kernel, exclude_hv
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(nr, ctypes.create_string_buffer(bytes(attr)), 0, -1, -1, 0)
    if fd >= 0:
        os.close(fd)
        return True, "perf_event_open counts instructions here"
    e = ctypes.get_errno()
    return False, f"perf_event_open(instructions) failed: {errno.errorcode.get(e, e)}" + (" (no PMU exposed)" if e == errno.ENOENT else "")


def rapl() -> tuple[bool, str]:
    path = Path("/sys/class/powercap/intel-rapl:0/energy_uj")
    try:
        int(path.read_text())
        return True, f"{path} is readable"
    except (OSError, ValueError) as e:
        return False, f"{path}: {e.strerror if isinstance(e, OSError) else e}"


def sources() -> dict[str, str]:
    """What the results rest on, probed on this host rather than assumed."""
    pmu, why = hardware_counters()
    power, pwhy = rapl()
    return {"interference_source": "measured slowdown of service time beside another class; "
                                   + ("hardware counters exist here, but the executor does not read them" if pmu else f"no hardware counters: {why}"),
            "power": "not measured (the executor does not read RAPL)" if power else f"not measured: no RAPL ({pwhy})"}


def _p(x: pd.Series, q: float) -> float | None:
    x = x.dropna().astype(float)
    return float(np.percentile(x, q)) if len(x) else None


def task_metrics(tasks: pd.DataFrame, window_s: float, unseen: int = 0) -> dict:
    """The overall and per-class numbers of a tasks table (columns cls,
    tier, deadline_ms, wait_ms: empty if never started, response_ms: empty
    if unfinished, hit, ok); `unseen` tasks arrived but have no row."""
    ok = tasks["ok"].astype(int) == 1
    hit = ok & (tasks["hit"].astype(int) == 1)
    wait = tasks["wait_ms"].astype(float)
    starved = wait.isna() | (wait > 3 * tasks["deadline_ms"].astype(float))
    n = len(tasks) + unseen
    mission = tasks["tier"].astype(int) <= 2
    out: dict = {
        "arrived": int(n), "finished": int(ok.sum()), "unseen": int(unseen),
        "hit": float(hit.sum() / n) if n else None,
        "p99_ms": _p(tasks.loc[ok, "response_ms"], 99), "p50_ms": _p(tasks.loc[ok, "response_ms"], 50),
        "starved": float((starved.sum() + unseen) / n) if n else None,
        "tps": float(ok.sum() / window_s) if window_s > 0 else None,
        "mission": float(ok[mission].mean()) if mission.any() else None,
        "window_s": float(window_s),
        "per_class": {},
    }
    for cls in TIERS:
        m = tasks["cls"] == cls
        if not m.any():
            continue
        out["per_class"][cls] = {
            "tier": TIERS[cls], "arrived": int(m.sum()), "finished": int((ok & m).sum()), "hit": float((hit & m).sum() / m.sum()),
            "starved": float((starved & m).sum() / m.sum()), "p99_ms": _p(tasks.loc[ok & m, "response_ms"], 99),
            "wait_ms_p50": _p(wait[m], 50), "service_ms_p50": _p(tasks.loc[ok & m, "service_ms"].astype(float), 50),
        }
    return out


def queue_metrics(queue: pd.DataFrame) -> dict:
    q = queue["queued"].astype(int)
    return {"max": int(q.max()) if len(q) else 0, "p50": float(q.median()) if len(q) else 0.0}


def decision_metrics(dec: pd.DataFrame) -> dict | None:
    """Decision time (µs) and, for MOSAIC, what its rules did."""
    d = dec[dec["rule"] != "starving"]
    if len(d) < 2:
        return None
    us = d["us"].astype(float)
    return {"count": int(len(d)), "us_p50": float(np.median(us)), "us_p99": float(np.percentile(us, 99)),
            "by_rule": {str(k): int(v) for k, v in dec.groupby("rule").size().items()}}


def summarize(run_dir: Path, df: pd.DataFrame) -> dict | None:
    """summary.json's `admission`; None for a run without edge_tasks' records."""
    raw = run_dir / "raw"
    paths = sorted(raw.glob("mosaic-tasks*.csv"))
    if not paths:
        return None
    tasks = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    if "t_arrival_ns" not in tasks:  # a run from before the results knew the records
        return None
    tasks["id"] = tasks["id"].astype(str)
    tasks = tasks.drop_duplicates("id")  # one row per task
    measured = df[df["phase"] == "measure"]
    ids = set(measured["request_id"].astype(str))
    mine = tasks[tasks["id"].isin(ids)]
    man = json.loads((run_dir / "manifest.json").read_text()) if (run_dir / "manifest.json").exists() else {}
    reps = max(1, int(measured["repetition"].nunique())) if len(measured) else 1
    window = float(man.get("duration_s") or 0) * reps
    if window <= 0 and len(measured):
        window = (int(measured["t_drawn"].max()) - int(measured["t_drawn"].min())) / 1e9
    out = task_metrics(mine, window, unseen=len(ids) - len(mine))
    adm = man.get("admission") or {}
    out["policy"] = adm.get("policy", "fcfs")
    out["config"] = adm
    q = sorted(raw.glob("mosaic-queue*.csv"))
    if q:
        queue = pd.concat([pd.read_csv(p) for p in q], ignore_index=True)
        if len(measured):  # the measured window, on the requests' clock
            queue = queue[(queue["t_ns"] >= measured["t_drawn"].min()) & (queue["t_ns"] <= measured["t_drawn"].max())]
        out["queue"] = queue_metrics(queue)
    d = sorted(raw.glob("mosaic-decisions*.csv"))
    if d:
        out["decisions"] = decision_metrics(pd.concat([pd.read_csv(p) for p in d], ignore_index=True))
    out.update(sources())
    return out


def render(a: dict):
    from rich.table import Table

    def f(v, fmt="{:.1f}"):
        return "-" if v is None else fmt.format(v)

    dec = a.get("decisions") or {}
    t = Table(title=f"admission ({a['policy']}): hit {f(a['hit'], '{:.1%}')}, P99 {f(a['p99_ms'], '{:.0f}')} ms, "
                    f"starved {f(a['starved'], '{:.1%}')}, {f(a['tps'], '{:.2f}')} tasks/s, mission-critical finished "
                    f"{f(a['mission'], '{:.1%}')}, queue max {(a.get('queue') or {}).get('max', '-')}"
                    + (f", decision {dec['us_p50']:.1f}/{dec['us_p99']:.1f} us (P50/P99)" if dec else ""))
    for h in ("class", "tier", "tasks", "finished", "deadline hit", "starved", "P99 ms", "wait P50 ms", "service P50 ms"):
        t.add_column(h, justify="left" if h == "class" else "right")
    for cls, c in a["per_class"].items():
        t.add_row(cls, str(c["tier"]), str(c["arrived"]), str(c["finished"]), f(c["hit"], "{:.1%}"), f(c["starved"], "{:.1%}"),
                  f(c["p99_ms"], "{:.0f}"), f(c["wait_ms_p50"], "{:.0f}"), f(c["service_ms_p50"], "{:.0f}"))
    if a.get("unseen"):
        t.add_row("(never reached the edge)", "", str(a["unseen"]), "0", "0.0%", "100.0%", "-", "-", "-")
    return t



def time_series(run_dir: Path, df: pd.DataFrame, tl: Timeline) -> list[Panel]:
    """The admission's decisions over the run's time, for report.html: the queue's
    depth at each tick, and each admitted task at its start (arrival + wait) by class,
    its response time as the height; tasks never started sit at their arrival."""
    from continuum.results.timeline import Line, Panel

    raw = run_dir / "raw"
    panels = []
    queues = [pd.read_csv(p) for p in sorted(raw.glob("mosaic-queue*.csv")) if p.stat().st_size > 0]
    queue = pd.concat(queues, ignore_index=True) if queues else pd.DataFrame()
    if not queue.empty:
        queue = queue.sort_values("t_ns")
        panels.append(Panel("admission: tasks queued", (Line("admission: tasks queued", tl.seconds(queue["t_ns"]), queue["queued"], "steps"),)))
    frames = [pd.read_csv(p) for p in sorted(raw.glob("mosaic-tasks*.csv")) if p.stat().st_size > 0]
    tasks = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not tasks.empty:
        started = tasks[tasks["wait_ms"].notna() & (tasks["ok"] == 1)]
        lines = [Line(f"admitted {cls}: response s", tl.seconds(g["t_arrival_ns"] + g["wait_ms"] * 1e6), g["response_ms"] / 1000,
                      "markers") for cls, g in started.groupby("cls")]
        lost = tasks[tasks["ok"] != 1]
        if len(lost):
            top = float(started["response_ms"].max() / 1000) if len(started) else 1.0
            lines.append(Line("never finished (at its arrival, drawn at the top)", tl.seconds(lost["t_arrival_ns"]),
                              [top * 1.3] * len(lost), "markers"))
        panels.append(Panel("admitted tasks: response s (log)", tuple(lines), log=True))
    return panels
