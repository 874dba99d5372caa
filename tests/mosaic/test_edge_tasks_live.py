"""MOSAIC inside `continuum run` (issue #20): two endpoints submit MOSAIC's
task classes over MQTT through the emulated link; the edge's server runs
them under MOSAIC, each task in its own cgroup through the root agent. Every
request is answered when its task is done, the executor's records are in
raw/, and nothing is left behind. Small tasks and one worker per class keep
it short; the numbers are the experiment's business, not this test's."""

from __future__ import annotations

import json
import os
import re

import pandas as pd
import pytest

from continuum import cgroups

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")

CONFIG = """
[experiment]
name = "tasks"
seed = 42
duration_s = 8
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
    man = json.loads((run / "manifest.json").read_text())
    assert re.search("through MOSAIC's agent", json.dumps(man))
    assert not cgroups.existing(man.get("run_id")) if man.get("run_id") else True
