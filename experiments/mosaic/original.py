"""What MOSAIC's own code computes, for the report's comparison: runs the
original harness (github Ankita7033/MOSAIC, mosaic/benchmarking/benchmark.py;
not vendored here, give a checkout) at rate 6/s, 60 s, seeds 42-46, both
its `poisson` pattern (the paper's table) and its default `burst` pattern,
every scheduler, and writes results/original.json: per pattern and
scheduler, the means of its own metrics plus what its metrics leave out.

    experiments/mosaic/original.py --repo PATH/TO/MOSAIC     # ~10 min (it sleeps in real time)
    experiments/mosaic/original.py --repo PATH --from DIR    # aggregate runs already made

The harness simulates: each task sleeps its drawn service time plus the
hand-written matrix's latency for each co-runner. Its hit % counts only
tasks that completed or expired in the queue: neither rejected tasks nor
tasks still running at its 45-s join timeout. `hit_of_all` below divides
by every generated task, as ours does."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OURS = {"FCFS": "fcfs", "RoundRobin": "rr", "SJF": "sjf", "PriorityStrict": "priority", "EDF": "edf", "MOSAIC": "mosaic",
        "MOSAIC-NoPMU": "mosaic-nomatrix"}
SEEDS = range(42, 47)
PATTERNS = ("poisson", "burst")


def run(repo: Path, out: Path) -> None:
    """All seeds and patterns at once: the harness sleeps, it does not compute, so they do not disturb each other."""
    procs = []
    for pat in PATTERNS:
        for s in SEEDS:
            log = open(out / f"{pat}-{s}.log", "w")
            procs.append(subprocess.Popen([sys.executable, "benchmarking/benchmark.py", "--pattern", pat, "--rate", "6", "--duration", "60",
                                           "--seed", str(s), "--schedulers", "fcfs", "rr", "sjf", "priority", "edf", "mosaic", "mosaic_nopmu",
                                           "--output", str(out / f"{pat}-{s}.json")], cwd=repo / "mosaic", stdout=log, stderr=subprocess.STDOUT))
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"the harness failed ({p.args}); see the logs in {out}")


def aggregate(d: Path) -> dict:
    out: dict = {}
    for pat in PATTERNS:
        per: dict[str, dict[str, list[float]]] = {}
        for s in SEEDS:
            path = d / f"{pat}-{s}.json"
            if not path.exists():
                continue
            for r in json.loads(path.read_text())["results"]:
                a, acc = per.setdefault(OURS[r["scheduler"]], {}), r["accounting"]
                vals = {"hit": r["hit_rate"] * 100, "p99_ms": r["p99_ms"], "starved": r["starvation_rate"] * 100, "tps": r["throughput_tps"],
                        "hit_of_all": r["hits"] / acc["generated"] * 100, "generated": acc["generated"], "admitted": acc["admitted"],
                        "completed": acc["completed"], "rejected": acc["rejected"], "expired": acc["expired"]}
                for k, v in vals.items():
                    a.setdefault(k, []).append(v)
        out[pat] = {pol: {k: statistics.mean(v) for k, v in a.items()} | {"seeds": len(a["hit"])} for pol, a in per.items()}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, help="a checkout of github.com/Ankita7033/MOSAIC")
    ap.add_argument("--from", dest="src", type=Path, help="aggregate the harness's JSON files already in this folder")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "original.json")
    a = ap.parse_args()
    if a.src is None:
        if a.repo is None or not (a.repo / "mosaic" / "benchmarking" / "benchmark.py").exists():
            ap.error("--repo: give a checkout of MOSAIC's code (it has mosaic/benchmarking/benchmark.py), or --from a folder of its results")
        a.src = a.out.parent / "original-runs"
        a.src.mkdir(parents=True, exist_ok=True)
        run(a.repo.resolve(), a.src)
    res = aggregate(a.src)
    if not any(res.values()):
        raise SystemExit(f"no results of the harness in {a.src} (its {{pattern}}-{{seed}}.json files)")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=2) + "\n")
    for pat, r in res.items():
        print(pat)
        for pol, v in r.items():
            print(f"  {pol:<16} hit {v['hit']:5.1f}% (of all {v['hit_of_all']:5.1f}%)  P99 {v['p99_ms']:6.0f} ms  starved {v['starved']:4.1f}%  "
                  f"TPS {v['tps']:.2f}  admitted {v['admitted']:.0f} of {v['generated']:.0f}, completed {v['completed']:.0f}, "
                  f"rejected {v['rejected']:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
