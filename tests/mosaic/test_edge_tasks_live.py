"""MOSAIC inside `continuum run` (issue #20): two endpoints submit MOSAIC's
task classes over MQTT through the emulated link; the edge's server runs
them under MOSAIC, each task in its own cgroup through the root agent. Every
request is answered when its task is done, the executor's records are in
raw/, and nothing is left behind. Small tasks and one worker per class keep
it short; the numbers are the experiment's business, not this test's,
but the summary must count every measured task and the plots must be made."""

from __future__ import annotations

import json
import math
import os
import re

import pandas as pd
import pytest
from premise import premise
from calibrate_first import calibrate_first
from stress import edge_config
from slow import only_slow

from continuum import cgroups

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")
OVERLOAD = 3.0  # the stopped run's load, x its calibrated capacity

CONFIG = """
[experiment]
name = "tasks"
seed = 42
duration_s = 4
warmup_s = 1
output = "{out}"

[nodes.endpoint]
count = 2
cpus = 0.25
memory = "256M"

[nodes.edge]
cpus = 1.0
memory = "4G"

[mobile]
uplink = "const-48mbps"
downlink = "const-48mbps"

[workload]
app = "edge_tasks"
rate = 2
arrivals = "poisson"
timeout_s = 30

[edge.admission]
policy = "mosaic"
n_max = 2
workers_per_class = 1
scale = 0.25
"""


def test_tasks_arrive_over_mqtt_run_under_mosaic_in_their_cgroups_and_are_answered(tmp_path, continuum_run):
    cfg = tmp_path / "tasks.toml"
    cfg.write_text(CONFIG.format(out=tmp_path / "runs"))
    run = continuum_run(cfg, tmp_path, "tasks")
    req = pd.read_csv(run / "requests.csv")
    tasks = pd.read_csv(run / "raw" / "mosaic-tasks.csv")
    assert len(req) >= 10 and (req["status"] == "ok").all(), req["status"].value_counts()
    assert len(tasks) >= len(req) and set(tasks["ok"]) == {1}  # the warm-up's tasks too
    assert set(tasks["cls"]) >= {"dispatch_api", "sensor_fusion"}
    assert tasks["taught"].str.match(r"^(alone|pair |mixed |no alone)").all()
    # the answer of each request is its task's record: server time = its wait + its service
    assert (req["server_ms"] >= 0).all()
    dec = pd.read_csv(run / "raw" / "mosaic-decisions.csv")
    assert len(dec) >= len(tasks) and dec["us"].median() < 1000
    # the results: the measured tasks in summary.json, plots of them
    adm = json.loads((run / "summary.json").read_text())["admission"]
    measured = req[req["phase"] == "measure"]
    assert adm["policy"] == "mosaic" and adm["arrived"] == len(measured) == adm["finished"] and adm["unseen"] == 0
    assert sum(c["arrived"] for c in adm["per_class"].values()) == len(measured)
    assert 0 <= adm["hit"] <= 1 and adm["mission"] == 1.0 and adm["p99_ms"] > 0 and adm["decisions"]["count"] > 0
    assert "admission (mosaic)" in (run / "summary.txt").read_text()
    for name in ("admission_classes", "admission_queue", "admission_decisions"):
        assert (run / "plots" / f"{name}.png").stat().st_size > 10_000, name
    man = json.loads((run / "manifest.json").read_text())
    assert man["admission"]["n_max"] == 2 and man["duration_s"] == 4
    assert re.search("through MOSAIC's agent", json.dumps(man))
    assert not cgroups.existing(man.get("run_id")) if man.get("run_id") else True


@only_slow("a calibration and an overloaded MOSAIC run, ~60 s on the 2-core machine of 2026-11-29")
def test_a_run_that_ends_with_tasks_queued_still_counts_them(tmp_path, continuum_run):
    """Overload under FCFS with one slot and a short timeout: the run stops with
    tasks still queued. The server writes its records within the runner's grace
    (the queued tasks get rows with ok = 0), and the summary counts them as missed.
    The overload is three times what the node serves by its own calibration (issue #36:
    12 tasks/s was one on this machine, and would not be on a much faster one)."""
    cfg = tmp_path / "over.toml"
    text = CONFIG.format(out=tmp_path / "runs").replace('name = "tasks"', 'name = "over"')
    text = text.replace("rate = 2", f"utilisation = {OVERLOAD}") + "\n[calibration]\nrequests = 20\nmin_s = 2\n"
    text = edge_config(text.replace('policy = "mosaic"', 'policy = "fcfs"\nslots = 1').replace("scale = 0.25", "scale = 1.0"))
    # the window and the timeout in units of the node's own service time (`continuum calibrate` first, as a
    # user would; the run takes its rate from the same cache entry): 8 arrivals or more (the window is 4 s at
    # least), two thirds of them still queued when the last is sent; the server works on through the last
    # request's timeout, about one task's length (2 s at least), and ~4 are left when the run stops. (Fixed
    # 4 s and 2 s saw one task arrive on a machine that served 0.2 tasks/s; twice the capacity and a timeout
    # of three task times left ~1 queued, and none in one fresh-clone run: 10 of 10 finished.)
    cfg.write_text(text)
    cal = calibrate_first(cfg)["edge_tasks"]
    duration = max(4, math.ceil(8 / (OVERLOAD * cal.capacity_rps)))
    timeout = max(2, math.ceil(cal.summary["mean"] / 1000))
    text = text.replace("timeout_s = 30", f"timeout_s = {timeout}").replace("duration_s = 4", f"duration_s = {duration}")
    cfg.write_text(text)
    run = continuum_run(cfg, tmp_path, "over")
    tasks = pd.read_csv(run / "raw" / "mosaic-tasks.csv")
    assert (tasks["ok"] == 0).any() and (tasks["ok"] == 1).any(), tasks["ok"].value_counts()
    assert (run / "raw" / "mosaic-queue.csv").exists() and (run / "raw" / "mosaic-decisions.csv").exists()
    adm = json.loads((run / "summary.json").read_text())["admission"]
    assert json.loads((run / "manifest.json").read_text())["calibration"]["apps"]["edge_tasks"]["utilisation"] == pytest.approx(OVERLOAD)
    assert adm["unseen"] == 0, adm
    # the premise: overloaded, so tasks were still queued when the run stopped
    premise("tasks arrived but not finished", adm["arrived"] - adm["finished"], 1, detail=(adm, duration, timeout, cal.capacity_rps))
    assert adm["queue"]["max"] > 0, adm
