"""MOSAIC's evaluation on real tasks: configs/mosaic-paper.toml (2 endpoints
submitting MOSAIC's six task classes over the emulated link to a 2-CPU edge,
lambda calibrated to the overload of MOSAIC's own runs) under every policy
and seed, the ablation without the matrix, and the tau_ipc sweep; then a
table next to the paper's and the original code's numbers, and figures
(README.md here says how to read them).

    points   mosaic, fcfs, rr, sjf, priority, edf, mosaic-nomatrix  x seeds 42-46
    sweep    mosaic at tau_ipc 0.10, 0.20, 0.50, 0.60 (seed 42; 0.35 is the main point)
    --load   chosen policies x seeds at other utilisations of the edge (e.g. 0.5,0.9,1.3), into
             results/load/: where each policy breaks

Each part is one campaign (docs/campaigns.md) of that file with only the
policy, the seed, tau_ipc and (--load) the utilisation swept: OUT/mosaic-
PART.toml, kept with the results, `continuum run` of which resumes the part
where it stopped; each point is an ordinary run, which can be re-run by
hand from its folder's experiment.toml."""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tomllib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from points import chosen, complete_points, flat, med_range, plain_log_ticks, set_timing, spread, write_campaign  # noqa: E402

from mosaic.classes import CLASSES as TASK_CLASSES  # noqa: E402

BASE = REPO / "configs" / "mosaic-paper.toml"
POLICIES = {"fcfs": "FCFS", "rr": "Round robin (50 ms)", "sjf": "SJF", "priority": "PriorityStrict", "edf": "EDF",
            "mosaic": "MOSAIC", "mosaic-nomatrix": "MOSAIC without the matrix"}
SEEDS = ("42", "43", "44", "45", "46")
TAUS = ("0.10", "0.20", "0.50", "0.60")
# SPEC-mosaic.md: the paper's table (lambda = 6/s, 60 s, 5 seeds); mission completion only given for MOSAIC and the ablation
PAPER = {"fcfs": (71.4, 3449, 4.8, 2.2), "rr": (55.8, 4300, 0, 2.3), "sjf": (57.1, 4100, 0, 2.2), "priority": (80.0, 3449, 0, 2.5),
         "mosaic": (51.2, 2538, 0, 4.3), "mosaic-nomatrix": (None, 3449, None, None)}
PAPER_MISSION = {"mosaic": 100.0, "mosaic-nomatrix": 85.7}
CLASSES = tuple(c.name for c in TASK_CLASSES)
TIER = {c.name: c.tier for c in TASK_CLASSES}


def point_name(policy: str, seed: str, tau: str = "0.35", load: float | None = None) -> str:
    """load: a load-sweep point's utilisation (None: the file's, as the main points run it)."""
    return f"{policy}" + ("" if load is None else f"-u{load:g}") + f"-s{seed}" + ("" if tau == "0.35" else f"-tau{tau}")


# what each part sweeps (dotted keys of the file), beside its name, folder and window
SWEPT = {"main": ("edge.admission.policy", "experiment.seed"), "tau": ("edge.admission.tau_ipc",),
         "load": ("edge.admission.policy", "experiment.seed", "workload.utilisation")}
OWN = ("experiment.name", "experiment.output", "experiment.duration_s")


def campaign_text(part: str, where: Path, duration_s: int | None, pols: list[str], seeds: list[str], taus: list[str],
                  loads: list[float]) -> str:
    """The shipped file as one part's campaign, its runs under WHERE/runs (folder campaign-mosaic-paper[-PART])."""
    name = "mosaic-paper" if part == "main" else f"mosaic-paper-{part}"
    text = BASE.read_text()
    text = re.sub(r'(?m)^name = "mosaic-paper"$', f'name = "{name}"', text, count=1)
    text = set_timing(text.replace("[experiment]\n", f'[experiment]\noutput = "{where / "runs"}"\n', 1), duration_s)
    if part == "main":
        sweep = {"edge.admission.policy": pols, "seeds": [int(s) for s in seeds]}
    elif part == "tau":  # mosaic (the file's policy), seed 42 (the file's)
        sweep = {"edge.admission.tau_ipc": [float(t) for t in taus]}
    else:
        sweep = {"workload.utilisation": loads, "edge.admission.policy": pols, "seeds": [int(s) for s in seeds]}
    import tomli_w

    return text + "\n" + tomli_w.dumps({"sweep": sweep})


def check(path: Path, part: str) -> None:
    """Every point is the shipped file but for what its part sweeps (and the campaign's name, folder, window)."""
    from continuum.campaign import sweep

    shipped = flat(tomllib.loads(BASE.read_text()))
    pts = sweep.points(path)
    for p in pts:
        got = flat(tomllib.loads(p.text))
        diff = sorted(k for k in set(shipped) | set(got) if shipped.get(k) != got.get(k) and k not in OWN)
        bad = [k for k in diff if k not in SWEPT[part]]
        assert not bad, f"{path} point {p.index} ({p.label()}) changes {bad} of configs/mosaic-paper.toml"
    assert pts, path


def point_of(e: dict) -> str:
    """A campaign point's name in the extracts (point_name) from its campaign.json entry."""
    v = e["values"]
    load = v.get("workload.utilisation")
    return point_name(v.get("edge.admission.policy", "mosaic"), str(e["seed"] if e["seed"] is not None else 42),
                      f"{float(v.get('edge.admission.tau_ipc', 0.35)):.2f}", None if load is None else float(load))


def run_part(part: str, where: Path, text: str, extract_point) -> None:
    """One part's campaign run (resumed where it stopped), then each complete point's extract."""
    import subprocess

    path = write_campaign(where / f"mosaic-{part}.toml", text, lambda p: check(p, part))
    rc = subprocess.run([str(REPO / ".venv" / "bin" / "continuum"), "run", str(path)]).returncode
    name = "mosaic-paper" if part == "main" else f"mosaic-paper-{part}"
    for e in complete_points(where / "runs" / f"campaign-{name}"):
        extract_point(e["dir"], where, point_of(e))
    if rc != 0:
        raise SystemExit(f"the {part} campaign ended with {rc}: {path}; run the same command again to resume it")


def extract(run_dir: Path, out: Path, name: str) -> None:
    """What the report needs, beside the runs (their logs are not committed)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    req = pd.read_csv(run_dir / "requests.csv")
    measured = req[req["phase"] == "measure"]
    origin = int(measured["t_drawn"].min())
    tasks = pd.read_csv(run_dir / "raw" / "mosaic-tasks.csv")
    tasks = tasks[tasks["id"].astype(str).isin(set(measured["request_id"].astype(str)))].copy()
    tasks["t_s"] = (tasks["t_arrival_ns"] - origin) / 1e9
    tasks.drop(columns=["t_arrival_ns", "taught"]).to_csv(out / f"tasks-{name}.csv", index=False)
    q = pd.read_csv(run_dir / "raw" / "mosaic-queue.csv")
    q["t_s"] = ((q["t_ns"] - origin) / 1e9).round(2)
    q[["t_s", "queued"]].to_csv(out / f"queue-{name}.csv", index=False)
    matrix_csv(run_dir / "raw" / "mosaic-matrix.sqlite", out / f"matrix-{name}.csv")
    keep = {"admission": summary["admission"], "e2e_ms": summary["metrics"]["e2e_ms"], "run": str(run_dir)}
    if "load" in summary:
        keep["load"] = summary["load"]
    (out / f"summary-{name}.json").write_text(json.dumps(keep, indent=2) + "\n")


def matrix_csv(db: Path, out: Path) -> None:
    """The matrix MOSAIC learned (aggressor, victim, slowdown, observations; alone times as victim = "alone")."""
    import sqlite3

    if not db.exists():
        return
    with sqlite3.connect(db) as c:
        rows = [("alone", cls, ms, n) for cls, ms, n in c.execute("SELECT cls, ms, n FROM alone")]
        rows += list(c.execute("SELECT aggressor, victim, slowdown, n FROM pair ORDER BY victim, aggressor"))
    pd.DataFrame(rows, columns=["aggressor", "victim", "slowdown", "n"]).to_csv(out, index=False, float_format="%.3f")


def mean_sd(xs: list[float]) -> tuple[float, float]:
    return statistics.mean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0


def aggregate(points: dict[str, dict]) -> dict[str, dict]:
    """Per policy (tau 0.35): each metric's mean and SD over the seeds run."""
    out = {}
    for pol in POLICIES:
        runs = [points[point_name(pol, s)]["admission"] for s in SEEDS if point_name(pol, s) in points]
        if not runs:
            continue
        agg = {"seeds": len(runs)}
        for k, f in (("hit", 100), ("p99_ms", 1), ("starved", 100), ("tps", 1), ("mission", 100)):
            agg[k] = mean_sd([r[k] * f for r in runs if r[k] is not None])
        agg["queue_max"] = mean_sd([r["queue"]["max"] for r in runs])
        dec = [r["decisions"]["us_p50"] for r in runs if r.get("decisions")]
        agg["decision_us_p50"] = statistics.median(dec) if dec else None
        # a class no measured task of which arrived (a short window: the rare classes) has no hit share
        hits = {c: [r["per_class"][c]["hit"] * 100 for r in runs if c in r["per_class"]] for c in CLASSES}
        agg["per_class_hit"] = {c: statistics.mean(v) if v else None for c, v in hits.items()}
        out[pol] = agg
    return out


def original(path: Path) -> dict:
    """original.json (original.py): what MOSAIC's own harness computes, per pattern and scheduler."""
    return json.loads(path.read_text()) if path.exists() else {}


def table(agg: dict[str, dict], orig: dict) -> str:
    f = lambda v, fmt="{:.1f}": "-" if v is None else fmt.format(v)  # noqa: E731
    ms = lambda m: f"{m[0]:.1f} ± {m[1]:.1f}"  # noqa: E731
    head = ("| policy | seeds | hit % | P99 ms | starved % | TPS | mission-critical finished % | queue max | decision P50 us "
            "| paper: hit / P99 / starved / TPS | original code (Poisson 6/s): hit / P99 / starved / TPS |")
    rows = [head, "|---" * (head.count("|") - 1) + "|"]
    po = orig.get("poisson", {})
    for pol, a in agg.items():
        p = PAPER.get(pol)
        paper = " / ".join(f(v, "{:g}") for v in p) if p else "-"
        o = po.get(pol)
        code = f"{o['hit']:.1f} / {o['p99_ms']:.0f} / {o['starved']:.1f} / {o['tps']:.2f}" if o else "-"
        rows.append(f"| {POLICIES[pol]} | {a['seeds']} | {ms(a['hit'])} | {a['p99_ms'][0]:.0f} ± {a['p99_ms'][1]:.0f} | {ms(a['starved'])} "
                    f"| {a['tps'][0]:.2f} ± {a['tps'][1]:.2f} | {ms(a['mission'])} | {a['queue_max'][0]:.0f} ± {a['queue_max'][1]:.0f} "
                    f"| {f(a['decision_us_p50'])} | {paper} | {code} |")
    return "\n".join(rows)


def class_table(agg: dict[str, dict]) -> str:
    head = "| policy | " + " | ".join(CLASSES) + " |"
    rows = [head, "|---" * (len(CLASSES) + 1) + "|"]
    for pol, a in agg.items():
        rows.append(f"| {POLICIES[pol]} | " + " | ".join("-" if a["per_class_hit"][c] is None else f"{a['per_class_hit'][c]:.1f}"
                                                        for c in CLASSES) + " |")
    return "\n".join(rows)


def sweep_table(points: dict[str, dict]) -> str:
    rows = ["| tau_ipc | hit % | P99 ms | starved % | TPS | mission % | rule 2 refusals |", "|---|---|---|---|---|---|---|"]
    for tau in sorted({"0.35", *TAUS}):
        s = points.get(point_name("mosaic", "42", tau))
        if s is None:
            continue
        a = s["admission"]
        r2 = sum(v for k, v in ((a.get("decisions") or {}).get("by_rule") or {}).items() if "ipc" in k or k == "2")
        rows.append(f"| {tau} | {a['hit'] * 100:.1f} | {a['p99_ms']:.0f} | {a['starved'] * 100:.1f} | {a['tps']:.2f} | {a['mission'] * 100:.1f} | {r2} |")
    return "\n".join(rows)


def figures(points: dict[str, dict], agg: dict[str, dict], out: Path) -> list[Path]:
    made = []
    pols = list(agg)
    # 1. the headline metrics, seed by seed
    fig, axes = plt.subplots(1, 4, figsize=(14, 4))
    for ax, (k, f, label) in zip(axes, (("hit", 100, "deadline hit (% of tasks)"), ("p99_ms", 1e-3, "P99 response (s)"),
                                        ("starved", 100, "starved (% of tasks)"), ("mission", 100, "mission-critical finished (%)"))):
        for i, pol in enumerate(pols):
            vals = [points[point_name(pol, s)]["admission"][k] for s in SEEDS if point_name(pol, s) in points]
            vals = [v * f for v in vals if v is not None]
            ax.bar(i, np.mean(vals), color=f"C{i}", alpha=0.6)
            ax.plot([i] * len(vals), vals, "k.", ms=4)
        ax.set_xticks(range(len(pols)), [POLICIES[p].replace(" (50 ms)", "").replace(" without the matrix", "\nno matrix") for p in pols],
                      rotation=45, ha="right", fontsize=8)
        ax.set_title(label, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("Measured on real tasks (2-CPU edge, 7.2 tasks/s, 60 s): bars = mean over seeds 42-46, dots = each seed", fontsize=10)
    fig.tight_layout()
    made.append(out / "policies.png")
    fig.savefig(made[-1], dpi=120)
    plt.close(fig)
    # 2. per-class deadline hit
    fig, ax = plt.subplots(figsize=(11, 4))
    w = 0.8 / len(pols)
    for i, pol in enumerate(pols):
        hit = agg[pol]["per_class_hit"]
        ax.bar(np.arange(len(CLASSES)) + i * w, [np.nan if hit[c] is None else hit[c] for c in CLASSES], w, color=f"C{i}", label=POLICIES[pol])
        for k, c in enumerate(CLASSES):
            if hit[c] is None:  # not a 0% bar: none of the class's tasks was measured
                ax.text(k + i * w, 2, "no tasks", rotation=90, ha="center", va="bottom", fontsize=7, color="0.4")
    ax.set_xticks(np.arange(len(CLASSES)) + 0.4 - w / 2, [f"{c}\n(tier {TIER[c]})" for c in CLASSES], fontsize=8)
    ax.set_ylabel("deadline hit (% of the class's tasks,\nmean over seeds)")
    ax.set_ylim(0, 118)
    ax.set_yticks(range(0, 101, 20))
    ax.legend(fontsize=7, ncol=7, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Per-class deadline hit, measured", fontsize=10)
    fig.tight_layout()
    made.append(out / "classes.png")
    fig.savefig(made[-1], dpi=120)
    plt.close(fig)
    # 3. queue depth over time, seed 42, one shared axis
    qs = {pol: out / f"queue-{point_name(pol, '42')}.csv" for pol in pols}
    qs = {p: pd.read_csv(q) for p, q in qs.items() if q.exists()}
    if qs:
        fig, ax = plt.subplots(figsize=(10, 4))
        for pol, q in qs.items():
            ax.step(q["t_s"], q["queued"], where="post", lw=0.9, color=f"C{pols.index(pol)}", label=POLICIES[pol])
        ax.axvspan(0, 60, color="0.93", zorder=0, label="measured window (arrivals)")
        ax.set_xlabel("time since the first measured task (s)")
        ax.set_ylabel("tasks queued at the edge")
        ax.set_title("Queue depth over time, seed 42 (measured at each 100-ms tick)", fontsize=10)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        made.append(out / "queue.png")
        fig.savefig(made[-1], dpi=120)
        plt.close(fig)
    # 4. the matrix MOSAIC learned, seed 42
    mpath = out / f"matrix-{point_name('mosaic', '42')}.csv"
    if mpath.exists():
        m = pd.read_csv(mpath)
        pairs = m[m["aggressor"] != "alone"].pivot(index="aggressor", columns="victim", values="slowdown").reindex(index=CLASSES, columns=CLASSES)
        fig, ax = plt.subplots(figsize=(7.5, 5.5))
        im = ax.imshow(pairs.to_numpy(dtype=float), cmap="viridis", vmin=0)
        for i in range(len(CLASSES)):
            for j in range(len(CLASSES)):
                v = pairs.iloc[i, j]
                ax.text(j, i, "-" if pd.isna(v) else f"{v:.2f}", ha="center", va="center", fontsize=8, color="w" if pd.isna(v) or v < 1.5 else "k")
        ax.set_xticks(range(len(CLASSES)), CLASSES, rotation=35, ha="right", fontsize=8)
        ax.set_yticks(range(len(CLASSES)), CLASSES, fontsize=8)
        ax.set_xlabel("victim (the class slowed)")
        ax.set_ylabel("aggressor (the class beside it)")
        fig.colorbar(im, ax=ax, label="slowdown: service time beside / alone - 1")
        ax.set_title("The matrix MOSAIC learned online, seed 42 (measured slowdown, no PMU)", fontsize=9)
        fig.tight_layout()
        made.append(out / "matrix.png")
        fig.savefig(made[-1], dpi=120)
        plt.close(fig)
    # 5. the tau_ipc sweep
    sw = [(float(t), points[point_name("mosaic", "42", t)]["admission"]) for t in sorted({"0.35", *TAUS})
          if point_name("mosaic", "42", t) in points]
    if len(sw) > 1:
        fig, ax = plt.subplots(figsize=(6, 3.8))
        ax.plot([t for t, _ in sw], [a["hit"] * 100 for _, a in sw], "o-", label="deadline hit (%)")
        ax.set_xlabel("tau_ipc")
        ax.set_ylabel("deadline hit (%)")
        ax2 = ax.twinx()
        ax2.plot([t for t, _ in sw], [a["p99_ms"] / 1000 for _, a in sw], "s--", color="C3", label="P99 response (s)")
        ax2.set_ylabel("P99 response (s)", color="C3")
        ax.set_ylim(0, 100)
        ax2.set_ylim(0, max(a["p99_ms"] for _, a in sw) / 1000 * 1.2)
        ax.set_title("MOSAIC's tau_ipc sweep, seed 42 (measured)", fontsize=10)
        ax.grid(alpha=0.3)
        fig.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        made.append(out / "tau_sweep.png")
        fig.savefig(made[-1], dpi=120)
        plt.close(fig)
    return made


def extract_load(run_dir: Path, out: Path, name: str) -> None:
    """A load-sweep point: its summary (admission, latency, load) and its tasks, compressed."""
    summary = json.loads((run_dir / "summary.json").read_text())
    keep = {k: summary[k] for k in ("admission", "load") if k in summary}
    keep["e2e_ms"], keep["run"] = summary["metrics"]["e2e_ms"], str(run_dir)
    (out / f"summary-{name}.json").write_text(json.dumps(keep, indent=2) + "\n")
    req = pd.read_csv(run_dir / "requests.csv")
    ids = set(req.loc[req["phase"] == "measure", "request_id"].astype(str))
    tasks = pd.read_csv(run_dir / "raw" / "mosaic-tasks.csv")
    tasks[tasks["id"].astype(str).isin(ids)].drop(columns=["taught"], errors="ignore").to_csv(
        out / f"tasks-{name}.csv.gz", index=False, float_format="%.3f")


def load_points(out: Path) -> dict[str, dict[float, dict[str, dict]]]:
    """OUT/load's summaries: policy -> utilisation asked -> seed -> summary."""
    got: dict[str, dict[float, dict[str, dict]]] = {}
    for f in sorted((out / "load").glob("summary-*.json")):
        m = re.fullmatch(r"summary-(.+)-u([0-9.]+)-s(\d+)\.json", f.name)
        if m and m.group(1) in POLICIES:
            got.setdefault(m.group(1), {}).setdefault(float(m.group(2)), {})[m.group(3)] = json.loads(f.read_text())
    return got


def offered(s: dict) -> tuple[float | None, float | None]:
    """The run's offered rate (tasks/s, both endpoints) and the capacity it came from."""
    ld = next(iter((s.get("load") or {}).values()), None)
    if not ld:
        return None, None
    return ld["capacity_rps"] * ld["utilisation_offered"], ld["capacity_rps"]


def load_table(lp: dict[str, dict[float, dict[str, dict]]]) -> str:
    head = ("| utilisation asked | policy | seeds | capacity tasks/s (per seed) | offered tasks/s | hit % | P99 ms | starved % "
            "| TPS | mission-critical finished % |")
    rows = [head, "|---" * (head.count("|") - 1) + "|",
            "| | | | | mean [min-max] | mean [min-max] | median [min-max] | mean [min-max] | mean [min-max] | mean [min-max] |"]
    for u in sorted({u for by in lp.values() for u in by}):
        for pol in lp:
            runs = lp[pol].get(u)
            if not runs:
                continue
            adm = [r["admission"] for r in runs.values()]
            rate = [offered(r)[0] for r in runs.values()]
            cap = " / ".join(f"{c:.1f}" for c in (offered(r)[1] for r in runs.values()) if c)
            rows.append(f"| {u:g} | {POLICIES[pol]} | {len(runs)} | {cap or '-'} | {spread(rate, '{:.1f}')} "
                        f"| {spread([a['hit'] for a in adm])} | {med_range([a['p99_ms'] for a in adm])} "
                        f"| {spread([a['starved'] for a in adm])} | {spread([a['tps'] for a in adm], '{:.2f}')} "
                        f"| {spread([a['mission'] for a in adm])} |")
    return "\n".join(rows)


def load_figure(lp: dict[str, dict[float, dict[str, dict]]], out: Path) -> Path | None:
    if not any(len(by) > 1 for by in lp.values()):
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharex=True)
    for pol, by in lp.items():
        color = f"C{list(POLICIES).index(pol)}"
        us = sorted(by)
        for ax, (key, scale, centre) in zip(axes, (("hit", 100, np.mean), ("p99_ms", 1e-3, np.median), ("starved", 100, np.mean))):
            vals = [[r["admission"][key] * scale for r in by[u].values() if r["admission"][key] is not None] for u in us]
            ax.plot(us, [centre(v) for v in vals], "o-", color=color, label=POLICIES[pol])
            ax.fill_between(us, [min(v) for v in vals], [max(v) for v in vals], color=color, alpha=0.2)
            for u, v in zip(us, vals):  # each run, at its own offered utilisation asked
                ax.plot([u] * len(v), v, ".", color=color, ms=3)
    for ax, label in zip(axes, ("deadline hit (% of tasks)\nline: mean of seeds", "P99 response (s, log)\nline: median of seeds",
                                "starved (% of tasks)\nline: mean of seeds")):
        ax.set_ylabel(label)
        ax.set_xlabel("utilisation asked (of the edge's FCFS capacity,\ncalibrated per seed)")
        ax.grid(alpha=0.3, which="both")
        ax.axvline(1.0, color="0.6", ls=":", lw=1)
    axes[0].set_ylim(0, 103)
    axes[2].set_ylim(0, 103)
    axes[1].set_yscale("log")
    plain_log_ticks(axes[1].yaxis)
    axes[0].legend(fontsize=8, loc="lower left")
    seeds = sorted({sd for by in lp.values() for runs in by.values() for sd in runs})
    fig.suptitle(f"Where each policy breaks on real tasks (measured; seeds {', '.join(seeds)}; band: min-max, dot: one run)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "load" / "load.png", dpi=120)
    plt.close(fig)
    return out / "load" / "load.png"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 s windows instead of 60")
    ap.add_argument("--duration", type=int, help="seconds per window (default: the file's 60; 20 with --quick)")
    ap.add_argument("--load", default="", help="utilisations to run --policies x --seeds at instead of the main points and "
                    "the sweep, e.g. 0.5,0.9,1.3 (into OUT/load/)")
    ap.add_argument("--policies", default=",".join(POLICIES), help=f"default: all of {', '.join(POLICIES)}")
    ap.add_argument("--seeds", default=",".join(SEEDS))
    ap.add_argument("--taus", default=",".join(TAUS), help="mosaic's sweep, seed 42 ('' for none)")
    ap.add_argument("--out", type=Path, help="default: results/ (results-quick/ with --quick)")
    ap.add_argument("--analyze-only", action="store_true", help="redraw from the extracts already in --out")
    a = ap.parse_args()
    out = (a.out or HERE / ("results-quick" if a.quick else "results")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    pols = chosen(ap, "--policies", a.policies, POLICIES)
    seeds = chosen(ap, "--seeds", a.seeds, SEEDS)
    taus = chosen(ap, "--taus", a.taus, TAUS)
    duration = a.duration or (20 if a.quick else None)
    try:
        loads = [float(u) for u in a.load.split(",") if u]
    except ValueError:
        ap.error(f"--load: {a.load!r} is not a comma-separated list of utilisations, e.g. 0.5,0.9,1.3")
    if loads:
        where = out / "load"
        where.mkdir(parents=True, exist_ok=True)
        if not a.analyze_only:
            run_part("load", where, campaign_text("load", where, duration, pols, seeds, taus, loads), extract_load)
        lp = load_points(out)
        text = load_table(lp)
        (where / "table.md").write_text(text + "\n")
        made = [f for f in [load_figure(lp, out)] if f]
        print(text)
        print("figures: " + ", ".join(str(p) for p in made))
        return 0
    if not a.analyze_only:
        run_part("main", out, campaign_text("main", out, duration, pols, seeds, taus, loads), extract)
        if taus:
            run_part("tau", out, campaign_text("tau", out, duration, pols, seeds, taus, loads), extract)
    points = {p.name[len("summary-"):-len(".json")]: json.loads(p.read_text()) for p in sorted(out.glob("summary-*.json"))}
    agg = aggregate(points)
    orig = original(out / "original.json")
    text = "\n\n".join([table(agg, orig), class_table(agg), sweep_table(points)])
    (out / "table.md").write_text(text + "\n")
    made = figures(points, agg, out)
    print(text)
    print("figures: " + ", ".join(str(p) for p in made))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
