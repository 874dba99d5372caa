"""MOSAIC's six task classes as real jobs (workloads/edge_tasks/jobs.py): a
Redis server and the HTTP API started as services, one warm worker for all
six classes, one task of each at a quarter of its size. Each job must have
done its work (what it reports), and the worker's report carries the
measured wall and CPU time that the executor and the matrix use."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mosaic.classes import CLASSES
from workloads.edge_tasks.services import Services

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed: run ./setup.sh")


def test_each_class_runs_its_real_job_and_reports_its_cost():
    s = Services().start()
    try:
        w = subprocess.Popen([sys.executable, "-m", "workloads.edge_tasks.worker", "--classes", ",".join(c.name for c in CLASSES),
                              "--redis-port", str(s.redis_port), "--api-port", str(s.api_port), "--scale", "0.25"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
        assert w.stdin is not None and w.stdout is not None
        assert w.stdout.readline().strip() == "ready"
        got = {}
        for i, c in enumerate(CLASSES):
            w.stdin.write(json.dumps({"id": f"t{i}", "cls": c.name, "seed": i}) + "\n")
            w.stdin.flush()
            r = json.loads(w.stdout.readline())
            assert r["ok"] and r["id"] == f"t{i}", r
            assert r["wall_ms"] > 0 and r["cpu_ms"] > 0
            got[c.name] = r["out"]
        w.stdin.close()
        assert w.wait(timeout=30) == 0
    finally:
        s.stop()
    assert got["dispatch_api"] == {"routed": 5}  # every request answered with a station
    assert got["sensor_fusion"]["readings"] == 500 and 18 < got["sensor_fusion"]["fused"] < 22  # Redis kept what was written
    assert got["analytics_batch"]["rows"] == 100_000 and got["analytics_batch"]["groups"] > 1000
    assert got["model_update"]["loss_first"] > 0 and got["model_update"]["loss_last"] > 0
    assert got["log_archive"]["zstd_ratio"] > 2 and got["log_archive"]["gzip_ratio"] > 2
    assert isinstance(got["inference_critical"]["detections"], int)
