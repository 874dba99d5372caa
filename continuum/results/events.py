"""The timeline's changes in a run's results: when each one applied (a link
change: the emulator's log, links/timeline.log, on the link's own clock; a
load step or a relocation: its planned time on the repetition's clock, which
the endpoints follow), and what it did to the requests of each UE it
touched, per repetition:

- interruption: from the change to the first request answered after it
  (an outage: at least its length; a step in delay or capacity: the
  request spacing plus the new latency);
- the requests across it: those in flight when it applied or drawn while it
  lasted (an outage's length, a relocation's move; a step lasts an instant),
  by outcome: answered, timed out, dropped early at the edge, unanswered.

Everything comes from the run folder (manifest.json's planned changes and
repetition starts, the emulator's log, the request rows), so `continuum
report` recomputes it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from continuum.config import ExperimentSpec

# Changes the endpoints make on their own clock (the repetition's epoch), not the emulator: no log line
ENDPOINTS_OWN = ("load", "relocate")
COLUMNS = ["repetition", "t_s", "change", "endpoint", "applied_unix_ns", "late_ms", "interruption_ms",
           "across", "answered", "timeout", "early_drop", "unanswered"]


def planned(spec: ExperimentSpec) -> list[dict]:
    """The manifest's entry: each change as the file gave it, with what the results need."""
    timeouts = {ep: a.workload.timeout_s for a in spec.apps for ep in a.endpoints}
    return [{"t_s": e.t_s, "ues": list(e.ues), "kind": e.kind, "label": e.label(), "describe": e.describe(),
             "span_s": e.span_s, "log_lines": _log_lines(e), "timeout_s": max(timeouts.get(u, 0.0) for u in e.ues),
             **({"ue_rates": dict(e.ue_rates)} if e.kind == "load" else {}),
             **({"relocate": e.relocate, "move_s": e.move_s, "state_bytes": e.state_bytes} if e.kind == "relocate" else {})}
            for e in spec.timeline]


def _log_lines(e) -> int:
    """How many lines of links/timeline.log a change writes per UE and repetition."""
    if e.kind in ENDPOINTS_OWN:
        return 0
    return sum(t is not None for t in (e.uplink, e.downlink)) if e.kind == "trace" else 1


def _at(e: dict, ue: str, rep: int, start: int, log: pd.DataFrame, plan: list[dict]) -> tuple[int | None, float]:
    """When a change applied for this UE in this repetition, and how late (ms): a link's change
    from the emulator's log (each repetition's lines at one time in the plan's order; a repetition
    stopped early may lack them), a load step or a relocation at its planned time (the endpoints
    act on the repetition's own epoch)."""
    if e["kind"] in ENDPOINTS_OWN:
        return int(start + e["t_s"] * 1e9), np.nan
    same = [p for p in plan if ue in p["ues"] and np.isclose(p["t_s"], e["t_s"])]
    per = [p.get("log_lines", 0 if p["kind"] in ENDPOINTS_OWN else 1) for p in same]
    k = next(i for i, p in enumerate(same) if p is e)
    mine = log[(log["link"] == ue) & np.isclose(log["t_ms"].astype(float), e["t_s"] * 1000)]
    at = (rep - 1) * sum(per) + sum(per[:k])
    if len(mine) <= at:
        return None, np.nan
    hit = mine.iloc[at]
    return int(hit["unix_ns"]), hit["late_us"] / 1000


def applied(run_dir: Path) -> pd.DataFrame:
    """links/timeline.log: one row per change and link as the emulator applied it."""
    path = run_dir / "links" / "timeline.log"
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split(maxsplit=4)
            if len(parts) == 5:
                rows.append({"unix_ns": int(parts[0]), "t_ms": float(parts[1]), "late_us": float(parts[2]),
                             "link": parts[3], "change": parts[4]})
    return pd.DataFrame(rows, columns=["unix_ns", "t_ms", "late_us", "link", "change"]).sort_values("unix_ns", kind="stable")


def _manifest(run_dir: Path) -> dict:
    man = run_dir / "manifest.json"
    return json.loads(man.read_text()) if man.exists() else {}


def rows(run_dir: Path, df: pd.DataFrame) -> pd.DataFrame | None:
    """One row per repetition, change and UE it touched (None: the run had no timeline)."""
    man = _manifest(run_dir)
    plan = man.get("timeline") or []
    if not plan:
        return None
    log = applied(run_dir)
    out = []
    for rep, start in enumerate(man.get("trace_restarts_unix_ns") or [], 1):
        for e in plan:
            for ue in e["ues"]:
                at, late = _at(e, ue, rep, start, log, plan)
                out.append({"repetition": rep, "t_s": e["t_s"], "change": e["label"], "endpoint": ue,
                            "applied_unix_ns": at, "late_ms": late, **_effect(df, rep, ue, at, e)})
    return pd.DataFrame(out, columns=COLUMNS).astype({"t_s": float, "late_ms": float, "interruption_ms": float})


def _effect(df: pd.DataFrame, rep: int, ue: str, at: int | None, e: dict) -> dict:
    none = {"interruption_ms": np.nan, "across": 0, "answered": 0, "timeout": 0, "early_drop": 0, "unanswered": 0}
    if at is None or df.empty:
        return none
    r = df[(df["repetition"] == rep) & (df["endpoint"] == ue)]
    ok = r[r["status"] == "ok"]
    after = ok.loc[ok["t_received"] > at, "t_received"]
    end = at + e["span_s"] * 1e9
    # in flight at the change (drawn before it, not answered before it, not given up before it) or drawn while it lasted
    gave_up = r["t_drawn"] + e["timeout_s"] * 1e9
    answered_before = r["status"].isin(["ok", "early_drop"]) & (r["t_received"] <= at)  # an early drop is an answer too
    across = r[(r["t_drawn"] <= end) & ~answered_before & ((r["status"] == "ok") | (gave_up > at))]
    counts = across["status"].value_counts()
    return {"interruption_ms": (after.min() - at) / 1e6 if len(after) else np.nan, "across": len(across),
            "answered": int(counts.get("ok", 0)), "timeout": int(counts.get("timeout", 0)),
            "early_drop": int(counts.get("early_drop", 0)), "unanswered": int(counts.get("unanswered", 0))}


def summarize(run_dir: Path, df: pd.DataFrame) -> list[dict] | None:
    """Per change (all its UEs and repetitions): when it applied, the interruption
    (median and worst), and the requests across it by outcome; timeline.csv has each row."""
    r = rows(run_dir, df)
    if r is None:
        return None
    r.to_csv(run_dir / "timeline.csv", index=False)
    plan = _manifest(run_dir).get("timeline") or []
    out = []
    for e in plan:
        mine = r[np.isclose(r["t_s"], e["t_s"]) & (r["change"] == e["label"])]
        applied_ = mine["applied_unix_ns"].notna()
        intr = mine["interruption_ms"].dropna()
        out.append({"t_s": e["t_s"], "change": e["describe"], "label": e["label"], "ues": e["ues"],
                    "applied": int(applied_.sum()), "expected": len(mine),
                    "late_ms_max": float(mine["late_ms"].max()) if mine["late_ms"].notna().any() else None,
                    "interruption_ms_median": float(intr.median()) if len(intr) else None,
                    "interruption_ms_max": float(intr.max()) if len(intr) else None,
                    **{k: int(mine[k].sum()) for k in ("across", "answered", "timeout", "early_drop", "unanswered")}})
    return out


def lines(run_dir: Path, origin_ns: int) -> tuple[tuple[float, str], ...]:
    """Where every time plot draws the changes: (seconds on the run's axis, label), one per
    change and repetition at the time it applied (the planned time where the log lacks it)."""
    man = _manifest(run_dir)
    plan = man.get("timeline") or []
    log = applied(run_dir)
    out: dict[tuple[float, str], None] = {}
    for rep, start in enumerate(man.get("trace_restarts_unix_ns") or [], 1):
        for e in plan:
            times = [t for t in (_at(e, ue, rep, start, log, plan)[0] for ue in e["ues"]) if t is not None]
            at = min(times) if times else start + e["t_s"] * 1e9
            out[(round((at - origin_ns) / 1e9, 3), e["label"])] = None
    return tuple(out)


def render(events: list[dict]) -> str:
    """The console's lines on the timeline, one per change."""
    out = ["timeline (each change, all its UEs and repetitions; interruption: to the first answer after it):"]
    for e in events:
        late = f"applied {e['applied']}/{e['expected']}" + (f", at most {e['late_ms_max']:.2f} ms late" if e["late_ms_max"] is not None else "")
        intr = (f"interruption median {e['interruption_ms_median']:.0f} ms, worst {e['interruption_ms_max']:.0f} ms"
                if e["interruption_ms_median"] is not None else "no answer after it")
        lost = e["timeout"] + e["early_drop"] + e["unanswered"]
        out.append(f"  {e['change']}: {late}; {intr}; {e['across']} request(s) across it, {lost} not answered")
    return "\n".join(out)
