"""The spread over runs, one definition: a campaign's points grouped by what
they set (their arm and swept values, across seeds), and for each group and
metric the median of the runs' own medians with their [min-max], the same
for the runs' P99s (never a P99 of pooled requests: each run's tail is its
own), and the answered share as the mean [min-max]. summary.csv has one row
per point (what each run measured), table.md one row per group."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any, Callable, Iterable

METRICS = ("uplink_ms", "downlink_ms", "preprocessing_ms", "server_ms", "e2e_ms")


def point_row(point: dict[str, Any], run_dir: Path | None) -> dict[str, Any]:
    """One point's row of summary.csv: what it set, its status and what its run measured."""
    row: dict[str, Any] = {"point": point["index"], "arm": point.get("arm") or "", **{k: v for k, v in point["values"].items()},
                           "seed": "" if point.get("seed") is None else point["seed"], "status": point.get("status", ""),
                           "run": point.get("run") or ""}
    if point.get("machine"):  # run on a machine of --hosts: which, and its CPU
        m = point.get("machine_facts") or {}
        row["machine"] = point["machine"]
        row["machine_cpu"] = f"{m.get('cpu_model', '?')}, {m.get('cpus', '?')} CPUs" if m else ""
    s = _summary(run_dir)
    row["requests"] = s.get("requests", "")
    row["answered"] = s.get("answered", "")
    for m in METRICS:
        got = (s.get("metrics") or {}).get(m) or {}
        row[f"{m}_median"] = got.get("median", "")
        row[f"{m}_p99"] = got.get("p99", "")
    return row


def write(folder: Path, points: list[dict[str, Any]], keys: list[str]) -> tuple[Path, Path]:
    """summary.csv (a row per point) and table.md (a row per group of points) in the campaign folder."""
    rows = [point_row(p, folder / p["run"] if p.get("run") else None) for p in points]
    cols = ["point", "arm", *keys, "seed", "status", "run", *(["machine", "machine_cpu"] if any("machine" in r for r in rows) else []),
            "requests", "answered",
            *(f"{m}_{q}" for m in METRICS for q in ("median", "p99"))]
    with open(folder / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    (folder / "table.md").write_text(table(rows, keys))
    return folder / "summary.csv", folder / "table.md"


def table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    """The campaign's table: per arm and swept values (the seeds pooled as runs), the runs' medians and
    P99s of each metric as median [min-max], the answered share as mean [min-max], and the runs counted."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["arm"], *(r.get(k, "") for k in keys)), []).append(r)
    arm_col = any(r["arm"] for r in rows)
    head = (["arm"] if arm_col else []) + keys + ["runs (complete / points)", "answered"]
    head += [f"{m.removesuffix('_ms')} P50 / P99 ms" for m in METRICS]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group, rs in groups.items():
        done = [r for r in rs if r["status"] == "complete"]
        share = [r["answered"] / r["requests"] for r in done if isinstance(r["requests"], int) and r["requests"]]
        cells = ([group[0]] if arm_col else []) + [str(v) for v in group[1:]]
        cells += [f"{len(done)} / {len(rs)}", over_runs(share, "{:.1%}", statistics.mean)]
        for m in METRICS:
            p50 = over_runs([r[f"{m}_median"] for r in done], "{:.1f}", statistics.median)
            p99 = over_runs([r[f"{m}_p99"] for r in done], "{:.1f}", statistics.median)
            cells.append(f"{p50} / {p99}")
        out.append("| " + " | ".join(cells) + " |")
    fewest = min((r["answered"] for r in rows if r["status"] == "complete" and isinstance(r["answered"], int)), default=None)
    small = (f" The smallest run answered {fewest} requests: a P99 over fewer than 100 is close to that run's "
             "maximum; lengthen the window for tails." if fewest is not None and fewest < 100 else "")
    return "\n".join(out) + "\n\nP50 and P99: each run's own, then the median over the group's runs [their min-max]; " \
                            f"answered: the share of each run's measured requests, mean [min-max].{small}{_machines(rows)}\n"


def _machines(rows: list[dict[str, Any]]) -> str:
    """Where points ran on several machines: which, and whether their CPUs differ (a group's spread then
    holds the machines' difference as well as the runs')."""
    cpus = {r["machine"]: r.get("machine_cpu", "") for r in rows if r.get("machine") and r["status"] == "complete"}
    if not cpus:
        return ""
    said = "; ".join(f"{m} ({c or 'CPU not recorded'})" for m, c in sorted(cpus.items()))
    differ = len(set(cpus.values())) > 1
    return (f" The points ran on {len(cpus)} machine(s): {said}." + (
        " Their CPUs differ: a group's spread holds the machines' difference too (summary.csv names each point's "
        "machine; state loads as utilisation so that each is calibrated on its machine)." if differ else ""))


def over_runs(values: Iterable[Any], fmt: str, centre: Callable[[list[float]], float]) -> str:
    """ "centre [min-max]" of the runs' values (one run: its value; none: "-")."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and v == v]
    if not vals:
        return "-"
    if len(vals) == 1:
        return fmt.format(vals[0])
    return f"{fmt.format(centre(vals))} [{fmt.format(min(vals))}-{fmt.format(max(vals))}]"


def _summary(run_dir: Path | None) -> dict[str, Any]:
    p = None if run_dir is None else run_dir / "summary.json"
    if p is None or not p.exists():
        return {}
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
