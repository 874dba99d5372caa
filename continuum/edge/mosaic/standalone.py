"""One admission run on this machine, as SPEC-mosaic.md's evaluation makes
them: Poisson arrivals at `--rate` tasks/s for `--window` seconds, classes
drawn by their shares, each task's deadline drawn in its class's range
(seeded), run by the executor under one policy on a node cgroup of `--cpus`.
Arrivals stop at the window's end; what is still queued or running
`--drain` seconds later is stopped and counts as missed.

    python -m continuum.edge.mosaic.standalone --policy mosaic --rate 6 --window 60 --seed 42 --out DIR

Writes DIR/tasks.csv (one row per task), DIR/decisions.csv (MOSAIC's, with
the time each took), DIR/queue.csv (queue depth per tick), DIR/matrix.sqlite
(the learned matrix; `--matrix` starts from an earlier one) and
DIR/summary.json:

- hit: the share of all arrived tasks that finished within their deadline;
- p99_ms: the 99th percentile of response time (arrival to finish) of the
  finished ones;
- starved: the share that waited longer than 3 x their deadline to start, or
  never started;
- tps: tasks finished, over the window's seconds;
- mission: the share of tiers 1-2 (three classes) that finished at all;
- queue: the deepest and the median queue at a tick;
- decisions: the median and P99 time of an admission decision;
- per_class: the same for each class (continuum/edge/mosaic/results.py).

Needs root (the node's and the tasks' cgroups)."""

from __future__ import annotations

import argparse
import csv
import json
import random
import time
from pathlib import Path

from continuum import cgroups, naming
from continuum.edge.mosaic import results as admission
from continuum.runtime import wrapped
from mosaic import policies
from mosaic.classes import BY_NAME, CLASSES, Task
from mosaic.executor import Executor
from mosaic.interference import Interference
from workloads.edge_tasks import WORKER
from workloads.edge_tasks.services import Services

MS = 1_000_000


def draw_arrivals(rate: float, window_s: float, seed: int, t0_ns: int) -> list[Task]:
    rng = random.Random(seed)
    names, weights = [c.name for c in CLASSES], [c.share for c in CLASSES]
    out: list[Task] = []
    t, i = 0.0, 0
    while True:
        t += rng.expovariate(rate)
        if t >= window_s:
            return out
        cls = rng.choices(names, weights)[0]
        lo, hi = BY_NAME[cls].deadline_ms
        out.append(Task(f"t{i}", cls, t0_ns + int(t * 1e9), rng.uniform(lo, hi)))
        i += 1


def summarize(arrived: list[Task], policy: policies.Policy, ex: Executor, window_s: float) -> dict:
    """continuum.edge.mosaic.results' numbers (the same as `continuum run`'s)."""
    import pandas as pd

    done = {d.task.id: d for d in ex.done if d.ok}
    rows = [{"cls": t.cls, "tier": t.tier, "deadline_ms": t.deadline_ms,
             "wait_ms": None if t.started_ns is None else (t.started_ns - t.arrival_ns) / MS,
             "response_ms": (t.finished_ns - t.arrival_ns) / MS if t.id in done and t.finished_ns is not None else None,
             "service_ms": done[t.id].service_ms if t.id in done else None,
             "hit": int(t.id in done and t.finished_ns is not None and t.finished_ns <= t.due_ns), "ok": int(t.id in done)}
            for t in arrived]
    out = admission.task_metrics(pd.DataFrame(rows, columns=["cls", "tier", "deadline_ms", "wait_ms", "response_ms", "service_ms", "hit", "ok"]),
                                 window_s)
    out["policy"] = policy.name
    out["queue"] = admission.queue_metrics(pd.DataFrame(ex.queue_depth, columns=["t_ns", "queued"]))
    dec = getattr(policy, "decisions", [])
    out["decisions"] = admission.decision_metrics(pd.DataFrame([(d.rule, d.ns / 1000) for d in dec], columns=["rule", "us"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", default="mosaic", choices=policies.POLICIES)
    ap.add_argument("--rate", type=float, default=6.0, help="arrivals per second (Poisson)")
    ap.add_argument("--window", type=float, default=60.0, help="seconds of arrivals")
    ap.add_argument("--drain", type=float, default=10.0, help="seconds after the window before what is left is stopped")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--cpus", type=float, default=1.0, help="the node's CPU quota")
    ap.add_argument("--slots", type=int, default=0, help="baselines: tasks at once (default: the node's CPUs, at least 1)")
    ap.add_argument("--n-max", type=int, default=8)
    ap.add_argument("--tau", type=float, default=0.35)
    ap.add_argument("--workers", type=int, default=3, help="warm workers per class")
    ap.add_argument("--scale", type=float, default=1.0, help="task size (tasks.SCALE times this)")
    ap.add_argument("--matrix", type=Path, help="start from this learned matrix (SQLite)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()

    a.out.mkdir(parents=True, exist_ok=True)
    names = [c.name for c in CLASSES]
    matrix = Interference.load(a.matrix, names) if a.matrix else Interference(names)
    slots = a.slots or max(1, int(a.cpus))
    if a.policy.startswith("mosaic"):
        policy: policies.Policy = policies.Mosaic(matrix, n_max=a.n_max, tau_ipc=a.tau, use_matrix=a.policy == "mosaic")
    else:
        policy = policies.make(a.policy, slots)
    version, _ = cgroups.detect()
    cg = cgroups.create(naming.cgroup(naming.new_run_id(), "edge0"), a.cpus, 8 << 30, leaf=True)
    services = ex = None
    try:
        def wrap(argv):
            return wrapped(argv, cgroup=cg)

        services = Services().start(wrap)
        ex = Executor(policy, matrix, names, worker=WORKER, workers_per_class=a.workers, node_cpu_dir=cg.dirs["cpu"], cgroup_version=version,
                      worker_args=["--scale", str(a.scale), "--redis-port", str(services.redis_port), "--api-port", str(services.api_port)],
                      wrap=wrap)
        t0 = time.monotonic_ns() + 200 * MS
        arrived = draw_arrivals(a.rate, a.window, a.seed, t0)
        print(f"mosaic standalone: {a.policy}, {len(arrived)} tasks over {a.window:g} s (seed {a.seed}), node {a.cpus:g} CPU", flush=True)
        ex.run(arrived, until_ns=t0 + int((a.window + a.drain) * 1e9))
        summary = summarize(arrived, policy, ex, a.window)
        with open(a.out / "tasks.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "cls", "tier", "deadline_ms", "arrival_ms", "wait_ms", "response_ms", "service_ms", "cpu_ms", "hit", "beside", "taught"])
            byid = {d.task.id: d for d in ex.done}
            for t in arrived:
                d = byid.get(t.id)
                rel = lambda ns: "" if ns is None else f"{(ns - t0) / MS:.3f}"  # noqa: E731
                w.writerow([t.id, t.cls, t.tier, f"{t.deadline_ms:.1f}", rel(t.arrival_ns),
                            "" if t.started_ns is None else f"{(t.started_ns - t.arrival_ns) / MS:.3f}",
                            "" if t.finished_ns is None else f"{(t.finished_ns - t.arrival_ns) / MS:.3f}",
                            f"{d.service_ms:.3f}" if d else "", f"{d.cpu_ms:.3f}" if d else "",
                            int(t.finished_ns is not None and t.finished_ns <= t.due_ns),
                            json.dumps({k: round(v, 3) for k, v in d.beside.items()}) if d else "", d.taught if d else ""])
        with open(a.out / "decisions.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["task", "admit", "rule", "detail", "us"])
            for dd in getattr(policy, "decisions", []):
                w.writerow([dd.task, int(dd.admit), dd.rule, dd.detail, f"{dd.ns / 1000:.2f}"])
        with open(a.out / "queue.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_ms", "queued"])
            w.writerows([(f"{(ns - t0) / MS:.1f}", q) for ns, q in ex.queue_depth])
        matrix.save(a.out / "matrix.sqlite")
        summary.update({"rate": a.rate, "window_s": a.window, "seed": a.seed, "cpus": a.cpus, "scale": a.scale,
                        **admission.sources()})
        (a.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        dus = summary["decisions"]
        print(f"hit {summary['hit']:.1%}  P99 {summary['p99_ms'] or float('nan'):.0f} ms  starved {summary['starved']:.1%}  "
              f"TPS {summary['tps']:.2f}  mission {summary['mission']:.1%}  queue max {summary['queue']['max']}"
              + (f"  decision {dus['us_p50']:.1f}/{dus['us_p99']:.1f} us" if dus else ""))
    finally:
        if ex is not None:
            for w_ in ex.workers:  # what the drain left running is stopped, not waited for
                if w_.task is not None:
                    w_.proc.kill()
            ex.close()
        if services is not None:
            services.stop()
        cg.remove()


if __name__ == "__main__":
    main()
