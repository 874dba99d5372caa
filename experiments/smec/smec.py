"""SMEC's evaluation, scaled to one 2-core machine: configs/smec-mix.toml
(2 SS + 2 AR + 2 VC + 6 FT UEs in one cell, one 1-CPU edge) run under five
combinations of uplink scheduler and edge manager, then a table per app
and figures next to the paper's numbers (report.md):

    default     PF uplink      + Linux's scheduler   (the paper's Default)
    smec        SMEC uplink    + SMEC's edge manager (the paper's SMEC)
    smec-ran    SMEC uplink    + Linux's scheduler   (the RAN half alone)
    smec-edge   PF uplink      + SMEC's edge manager (the edge half alone)
    tutti       Tutti-like RAN + Linux's scheduler
    smec-nodrop SMEC, early drop off (what early drop adds)

Two workloads, as in the paper: `dynamic` (the file as written: Poisson
arrivals, bursts) into results/, and `static` (--workload static: constant
arrivals) into results/static/. FT sends 3-MB files in both: the paper's
static size; its dynamic 1 KB-10 MB sizes are not run here.

Each point is an ordinary `continuum run` of a copy of that file with only
cell.uplink, edge.manager.kind, early_drop, the arrivals (and, with --quick,
the timing) changed; the copies are kept with the results, so any point can
be re-run by hand."""

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
sys.path.insert(0, str(HERE.parent))
from points import chosen, log_cdf, run_point  # noqa: E402

BASE = REPO / "configs" / "smec-mix.toml"
POINTS = {  # name: (uplink scheduler, edge manager, label)
    "default": ("pf", "default", "Default (PF + Linux)"),
    "smec": ("smec", "smec", "SMEC (RAN + edge)"),
    "smec-ran": ("smec", "default", "SMEC RAN + Linux"),
    "smec-edge": ("pf", "smec", "PF + SMEC edge"),
    "tutti": ("tutti", "default", "Tutti-like RAN + Linux"),
    "smec-nodrop": ("smec", "smec", "SMEC, no early drop"),
}
APPS = ("ss", "ar", "vc", "ft")
KEEP = ["app", "endpoint", "status", "e2e_ms", "uplink_ms", "downlink_ms", "server_ms", "request_bytes",
        "network_err_ms", "budget_ms", "drop_reason", "t_drawn", "t_received"]


def point_config(out: Path, point: str, quick: bool, workload: str = "dynamic") -> Path:
    uplink, manager, _ = POINTS[point]
    text = BASE.read_text()
    if workload == "static":
        text = re.sub(r'(?m)^arrivals = "poisson"(.*)$', 'arrivals = "constant"   # SMEC\'s static workload', text, count=1)
    text = re.sub(r'(?m)^uplink = "smec"( +#.*)?$', f'uplink = "{uplink}"', text, count=1)
    text = re.sub(r'(?m)^kind = "smec"$', f'kind = "{manager}"', text)
    text = re.sub(r'(?m)^name = "smec-mix"$', f'name = "smec-{point}{"-static" if workload == "static" else ""}"', text)
    if point == "smec-nodrop":
        text = re.sub(r"(?m)^early_drop = true$", "early_drop = false", text)
    text = text.replace("[experiment]\n", f'[experiment]\noutput = "{out / "runs"}"\n', 1)
    if quick:
        text = re.sub(r"(?m)^duration_s = .*$", "duration_s = 20", text)
        text = re.sub(r"(?m)^warmup_s = .*$", "warmup_s = 3", text)
    parsed = tomllib.loads(text)
    assert (parsed["cell"]["uplink"], parsed["edge"]["manager"]["kind"]) == (uplink, manager), point
    assert parsed["edge"]["manager"]["early_drop"] == (point != "smec-nodrop"), point
    assert parsed["workload"]["arrivals"] == ("constant" if workload == "static" else "poisson"), workload
    path = out / "configs" / f"smec-{point}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def extract(run_dir: Path, out: Path, point: str) -> None:
    """What the report needs, beside the runs (their link and cell logs, tens of MB, are not committed)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    df = pd.read_csv(run_dir / "requests.csv")
    df = df[df["phase"] == "measure"]
    df[[c for c in KEEP if c in df]].to_csv(out / f"requests-{point}.csv", index=False)
    keep = {k: summary[k] for k in ("apps", "cell", "smec") if k in summary}
    (out / f"summary-{point}.json").write_text(json.dumps(keep, indent=2) + "\n")


def table(points: dict[str, dict]) -> str:
    head = "| point | app | SLO ms | SLO met | P50 ms | P99 ms | early drops | timeouts | goodput Mbit/s |"
    rows = [head, "|---" * (head.count("|") - 1) + "|"]
    f = lambda v, fmt="{:.1f}": "-" if v is None else fmt.format(v)  # noqa: E731
    for p, s in points.items():
        for app in APPS:
            a = s["apps"][app]
            rows.append(f"| {POINTS[p][2]} | {app} | {f(a['slo_ms'], '{:g}') if a['slo_ms'] else 'best effort'} "
                        f"| {f(a.get('slo_met'), '{:.1%}')} | {f(a['e2e_ms_p50'])} | {f(a['e2e_ms_p99'])} "
                        f"| {a['early_drops'] / max(1, a['requests']):.1%} | {a['timeouts']} | {f(a.get('goodput_mbps'), '{:.2f}')} |")
    return "\n".join(rows)


def figures(points: dict[str, dict], frames: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    made = []
    fig, ax = plt.subplots(figsize=(9, 3.8))
    lc = [a for a in APPS if a != "ft"]
    width = 0.8 / len(points)
    for i, (p, s) in enumerate(points.items()):
        met = [100 * (s["apps"][a].get("slo_met") or 0) for a in lc]
        bars = ax.bar(np.arange(len(lc)) + i * width, met, width, label=POINTS[p][2], color=f"C{i}")
        ax.bar_label(bars, [f"{m:.0f}" for m in met], fontsize=7, padding=1)  # a 0% bar is still seen
    ax.set_xticks(np.arange(len(lc)) + width * (len(points) - 1) / 2,
                  [f"{a} (SLO {points[next(iter(points))]['apps'][a]['slo_ms']:g} ms)" for a in lc])
    ax.set_ylabel("requests within their SLO (%)\n(dropped and late both miss)")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, ncol=3, loc="upper right", title="bar labels: % of requests", title_fontsize=7)
    ax.set_title("SLO satisfaction per latency-critical app (measured, scaled setup)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "slo_met.png", dpi=120)
    plt.close(fig)
    made.append(out / "slo_met.png")

    for app in lc:
        fig, ax = plt.subplots(figsize=(7.5, 4.0))
        for i, (p, df) in enumerate(frames.items()):
            d = df[df["app"] == app]
            x = np.sort(d.loc[d["status"] == "ok", "e2e_ms"].to_numpy())
            if len(x):
                ax.plot(x, np.arange(1, len(x) + 1) / len(d), drawstyle="steps-post", color=f"C{i}",
                        label=f"{POINTS[p][2]} ({len(d)} requests)")
        slo = points[next(iter(points))]["apps"][app]["slo_ms"]
        ax.axvline(slo, color="0.3", ls="--", lw=1)
        ax.text(slo, 0.03, f" SLO {slo:g} ms", fontsize=8, color="0.3")
        made.append(log_cdf(fig, ax, "end-to-end latency (ms, log scale)", "fraction of requests (dropped, late: never)",
                            f"{app}: end-to-end latency per point (measured)", out / f"e2e_cdf_{app}.png"))
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 s measured per point instead of 60")
    ap.add_argument("--workload", choices=("dynamic", "static"), default="dynamic",
                    help="dynamic: Poisson arrivals (the file as written); static: constant arrivals")
    ap.add_argument("--out", type=Path, help="default: results/ (dynamic), results/static/ (static)")
    ap.add_argument("--points", default=",".join(POINTS), help=f"which to (re-)run (default: all of {', '.join(POINTS)})")
    ap.add_argument("--analyze-only", action="store_true", help="redraw from the extracts already in --out")
    a = ap.parse_args()
    out = (a.out or (HERE / "results" / ("static" if a.workload == "static" else ""))).resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    picked = chosen(ap, "--points", a.points, POINTS)
    if not a.analyze_only:
        for p in picked:
            print(f"smec: {POINTS[p][2]} ...", flush=True)
            extract(run_point(point_config(out, p, a.quick, a.workload), out / "logs" / f"{p}.log"), out, p)
    points = {p: json.loads((out / f"summary-{p}.json").read_text()) for p in POINTS if (out / f"summary-{p}.json").exists()}
    frames = {p: pd.read_csv(out / f"requests-{p}.csv") for p in points}
    t = table(points)
    (out / "table.md").write_text(t + "\n")
    made = figures(points, frames, out)
    print(t)
    print("figures: " + ", ".join(str(p) for p in made))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
