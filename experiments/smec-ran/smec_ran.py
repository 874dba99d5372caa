"""The SMEC paper's RAN-side comparison, scaled to one machine: the shipped
configs/smec-ran.toml (three latency-critical video-like UEs and two bulk
uploaders in one cell replaying a public 5G trace) run once per uplink
scheduler (pf, rr, smec, tutti), then one table per class and figures next
to the paper's numbers (report.md).

Each point is an ordinary `continuum run` of a copy of that file with only
cell.uplink (and, with --quick, the timing) changed; the copies are kept
with the results, so any point can be re-run by hand."""

from __future__ import annotations

import argparse
import json
import re
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
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE.parent))
from continuum.results import cell  # noqa: E402
from points import chosen, log_cdf, run_point  # noqa: E402

BASE = REPO / "configs" / "smec-ran.toml"
SCHEDULERS = ("pf", "rr", "smec", "tutti")
LABEL = {"pf": "proportional fair", "rr": "round robin", "smec": "SMEC", "tutti": "Tutti-like"}


def point_config(out: Path, scheduler: str, quick: bool) -> Path:
    """A copy of the shipped file: only the scheduler, the output folder and (--quick) the timing differ."""
    text = BASE.read_text()
    text = re.sub(r'(?m)^uplink = "(smec|pf|rr|tutti)"$', f'uplink = "{scheduler}"', text)
    text = re.sub(r'(?m)^name = "smec-ran"$', f'name = "smec-ran-{scheduler}"', text)
    text = text.replace('"../workloads/example/app.py"', f'"{REPO / "workloads" / "example" / "app.py"}"')
    text = text.replace("[experiment]\n", f'[experiment]\noutput = "{out / "runs"}"\n', 1)
    if quick:
        text = re.sub(r"(?m)^duration_s = .*$", "duration_s = 20", text)
        text = re.sub(r"(?m)^warmup_s = .*$", "warmup_s = 3", text)
    assert tomllib.loads(text)["cell"]["uplink"] == scheduler
    path = out / "configs" / f"smec-ran-{scheduler}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
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
    if log is not None and log.scheduler in ("smec", "tutti"):
        every = every.join(cell.start_errors(every, log))  # warm-up too: Tutti's notices pair in order
    df = every[every["phase"] == "measure"].copy()
    df["ran_ms"] = df["uplink_ms"] - man["offload_one_way_ms"]
    df["slo_ms"] = df["endpoint"].map(lambda e: lc[e]["slo_ms"])
    return summary, df


def table(points: dict[str, tuple[dict, pd.DataFrame]]) -> str:
    head = ("| uplink scheduler | LC requests | LC SLO met | LC RAN P50 ms | LC RAN P99 ms | BE uplink Mbit/s (2 UEs) "
            "| start error P50 ms | start error P99 ms | starts not estimated |")
    rows = [head, "|---" * (head.count("|") - 1) + "|"]
    for s, (summary, _df) in points.items():
        lc, be = summary["classes"]["lc"], summary["classes"].get("be", {})
        f = lambda v, fmt="{:.1f}": "-" if v is None else fmt.format(v)  # noqa: E731
        rows.append(f"| {LABEL[s]} | {lc['requests']} | {f(lc.get('slo_met'), '{:.1%}')} | {f(lc.get('ran_ms_p50'))} "
                    f"| {f(lc.get('ran_ms_p99'))} | {f(be.get('throughput_mbps_uplink'))} | {f(lc.get('start_error_ms_p50'))} "
                    f"| {f(lc.get('start_error_ms_p99'))} | {f(lc.get('start_not_estimated'), '{:.1%}')} |")
    return "\n".join(rows)


def figures(points: dict[str, tuple[dict, pd.DataFrame]], out: Path) -> list[Path]:
    made = []
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for s, (_summary, df) in points.items():
        x = np.sort(df.loc[df["status"] == "ok", "ran_ms"].to_numpy())
        if len(x):
            ax.plot(x, np.arange(1, len(x) + 1) / len(df), drawstyle="steps-post", label=f"{LABEL[s]} ({len(df)} requests)")
    for slo, y in ((100, 0.03), (150, 0.1)):
        ax.axvline(slo, color="0.3", ls="--", lw=1)
        ax.text(slo, y, f" SLO {slo} ms", fontsize=8, color="0.3")
    made.append(log_cdf(fig, ax, "RAN latency per latency-critical request (ms, log scale): uplink less the core's one-way delay",
                         "fraction of requests (unanswered: never)",
                         "Latency-critical uplink in a shared 5G cell, per uplink scheduler (measured)", out / "ran_latency_cdf.png"))

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for s in ("smec", "tutti"):
        if s in points and "start_error_ms" in points[s][1]:
            e = np.sort(points[s][1]["start_error_ms"].dropna().to_numpy())
            if len(e):
                ax.plot(np.maximum(e, 0.1), np.arange(1, len(e) + 1) / len(e), drawstyle="steps-post",
                        label=f"{LABEL[s]}: P50 {np.percentile(e, 50):.1f} ms, P99 {np.percentile(e, 99):.1f} ms")
    ax.axvline(10, color="0.3", ls=":", lw=1)
    ax.text(10, 0.5, " SMEC paper:\n P99 about 10 ms", fontsize=8, color="0.3")
    made.append(log_cdf(fig, ax, "request start estimate minus the app's send time (ms, log scale; below 0.1 drawn at 0.1)",
                         "fraction of requests", "When the uplink scheduler learns that a request started (measured)",
                         out / "start_error_cdf.png"))

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    names = list(points)
    met = [points[s][0]["classes"]["lc"].get("slo_met") or 0 for s in names]
    be = [points[s][0]["classes"].get("be", {}).get("throughput_mbps_uplink") or 0 for s in names]
    a.bar([LABEL[s] for s in names], [100 * m for m in met], color="tab:blue")
    a.set_ylabel("latency-critical requests\nwithin their SLO (%)")
    a.set_ylim(0, 105)
    b.bar([LABEL[s] for s in names], be, color="tab:orange")
    b.set_ylabel("best-effort uplink, 2 bulk UEs\n(Mbit/s, measured window)")
    for ax in (a, b):
        ax.tick_params(axis="x", labelsize=8, rotation=15)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle("What each uplink scheduler gives each class (measured)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "classes.png", dpi=120)
    plt.close(fig)
    made.append(out / "classes.png")
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 s measured per scheduler instead of 60")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS), help="which to (re-)run, e.g. tutti (default: all)")
    ap.add_argument("--analyze-only", action="store_true", help="redraw from the runs (or their extracts) already in --out")
    a = ap.parse_args()
    out = a.out.resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    index = out / "points.json"
    runs: dict[str, str] = json.loads(index.read_text()) if index.exists() else {}
    picked = chosen(ap, "--schedulers", a.schedulers, SCHEDULERS)
    if not a.analyze_only:
        for s in picked:
            print(f"smec-ran: uplink scheduler {s} ...", flush=True)
            run_dir = run_point(point_config(out, s, a.quick), out / "logs" / f"{s}.log")
            runs[s] = str(run_dir.relative_to(out)) if run_dir.is_relative_to(out) else str(run_dir)
            index.write_text(json.dumps(runs, indent=2) + "\n")
    points = {}
    for s in SCHEDULERS:
        if s not in runs:
            continue
        extract, cell_json = out / f"lc-requests-{s}.csv", out / f"cell-{s}.json"
        if (not a.analyze_only and s in picked) or not extract.exists():
            # Extracts beside the runs: the link and cell logs (tens of MB) are not committed.
            summary, df = point_rows(out / runs[s])
            df.to_csv(extract, index=False)
            cell_json.write_text(json.dumps(summary, indent=2) + "\n")
        points[s] = (json.loads(cell_json.read_text()), pd.read_csv(extract))
    t = table(points)
    made = figures(points, out)
    (out / "table.md").write_text(t + "\n")
    print(t)
    print("figures: " + ", ".join(str(p) for p in made))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
