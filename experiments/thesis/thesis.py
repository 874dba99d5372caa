"""Run the reference thesis' experiments (E1-E4 and the 6G projection) from
the shipped experiment files in configs/thesis/, then draw the figures and
write report.md next to the thesis' numbers (analyze.py).

Each experiment runs as one campaign (campaign.py: its points' shipped
files as named arms, only [experiment] timing (--quick, --repetitions) and
where results go changed), and each point is an ordinary run of its file, so
what the report says can be re-run point by point. An interrupted run
continues where it stopped when run again (the campaigns resume);
points.json indexes every point's run for the analysis."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CONFIGS = REPO / "configs" / "thesis"
CONTINUUM = REPO / ".venv" / "bin" / "continuum"
sys.path.insert(0, str(HERE.parent))
from points import write_campaign  # noqa: E402

EXPERIMENTS = {
    "E1": ["e1-lte", "e1-5g", "e1-5g-obstacle", "e1-5g-mmwave"],
    "E2": ["e2-image", "e2-text"],
    "E3": ["e3-edge", "e3-eu-central-1", "e3-eu-west-3", "e3-us-east-1"],
    "E4": ["e4-2rps", "e4-5rps", "e4-10rps", "e4-2rps-cc", "e4-5rps-cc", "e4-10rps-cc"],
    "6G": ["6g-emulated"],
}
# --quick: one short repetition per point. E2's text requests take ~2 s of
# compute each and E4 needs the Verizon trace's first capacity drop (~40 s in).
QUICK = {"duration_s": 20, "warmup_s": 3, "repetitions": 1}
QUICK_DURATION = {"E2": 30, "E4": 45}
# Seconds a run spends around its measured time (namespaces, verification,
# model start, teardown, plots), for the time estimate.
OVERHEAD_S = {"e2-text": 45}
DEFAULT_OVERHEAD_S = 18


def experiment_of(point: str) -> str:
    return next(e for e, pts in EXPERIMENTS.items() if point in pts)


def timing(point: str, quick: bool, repetitions: int | None) -> dict:
    base = tomllib.loads((CONFIGS / f"{point}.toml").read_text())["experiment"]
    t = {k: base[k] for k in ("duration_s", "warmup_s", "repetitions")}
    if quick:
        t = dict(QUICK, duration_s=QUICK_DURATION.get(experiment_of(point), QUICK["duration_s"]))
    if repetitions:
        t["repetitions"] = repetitions
    return t


def expected_s(point: str, t: dict) -> float:
    return t["repetitions"] * (t["duration_s"] + t["warmup_s"] + 4) + OVERHEAD_S.get(point, DEFAULT_OVERHEAD_S)


def run_experiment(experiment: str, points: list[str], t: dict, out: Path, segmentation: str | None, command: str) -> tuple[int, list[dict]]:
    """One experiment's POINTS as one campaign (resumed if it ran before); its `continuum run` exit status and
    a points.json record per point."""
    import campaign

    every = EXPERIMENTS[experiment]
    name = campaign.name(experiment, points, every)
    cfg = out / "configs" / f"{name}.toml"
    write_campaign(cfg, campaign.text(experiment, points, every, t, out, segmentation),
                   lambda path: campaign.check(path, points, segmentation))
    rc = subprocess.call([str(CONTINUUM), "run", str(cfg)], cwd=REPO, env={**os.environ, "COLUMNS": "140"})
    folder = out / "runs" / f"campaign-{name}"
    state = json.loads((folder / "campaign.json").read_text())["points"] if (folder / "campaign.json").exists() else []
    by_arm = {e["arm"]: e for e in state}
    recs = []
    for p in points:
        e = by_arm.get(p, {})
        recs.append({"point": p, "experiment": experiment, "config": f"configs/thesis/{p}.toml",
                     "as_run": str(cfg.relative_to(out)), "campaign": str(folder.relative_to(out)), "timing": t,
                     "segmentation": segmentation or "as in the file", "status": e.get("status", "missing"),
                     "run_dir": str((folder / e["run"]).relative_to(out)) if e.get("run") else None,
                     "wall_s": e.get("wall_s"), "command": command})
    return rc, recs


def versions() -> dict:
    def out(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return None
    return {"continuum_commit": out(["git", "-C", str(REPO), "rev-parse", "HEAD"]),
            "continuum_dirty": bool(out(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"])),
            "python": platform.python_version(), "kernel": platform.release(), "machine": platform.machine(),
            "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="experiments/thesis/run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20-45 s per point, one repetition (a smoke test, < 20 min)")
    ap.add_argument("--only", default="", help="comma-separated experiments or points, e.g. E1,E4 or e4-10rps")
    ap.add_argument("--repetitions", type=int, help="override every point's repetitions")
    ap.add_argument("--out", type=Path, help="results folder (default: experiments/thesis/results, or runs/thesis-quick with --quick)")
    ap.add_argument("--segmentation", choices=["auto", "emulator", "kernel"],
                    help="set every point's mobile.segmentation (default: each file's own, i.e. auto); "
                         "compare two runs with experiments/thesis/compare.py")
    ap.add_argument("--analyze-only", action="store_true", help="redraw figures and report.md from --out; run nothing")
    ap.add_argument("--list", action="store_true", help="print the points and the expected duration; run nothing")
    a = ap.parse_args(argv)

    wanted = [s.strip() for s in a.only.split(",") if s.strip()]
    points = []
    for exp, pts in EXPERIMENTS.items():
        for p in pts:
            if not wanted or exp in wanted or p in wanted:
                points.append(p)
    unknown = [w for w in wanted if w not in EXPERIMENTS and not any(w in v for v in EXPERIMENTS.values())]
    if unknown:
        ap.error(f"--only: unknown {', '.join(unknown)}; valid: {', '.join(EXPERIMENTS)} or a point of configs/thesis/")
    out = (a.out or (REPO / "runs" / "thesis-quick" if a.quick else HERE / "results")).absolute()
    plan = {p: timing(p, a.quick, a.repetitions) for p in points}
    total = sum(expected_s(p, t) for p, t in plan.items())
    if a.list:
        for p, t in plan.items():
            print(f"{experiment_of(p):3} {p:18} {t['repetitions']} x ({t['warmup_s']:g} + {t['duration_s']:g} s)   ~{expected_s(p, t) / 60:.1f} min")
        print(f"{len(points)} points, ~{total / 60:.0f} min")
        return 0

    import analyze  # here: --list needs no plotting stack

    if a.analyze_only:
        return analyze.main(out)
    if not CONTINUUM.exists():
        print(f"{CONTINUUM} is missing: run ./setup.sh first", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("experiments/thesis/run needs root (network namespaces, cgroups): run it with sudo", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "points.json"
    # Points of earlier invocations into the same folder are kept (a full run
    # may be done experiment by experiment); the points run now replace theirs.
    meta = json.loads(index_path.read_text()) if index_path.exists() else {"points": []}
    records = {r["point"]: r for r in meta["points"]}
    command = " ".join(["experiments/thesis/run", *(argv if argv is not None else sys.argv[1:])])
    meta.update(mode="quick" if a.quick else "full", versions=versions())
    meta.setdefault("commands", []).append({"command": command, "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})

    def save() -> None:
        order = [p for pts in EXPERIMENTS.values() for p in pts]
        meta["points"] = sorted(records.values(), key=lambda r: order.index(r["point"]))
        index_path.write_text(json.dumps(meta, indent=1))

    print(f"{len(points)} points ({'quick' if a.quick else 'full'} mode), expected ~{total / 60:.0f} min; results in {out}", flush=True)
    t_start = time.monotonic()
    failed = []
    for exp, every in EXPERIMENTS.items():
        chosen_points = [p for p in every if p in points]
        if not chosen_points:
            continue
        # one timing per experiment (a campaign's points share its [experiment] table)
        t = plan[chosen_points[0]]
        if any(plan[p] != t for p in chosen_points):
            raise SystemExit(f"{exp}: its points' files give different timings ({ {p: plan[p] for p in chosen_points} }); "
                             "a campaign runs them with one")
        print(f"== {exp}: {', '.join(chosen_points)}, {t['repetitions']} x {t['duration_s']:g} s each", flush=True)
        rc, recs = run_experiment(exp, chosen_points, t, out, a.segmentation, command)
        for r in recs:
            records[r["point"]] = r
            if r["status"] != "complete":
                failed.append(r["point"])
        save()
        if rc in (130, -2):
            # Ctrl-C reaches the campaign's continuum run and this script alike:
            # the user wants the whole run stopped, not the next experiment started.
            print(f"interrupted; run the same command again to continue (--out {out})", file=sys.stderr)
            return 130
    meta["commands"][-1]["wall_s"] = round(time.monotonic() - t_start, 1)
    save()
    meta["wall_s"] = meta["commands"][-1]["wall_s"]
    print(f"points done in {meta['wall_s'] / 60:.1f} min; drawing figures and report", flush=True)
    rc = analyze.main(out)
    if failed:
        print(f"failed points: {', '.join(failed)} (their run folders' logs/ and their campaigns' campaign.json)", file=sys.stderr)
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
