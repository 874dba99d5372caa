"""The SMEC paper's RAN-side comparison, scaled to one machine: the shipped
configs/smec-ran.toml (three latency-critical video-like UEs and two bulk
uploaders in one cell replaying a public 5G trace) run once per uplink
scheduler (pf, rr, smec, tutti) and seed (default 1, 2, 3), then one table
per class and figures next to the paper's numbers (report.md). Shares are
the mean over the seeds [min-max], percentiles the median of the runs' own
values [min-max].

The points are one campaign (docs/campaigns.md): that file with a [sweep]
of cell.uplink and the seeds (and the timing) added, written beside the
results as campaign.toml and run by one `continuum run`, which resumes
where it stopped; each point's run folder keeps its own experiment.toml."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE.parent))
from continuum.config.raw import ESTIMATING_SCHEDULERS, UPLINK_SCHEDULERS as SCHEDULERS  # noqa: E402  (one definition)
from continuum.results import cell  # noqa: E402
from points import CONTINUUM, chosen, complete_points, log_cdf, med_range, seed_list, set_timing, spread  # noqa: E402

BASE = REPO / "configs" / "smec-ran.toml"
LABEL = {"pf": "proportional fair", "rr": "round robin", "smec": "SMEC", "tutti": "Tutti-like"}


def point_name(scheduler: str, seed: int) -> str:
    return f"{scheduler}-s{seed}"


def campaign_file(out: Path, schedulers: list[str], seeds: list[int], duration_s: int, warmup_s: int) -> Path:
    """The shipped file as a campaign: a [sweep] of the uplink scheduler and the seeds, the output folder
    and the timing set; nothing else differs."""
    text = BASE.read_text()
    text = text.replace('"../workloads/example/app.py"', f'"{REPO / "workloads" / "example" / "app.py"}"')
    text = text.replace("[experiment]\n", f'[experiment]\noutput = "{out / "runs"}"\n', 1)
    text = set_timing(text, duration_s, warmup_s)
    text += f'\n[sweep]\n"cell.uplink" = {json.dumps(schedulers)}\nseeds = {json.dumps(seeds)}\n'
    assert tomllib.loads(text)["sweep"]["cell.uplink"] == schedulers
    path = out / "campaign.toml"
    path.write_text(text)
    return path


def point_rows(run_dir: Path) -> tuple[dict, pd.DataFrame]:
    """The run's cell summary and its measured latency-critical requests with RAN latency and start error."""
    summary = json.loads((run_dir / "summary.json").read_text())["cell"]
    man = json.loads((run_dir / "manifest.json").read_text())["cell"]
    lc = {m["name"]: m for m in man["members"] if m["cls"] == "lc"}
    every = pd.read_csv(run_dir / "requests.csv")
    every = every[every["endpoint"].isin(lc)]
    log = cell.read_log(run_dir / "links" / "cell-uplink.log")
    if log is not None and log.scheduler in ESTIMATING_SCHEDULERS:
        every = every.join(cell.start_errors(every, log))  # warm-up too: Tutti's notices pair in order
    df = every[every["phase"] == "measure"].copy()
    df["ran_ms"] = df["uplink_ms"] - man["offload_one_way_ms"]
    df["slo_ms"] = df["endpoint"].map(lambda e: lc[e]["slo_ms"])
    return summary, df


Points = dict[str, dict[int, tuple[dict, pd.DataFrame]]]


def table(points: Points) -> str:
    head = ("| uplink scheduler | runs | LC requests | LC SLO met | LC RAN P50 ms | LC RAN P99 ms | BE uplink Mbit/s (2 UEs) "
            "| start error P50 ms | start error P99 ms | starts not estimated |")
    rows = [head, "|---" * (head.count("|") - 1) + "|",
            "| | | total | mean [min-max] | median [min-max] | median [min-max] | mean [min-max] | median [min-max] "
            "| median [min-max] | mean [min-max] |"]
    for s, runs in points.items():
        lc = [summary["classes"]["lc"] for summary, _ in runs.values()]
        be = [summary["classes"].get("be", {}) for summary, _ in runs.values()]
        rows.append(f"| {LABEL[s]} | {len(lc)} | {sum(x['requests'] for x in lc)} | {spread([x.get('slo_met') for x in lc])} "
                    f"| {med_range([x.get('ran_ms_p50') for x in lc], '{:.1f}')} | {med_range([x.get('ran_ms_p99') for x in lc])} "
                    f"| {spread([x.get('throughput_mbps_uplink') for x in be], '{:.1f}')} "
                    f"| {med_range([x.get('start_error_ms_p50') for x in lc], '{:.1f}')} "
                    f"| {med_range([x.get('start_error_ms_p99') for x in lc], '{:.1f}')} "
                    f"| {spread([x.get('start_not_estimated') for x in lc])} |")
    return "\n".join(rows)


def pooled(runs: dict[int, tuple[dict, pd.DataFrame]]) -> pd.DataFrame:
    return pd.concat([df for _, df in runs.values()], ignore_index=True)


def figures(points: Points, out: Path) -> list[Path]:
    made = []
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for s, runs in points.items():
        df = pooled(runs)
        x = np.sort(df.loc[df["status"] == "ok", "ran_ms"].to_numpy())
        if len(x):
            ax.plot(x, np.arange(1, len(x) + 1) / len(df), drawstyle="steps-post",
                    label=f"{LABEL[s]} ({len(df)} requests, {len(runs)} runs)")
    for slo in (100, 150):  # labels upright above the legend's corner
        ax.axvline(slo, color="0.3", ls="--", lw=1)
        ax.text(slo, 0.45, f"SLO {slo} ms", fontsize=8, color="0.3", rotation=90, va="center", ha="right")
    made.append(log_cdf(fig, ax, "RAN latency per latency-critical request (ms, log scale): uplink less the core's one-way delay",
                         "fraction of requests (unanswered: never)",
                         "Latency-critical uplink in a shared 5G cell, per uplink scheduler\n(measured; the seeds' runs pooled)",
                         out / "ran_latency_cdf.png", legend_loc="lower right"))

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for s in ("smec", "tutti"):
        if s in points and all("start_error_ms" in df for _, df in points[s].values()):
            e = np.sort(pooled(points[s])["start_error_ms"].dropna().to_numpy())
            if len(e):
                ax.plot(np.maximum(e, 0.1), np.arange(1, len(e) + 1) / len(e), drawstyle="steps-post", color=f"C{list(SCHEDULERS).index(s)}",
                        label=f"{LABEL[s]}: P50 {np.percentile(e, 50):.1f} ms, P99 {np.percentile(e, 99):.1f} ms (pooled)")
    ax.axvline(10, color="0.3", ls=":", lw=1)
    ax.text(10, 0.5, " SMEC paper:\n P99 about 10 ms", fontsize=8, color="0.3")
    made.append(log_cdf(fig, ax, "request start estimate minus the app's send time (ms, log scale; below 0.1 drawn at 0.1)",
                         "fraction of requests", "When the uplink scheduler learns that a request started\n(measured; the seeds' runs pooled)",
                         out / "start_error_cdf.png"))

    fig, (a, b) = plt.subplots(1, 2, figsize=(9.5, 3.8))
    names = list(points)
    for ax, get, scale, label in (
            (a, lambda sm: sm["classes"]["lc"].get("slo_met") or 0, 100, "latency-critical requests\nwithin their SLO (%)"),
            (b, lambda sm: sm["classes"].get("be", {}).get("throughput_mbps_uplink") or 0, 1,
             "best-effort uplink, 2 bulk UEs\n(Mbit/s, measured window)")):
        for i, s in enumerate(names):
            vals = np.array([scale * get(sm) for sm, _ in points[s].values()])
            ax.bar(i, vals.mean(), color=f"C{list(SCHEDULERS).index(s)}", alpha=0.75)
            ax.errorbar(i, vals.mean(), yerr=[[vals.mean() - vals.min()], [vals.max() - vals.mean()]], fmt="none", ecolor="k", capsize=3)
            ax.plot([i] * len(vals), vals, "k.", ms=3)
        ax.set_xticks(range(len(names)), [LABEL[s] for s in names])
        ax.set_ylabel(label)
        ax.tick_params(axis="x", labelsize=8, rotation=15)
        ax.grid(alpha=0.3, axis="y")
    a.set_ylim(0, 105)
    seeds = sorted({sd for runs in points.values() for sd in runs})
    fig.suptitle(f"What each uplink scheduler gives each class (measured; bar: mean of seeds {', '.join(map(str, seeds))}, "
                 "whisker: min-max, dot: one run)", fontsize=9.5)
    fig.tight_layout()
    fig.savefig(out / "classes.png", dpi=120)
    plt.close(fig)
    made.append(out / "classes.png")
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one seed, 15 s measured, into results-quick/ (a smoke run)")
    ap.add_argument("--seeds", default="1,2,3", help="repetitions, one run per seed and scheduler (default 1,2,3)")
    ap.add_argument("--duration", type=int, default=30, help="seconds measured per run (default 30)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS), help="which to (re-)run, e.g. tutti (default: all)")
    ap.add_argument("--analyze-only", action="store_true", help="redraw from the extracts already in --out")
    a = ap.parse_args()
    seeds = seed_list(ap, "1" if a.quick and a.seeds == "1,2,3" else a.seeds)
    duration, warmup = (15, 3) if a.quick else (a.duration, 5)
    out = (a.out or HERE / ("results-quick" if a.quick else "results")).resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    picked = chosen(ap, "--schedulers", a.schedulers, SCHEDULERS)
    if not a.analyze_only:
        cfg = campaign_file(out, picked, seeds, duration, warmup)
        folder = out / "runs" / "campaign-smec-ran"
        if (folder / "campaign.toml").exists() and (folder / "campaign.toml").read_text() != cfg.read_text():
            aside = folder.with_name(f"{folder.name}.before-{time.strftime('%Y%m%d-%H%M%S')}")
            folder.rename(aside)  # another set of points (schedulers, seeds, timing): kept, a new campaign starts
            print(f"smec-ran: the campaign in {folder} had other points; moved to {aside}")
        print(f"smec-ran: {len(picked)} schedulers x {len(seeds)} seeds, one campaign ({cfg}); "
              f"progress in {out / 'logs' / 'campaign.log'}", flush=True)
        with open(out / "logs" / "campaign.log", "a") as log:
            p = subprocess.run([str(CONTINUUM), "run", str(cfg)], stdout=log, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            print(f"smec-ran: the campaign ended with {p.returncode}; see {out / 'logs' / 'campaign.log'} "
                  f"(run again to resume it)", file=sys.stderr)
            if not (folder / "campaign.json").exists():
                return 2
            if p.returncode == 130:
                return 130  # interrupted: the finished points are kept, the next run resumes; nothing redrawn
        for e in complete_points(folder):
            # Extracts beside the runs: the run folders (link and cell logs, tens of MB) are not committed.
            name = point_name(e["values"]["cell.uplink"], e["seed"])
            summary, df = point_rows(e["dir"])
            df.to_csv(out / f"lc-requests-{name}.csv.gz", index=False, float_format="%.3f")
            (out / f"cell-{name}.json").write_text(json.dumps(summary, indent=2) + "\n")
        for f in ("summary.csv", "table.md"):  # the campaign's own table, every point's M1-M4 (beside this script's)
            if (folder / f).exists():
                (out / f"campaign-{f}").write_text((folder / f).read_text())
    points: Points = {}
    for s in SCHEDULERS:
        for f in sorted(out.glob(f"cell-{s}-s*.json")):
            sd = int(re.fullmatch(rf"cell-{s}-s(\d+)\.json", f.name).group(1))  # type: ignore[union-attr]
            points.setdefault(s, {})[sd] = (json.loads(f.read_text()), pd.read_csv(out / f"lc-requests-{point_name(s, sd)}.csv.gz"))
    if not points:
        print(f"smec-ran: no extracts in {out}: run without --analyze-only first", file=sys.stderr)
        return 1
    t = table(points)
    made = figures(points, out)
    (out / "table.md").write_text(t + "\n")
    print(t)
    print("figures: " + ", ".join(str(p) for p in made))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
