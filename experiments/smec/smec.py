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

The load is the file's: each latency-critical app at a utilisation of the
edge (0.2 each, 0.6 together), turned into a rate by the calibration at the
start of each run. Every point runs once per seed (default 1, 2, 3: the
arrivals, payloads and FT schedule differ); tables give each share as the
mean over the seeds [min-max] and each percentile as the median of the
runs' own values [min-max]. --sweep runs Default and SMEC at other total
latency-critical utilisations (into results/sweep/), so a reader sees where
each breaks.

Utilisation carries the load from machine to machine, but not the slack an
SLO in milliseconds leaves: where SS takes 94 ms instead of the 29 ms of the
machine the file was written on, its 100-ms SLO cannot be met at any load.
--scale-slo scales each latency-critical app's SLO by its service time
calibrated here over the reference machine's (REFERENCE_MS), so each leaves
the slack it left there (into results/scaled-slo/).

Each part is one campaign (docs/campaigns.md): the file with a [sweep] of
the points as named arms (cell.uplink, edge.manager.kind, early_drop) and
the seeds, with only the arrivals, the utilisation, the SLOs and the timing
changed as the part asks (`check` holds every point to that, key for key);
its file is kept with the results (OUT/smec-PART.toml), `continuum run` of
it resumes where it stopped, and each point's run folder is an ordinary one
under OUT/runs/campaign-smec-PART/points/."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import tomli_w

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE.parent))
from continuum import calibration  # noqa: E402
from continuum import experiment  # noqa: E402
from points import chosen, complete_points, flat, log_cdf, med_range, plain_log_ticks, seed_list, set_timing, spread, write_campaign  # noqa: E402

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
LC = ("ss", "ar", "vc")
FILE_LOAD = 0.6  # the file's total latency-critical utilisation (0.2 per app)
SWEPT = ("default", "smec")
# the apps' median service times on the 1-CPU edge of the machine configs/smec-mix.toml was written on
# (`continuum calibrate configs/smec-mix.toml`, 2026-11-24), which its SLOs were chosen against
REFERENCE_MS = {"ss": 29.0, "ar": 24.0, "vc": 42.0}
KEEP = ["app", "endpoint", "status", "e2e_ms", "uplink_ms", "downlink_ms", "server_ms", "request_bytes",
        "network_err_ms", "budget_ms", "drop_reason", "t_drawn", "t_received"]


def point_name(point: str, seed: int, load: float = FILE_LOAD) -> str:
    return f"{point}" + ("" if load == FILE_LOAD else f"-u{load:g}") + f"-s{seed}"


def scaled_slos(out: Path) -> dict[str, float]:
    """Each latency-critical app's SLO times its calibrated service time here over the reference machine's:
    `continuum calibrate` of the file (the runs then take their rates from the same cache entries). Once
    measured for OUT, kept (slo.json): a later --sweep into the same folder uses the same SLOs."""
    import subprocess

    if (out / "slo.json").exists():
        return json.loads((out / "slo.json").read_text())["slo_ms"]
    (out / "logs").mkdir(parents=True, exist_ok=True)
    with open(out / "logs" / "calibrate.log", "w") as log:
        p = subprocess.run([str(REPO / ".venv" / "bin" / "continuum"), "calibrate", str(BASE)], stdout=log, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise SystemExit(f"continuum calibrate {BASE} failed; see {out / 'logs' / 'calibrate.log'}")
    spec = experiment.load(BASE, materialize=False)
    found = calibration.from_cache(spec, spec.offload_node.name, calibration.cpu_model())
    slos = {a.name: a.slo_ms for a in spec.apps}
    scaled = {app: round(slos[app] * found[app].summary["median"] / REFERENCE_MS[app]) for app in LC}
    (out / "slo.json").write_text(json.dumps({"reference_ms": REFERENCE_MS, "file_slo_ms": {a: slos[a] for a in LC},
                                              "calibrated_ms": {a: found[a].summary["median"] for a in LC},
                                              "slo_ms": scaled}, indent=2) + "\n")
    return scaled


def campaign_name(workload: str, loads: list[float], scaled: bool) -> str:
    return "smec-" + ("sweep" if loads != [FILE_LOAD] else workload) + ("-scaled" if scaled else "")


def arm(point: str) -> dict:
    """What a point of the comparison sets: its uplink scheduler, edge manager and early drop."""
    uplink, manager, _ = POINTS[point]
    return {"cell.uplink": uplink, "edge.manager.kind": manager, "edge.manager.early_drop": point != "smec-nodrop"}


def campaign_text(out: Path, picked: list[str], seeds: list[int], duration_s: int, warmup_s: int,
                  workload: str = "dynamic", loads: list[float] | None = None, slos: dict[str, float] | None = None) -> str:
    """The shipped file with the part's arrivals, SLOs, timing and output, and a [sweep] of the points as
    arms, the seeds and (for a load sweep) the three latency-critical apps' utilisations moving together."""
    loads = loads or [FILE_LOAD]
    text = BASE.read_text()
    if workload == "static":
        text = re.sub(r'(?m)^arrivals = "poisson"(.*)$', 'arrivals = "constant"   # SMEC\'s static workload', text, count=1)
    for app, slo in (slos or {}).items():
        text = re.sub(rf"(?ms)^(\[workload\.apps\.{app}\]\n(?:[^\[\n][^\n]*\n|\n)*?)slo_ms = \d+$", rf"\g<1>slo_ms = {slo:g}", text, count=1)
    name = campaign_name(workload, loads, bool(slos))
    text = text.replace('name = "smec-mix"', f'name = "{name}"\noutput = "{out / "runs"}"', 1)
    text = set_timing(text, duration_s, warmup_s)
    sweep: dict = {"seeds": seeds, "arms": {p: arm(p) for p in picked}}
    if loads != [FILE_LOAD]:
        for app in LC:
            sweep[f"workload.apps.{app}.utilisation"] = [round(u / len(LC), 6) for u in loads]
        sweep["zip"] = [[f"workload.apps.{app}.utilisation" for app in LC]]
    return text + "\n" + tomli_w.dumps({"sweep": sweep})


def check(path: Path, workload: str, slos: dict[str, float] | None) -> None:
    """Every point of the campaign is the shipped file but for its arm's keys, its seed, its load, the part's
    arrivals and SLOs, and the timing and names a campaign sets."""
    from continuum.campaign import sweep

    base = flat(tomllib.loads(BASE.read_text()))
    ignore = {"experiment.name", "experiment.output", "experiment.duration_s", "experiment.warmup_s"}
    for p in sweep.points(path):
        want = {**base, **arm(p.arm or ""), "experiment.seed": p.seed,
                **{f"workload.apps.{a}.slo_ms": v for a, v in (slos or {}).items()}, **p.values}
        if workload == "static":
            want["workload.arrivals"] = "constant"
        got = flat(tomllib.loads(p.text))
        diff = {k for k in set(want) | set(got) if k not in ignore and want.get(k) != got.get(k)}
        assert not diff, f"{path} point {p.index} ({p.label()}) differs from {BASE.name} in {sorted(diff)}"


def run_campaign(where: Path, text: str, workload: str, slos: dict[str, float] | None) -> list[dict]:
    """The campaign written (and checked) into WHERE and run (resuming: its complete points are kept); its
    complete points (arm, seed, LC load, run folder)."""
    name = re.search(r'(?m)^name = "(.+)"$', text)
    assert name
    path = write_campaign(where / f"{name[1]}.toml", text, lambda p: check(p, workload, slos))
    p = subprocess.run([str(REPO / ".venv" / "bin" / "continuum"), "run", str(path)])
    folder = where / "runs" / f"campaign-{name[1]}"
    if (folder / "table.md").exists():  # the campaign's own table (M1-M4 per arm and seed's runs) beside this one
        (where / "campaign-table.md").write_text((folder / "table.md").read_text())
    if p.returncode != 0:
        print(f"smec: {path.name}: some points did not complete (see {folder / 'campaign.json'}); "
              "the analysis uses those that did, and running this again runs the rest", file=sys.stderr)
    return [{"arm": e["arm"], "seed": e["seed"],
             "load": len(LC) * float(e["values"].get("workload.apps.ss.utilisation", FILE_LOAD / len(LC))), "dir": e["dir"]}
            for e in complete_points(folder)]


def extract(run_dir: Path, out: Path, name: str) -> None:
    """What the report needs, beside the runs (their link and cell logs, tens of MB, are not committed)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    df = pd.read_csv(run_dir / "requests.csv")
    df = df[df["phase"] == "measure"]
    df[[c for c in KEEP if c in df]].to_csv(out / f"requests-{name}.csv.gz", index=False, float_format="%.3f")
    keep = {k: summary[k] for k in ("apps", "cell", "smec", "load") if k in summary}
    (out / f"summary-{name}.json").write_text(json.dumps(keep, indent=2) + "\n")


def collect(out: Path, load: float = FILE_LOAD) -> dict[str, dict[int, dict]]:
    """Every point's summaries found in OUT at this load, by seed."""
    found: dict[str, dict[int, dict]] = {}
    for p in POINTS:
        tag = re.escape(p + ("" if load == FILE_LOAD else f"-u{load:g}"))
        for f in sorted(out.glob("summary-*.json")):
            m = re.fullmatch(rf"summary-{tag}-s(\d+)\.json", f.name)
            if m:
                found.setdefault(p, {})[int(m.group(1))] = json.loads(f.read_text())
    return found


def table(points: dict[str, dict[int, dict]]) -> str:
    head = ("| point | app | runs | SLO ms | SLO met | P50 ms | P99 ms | early drops | timeouts | goodput Mbit/s | "
            "offered util. | server busy |")
    rows = [head, "|---" * (head.count("|") - 1) + "|",
            "| | | | | mean [min-max] | median [min-max] | median [min-max] | mean | total | mean [min-max] | mean | mean |"]
    for p, runs in points.items():
        for app in APPS:
            a = [s["apps"][app] for s in runs.values()]
            ld = [s.get("load", {}).get(app, {}) for s in runs.values()]
            slo = a[0]["slo_ms"]
            offered = [x.get("utilisation_offered") for x in ld if x]
            busy = [x.get("busy") for x in ld if x and x.get("busy") is not None]
            rows.append(f"| {POINTS[p][2]} | {app} | {len(a)} | {f'{slo:g}' if slo else 'best effort'} "
                        f"| {spread([x.get('slo_met') for x in a])} | {med_range([x['e2e_ms_p50'] for x in a], '{:.0f}')} "
                        f"| {med_range([x['e2e_ms_p99'] for x in a], '{:.0f}')} "
                        f"| {sum(x['early_drops'] for x in a) / max(1, sum(x['requests'] for x in a)):.1%} "
                        f"| {sum(x['timeouts'] for x in a)} | {spread([x.get('goodput_mbps') for x in a], '{:.1f}')} "
                        f"| {f'{np.mean(offered):.2f}' if offered else '-'} | {f'{np.mean(busy):.0%}' if busy else '-'} |")
    return "\n".join(rows)


def slo_bars(points: dict[str, dict[int, dict]], out: Path, title: str) -> Path:
    """Each point's SLO share per app: the bar is the mean over seeds, the whisker min-max, a dot each seed."""
    fig, ax = plt.subplots(figsize=(9.5, 4.0))
    width = 0.8 / len(points)
    seeds = sorted({s for runs in points.values() for s in runs})
    for i, (p, runs) in enumerate(points.items()):
        x = np.arange(len(LC)) + i * width
        met = np.array([[100 * (s["apps"][a].get("slo_met") or 0) for a in LC] for s in runs.values()])
        mean = met.mean(axis=0)
        ax.bar(x, mean, width, label=POINTS[p][2], color=f"C{i}", alpha=0.75)
        ax.errorbar(x, mean, yerr=[mean - met.min(axis=0), met.max(axis=0) - mean], fmt="none", ecolor="k", lw=0.8, capsize=2)
        for row in met:
            ax.plot(x, row, "k.", ms=2.5)
        for xi, m, top in zip(x, mean, met.max(axis=0)):  # above the whisker: a 0% bar is still seen
            ax.text(xi, top + 1.5, f"{m:.0f}", ha="center", va="bottom", fontsize=7)
    first = next(iter(points.values()))
    slo = next(iter(first.values()))["apps"]
    ax.set_xticks(np.arange(len(LC)) + width * (len(points) - 1) / 2, [f"{a} (SLO {slo[a]['slo_ms']:g} ms)" for a in LC])
    ax.set_ylabel("requests within their SLO (%)\n(dropped and late both miss)")
    ax.set_ylim(0, 112)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7.5, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    ax.set_title(f"{title}\nbar: mean of seeds {', '.join(map(str, seeds))}; whisker: min-max; dot: one run", fontsize=9.5)
    fig.tight_layout()
    fig.savefig(out / "slo_met.png", dpi=120)
    plt.close(fig)
    return out / "slo_met.png"


def figures(points: dict[str, dict[int, dict]], out: Path, title: str) -> list[Path]:
    made = [slo_bars(points, out, title)]
    for app in LC:
        fig, ax = plt.subplots(figsize=(7.5, 4.0))
        for i, (p, runs) in enumerate(points.items()):
            frames = [pd.read_csv(out / f"requests-{point_name(p, s)}.csv.gz") for s in runs]
            df = pd.concat(frames)
            d = df[df["app"] == app]
            x = np.sort(d.loc[d["status"] == "ok", "e2e_ms"].to_numpy())
            if len(x):
                ax.plot(x, np.arange(1, len(x) + 1) / len(d), drawstyle="steps-post", color=f"C{i}",
                        label=f"{POINTS[p][2]} ({len(d)} requests, {len(runs)} runs)")
        slo = next(iter(next(iter(points.values())).values()))["apps"][app]["slo_ms"]
        ax.axvline(slo, color="0.3", ls="--", lw=1)
        ax.text(slo, 0.5, f" SLO {slo:g} ms", fontsize=8, color="0.3", rotation=90, va="center", ha="right")
        made.append(log_cdf(fig, ax, "end-to-end latency (ms, log scale)", "fraction of requests (dropped, late: never)",
                            f"{app}: end-to-end latency per point, the seeds' runs pooled (measured)", out / f"e2e_cdf_{app}.png",
                            legend_loc="lower right"))
    return made


def sweep_data(out: Path) -> dict[str, dict[float, dict[int, dict]]]:
    """Default's and SMEC's runs at every load: the sweep's, and the file's own load from the main results."""
    data: dict[str, dict[float, dict[int, dict]]] = {p: {} for p in SWEPT}
    loads = {float(m.group(1)) for f in (out / "sweep").glob("summary-*.json") if (m := re.search(r"-u([0-9.]+)-s\d+\.json$", f.name))}
    for load in sorted(loads | {FILE_LOAD}):
        got = collect(out if load == FILE_LOAD else out / "sweep", load)
        for p in SWEPT:
            if got.get(p):
                data[p][load] = got[p]
    return data


def sweep_table(data: dict[str, dict[float, dict[int, dict]]]) -> str:
    head = "| LC utilisation asked | point | runs | " + " | ".join(f"{a} SLO met | {a} P99 ms" for a in LC) + " | edge busy (sum of apps) |"
    rows = [head, "|---" * (head.count("|") - 1) + "|"]
    for load in sorted({u for p in data.values() for u in p}):
        for p in SWEPT:
            runs = data[p].get(load)
            if not runs:
                continue
            cells = []
            for a in LC:
                cells.append(spread([s["apps"][a].get("slo_met") for s in runs.values()]))
                cells.append(med_range([s["apps"][a]["e2e_ms_p99"] for s in runs.values()]))
            busy = [sum((s.get("load", {}).get(a, {}).get("busy") or 0) for a in LC) for s in runs.values()]
            rows.append(f"| {load:g} | {POINTS[p][2]} | {len(runs)} | " + " | ".join(cells) + f" | {spread(busy, '{:.0%}')} |")
    return "\n".join(rows)


def sweep_figure(data: dict[str, dict[float, dict[int, dict]]], out: Path, note: str = "") -> Path | None:
    if not any(len(v) > 1 for v in data.values()):
        return None
    fig, axes = plt.subplots(2, len(LC), figsize=(12, 6.5), sharex=True)
    for j, app in enumerate(LC):
        top, bottom = axes[0, j], axes[1, j]
        for p in SWEPT:
            loads = sorted(data[p])
            met = [[100 * (s["apps"][app].get("slo_met") or 0) for s in data[p][u].values()] for u in loads]
            p99 = [[s["apps"][app]["e2e_ms_p99"] for s in data[p][u].values() if s["apps"][app]["e2e_ms_p99"]] for u in loads]
            color = f"C{list(POINTS).index(p)}"
            top.plot(loads, [np.mean(m) for m in met], "o-", color=color, label=POINTS[p][2])
            top.fill_between(loads, [min(m) for m in met], [max(m) for m in met], color=color, alpha=0.2)
            bottom.plot(loads, [np.median(v) for v in p99], "o-", color=color, label=POINTS[p][2])
            bottom.fill_between(loads, [min(v) for v in p99], [max(v) for v in p99], color=color, alpha=0.2)
        slo = next(iter(next(iter(data["smec"].values())).values()))["apps"][app]["slo_ms"]
        top.set_title(f"{app} (SLO {slo:g} ms)", fontsize=10)
        top.set_ylim(0, 103)
        bottom.set_yscale("log")
        plain_log_ticks(bottom.yaxis)
        bottom.axhline(slo, color="0.3", ls="--", lw=1)
        bottom.text(bottom.get_xlim()[0], slo, " SLO", fontsize=8, color="0.3", va="bottom")
        bottom.set_xlabel("latency-critical load asked\n(utilisation of the 1-CPU edge, all 3 apps)")
        for ax in (top, bottom):
            ax.grid(alpha=0.3, which="both")
            ax.axvline(FILE_LOAD, color="0.6", ls=":", lw=1)
    axes[0, 0].set_ylabel("requests within SLO (%)\nline: mean of seeds; band: min-max")
    axes[1, 0].set_ylabel("P99 end-to-end (ms, log)\nline: median of seeds; band: min-max")
    axes[0, 0].legend(fontsize=8, loc="lower left")
    fig.suptitle("Where each policy breaks: SMEC's mix at rising load (measured; dotted: the file's 0.6)"
                 + (f"\n{note}" if note else ""), fontsize=10.5)
    fig.tight_layout()
    fig.savefig(out / "sweep.png", dpi=120)
    plt.close(fig)
    return out / "sweep.png"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one seed, 15 s measured, into results-quick/ (a smoke run)")
    ap.add_argument("--workload", choices=("dynamic", "static"), default="dynamic",
                    help="dynamic: Poisson arrivals (the file as written); static: constant arrivals")
    ap.add_argument("--seeds", default="1,2,3", help="repetitions, one run per seed and point (default 1,2,3)")
    ap.add_argument("--duration", type=int, default=30, help="seconds measured per run (default 30)")
    ap.add_argument("--out", type=Path, help="default: results/ (dynamic), results/static/ (static)")
    ap.add_argument("--points", help=f"which to (re-)run (default: all of {', '.join(POINTS)}; with --scale-slo, "
                    f"{', '.join(SWEPT)}; '' for none, e.g. with --sweep)")
    ap.add_argument("--sweep", default="", help="total latency-critical utilisations to run Default and SMEC at, "
                    "e.g. 0.3,0.45,0.9,1.2 (into OUT/sweep/; the file's 0.6 comes from the main points)")
    ap.add_argument("--scale-slo", action="store_true", help="each latency-critical SLO scaled by its service time "
                    "calibrated here over the reference machine's, into results/scaled-slo/ (default points: default,smec; "
                    "with --sweep, the sweep too)")
    ap.add_argument("--analyze-only", action="store_true", help="redraw from the extracts already in --out")
    a = ap.parse_args()
    seeds = seed_list(ap, "1" if a.quick and a.seeds == "1,2,3" else a.seeds)
    duration, warmup = (15, 3) if a.quick else (a.duration, 5)
    default_out = HERE / ("results-quick" if a.quick else "results") / \
        ("static" if a.workload == "static" else "scaled-slo" if a.scale_slo else "")
    out = (a.out or default_out).resolve()
    try:
        sweep = [float(u) for u in a.sweep.split(",") if u]
    except ValueError:
        ap.error(f"--sweep: {a.sweep!r} is not a comma-separated list of utilisations, e.g. 0.3,0.9")
    if sweep and a.workload == "static":
        ap.error("--sweep runs the dynamic workload only (its 0.6 point comes from the dynamic main points)")
    if a.scale_slo and a.workload == "static":
        ap.error("--scale-slo runs the dynamic workload only")
    given = a.points if a.points is not None else ",".join(SWEPT if a.scale_slo else POINTS)
    picked = chosen(ap, "--points", given, POINTS)
    if not a.analyze_only:
        slos = scaled_slos(out) if a.scale_slo else None
        if slos:
            print("smec: SLOs scaled to this machine: " + ", ".join(f"{k} {v:g} ms" for k, v in slos.items()), flush=True)
        parts = [(out, campaign_text(out, picked, seeds, duration, warmup, a.workload, None, slos))] if picked else []
        if sweep:
            parts.append((out / "sweep", campaign_text(out / "sweep", list(SWEPT), seeds, duration, warmup, a.workload, sweep, slos)))
        for where, text in parts:
            for pt in run_campaign(where, text, a.workload, slos):
                extract(Path(pt["dir"]), where, point_name(pt["arm"], pt["seed"], round(pt["load"], 6)))
    points = collect(out)
    if not points:
        print(f"smec: no extracts in {out}: run without --analyze-only first", file=sys.stderr)
        return 1
    title = (f"SLO satisfaction per latency-critical app, {a.workload} workload, LC load {FILE_LOAD:g} of the edge "
             "(measured, scaled setup)")
    scaled = ""
    if a.scale_slo and (out / "slo.json").exists():
        slo_ms = json.loads((out / "slo.json").read_text())["slo_ms"]
        scaled = "SLOs scaled to this machine: " + ", ".join(f"{k} {v:g} ms" for k, v in slo_ms.items())
        title = f"{title}\n{scaled} (their SLO x calibrated here / on the reference machine)"
    t = table(points)
    made = figures(points, out, title)
    if a.workload == "dynamic":
        data = sweep_data(out)
        st = sweep_table(data)
        fig = sweep_figure(data, out, scaled)
        if fig:
            made.append(fig)
            t += "\n\n" + st
    (out / "table.md").write_text(t + "\n")
    print(t)
    print("figures: " + ", ".join(str(p) for p in made))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
