"""A task worker: a warm process that runs tasks of its classes on command,
so that a task's time is the job's and not Python's and torch's start-up.
The executor moves the worker into the task's cgroup before it sends the
task, and reads what the task cost from this report.

    python -m workloads.edge_tasks.worker --classes model_update,log_archive [--redis-port P --api-port Q]

stdin: one JSON object per task, {"id": ..., "cls": ..., "seed": ...};
stdout: "ready" once loaded, then one JSON report per task: its wall and CPU
time (ms), voluntary and involuntary context switches, peak RSS, and the
job's own summary."""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one task, one thread: what it costs is its own (before torch loads)
from workloads.edge_tasks.jobs import Jobs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--classes", required=True)
    ap.add_argument("--redis-port", type=int, default=0)
    ap.add_argument("--api-port", type=int, default=0)
    ap.add_argument("--model-cache", default="")
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args()
    jobs = Jobs(a.classes.split(","), a.redis_port, a.api_port, a.model_cache, a.scale)
    for cls in jobs.run:  # warm: the first run of a job pays for lazy imports and allocations
        jobs.run[cls](0)
    print("ready", flush=True)
    for line in sys.stdin:
        t = json.loads(line)
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter_ns()
        try:
            out, ok = jobs.run[t["cls"]](int(t.get("seed", 0))), True
        except Exception as e:  # reported, not fatal: the next task still runs
            out, ok = {"error": f"{type(e).__name__}: {e}"}, False
        wall = (time.perf_counter_ns() - t0) / 1e6
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"id": t["id"], "cls": t["cls"], "ok": ok, "wall_ms": round(wall, 3),
                          "cpu_ms": round((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000, 3),
                          "nvcsw": r1.ru_nvcsw - r0.ru_nvcsw, "nivcsw": r1.ru_nivcsw - r0.ru_nivcsw,
                          "rss_mb": round(r1.ru_maxrss / 1024, 1), "out": out}), flush=True)


if __name__ == "__main__":
    main()
