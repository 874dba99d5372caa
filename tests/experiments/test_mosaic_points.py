"""The MOSAIC experiment's points (experiments/mosaic/mosaic_exp.py): each is
a copy of configs/mosaic-paper.toml that differs only in the policy, the
seed and tau_ipc (and its name and output), and every copy is a valid
experiment file. The runs themselves are the experiment (~75 min), not a
test. original.py's aggregation of MOSAIC's own harness is checked on a
hand-made result of it."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from continuum import experiment

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "mosaic"))
sys.path.insert(0, str(REPO / "experiments"))
from points import flat  # noqa: E402
import mosaic_exp  # noqa: E402
import original  # noqa: E402


@pytest.mark.parametrize("policy,seed,tau", [(p, "43", "0.35") for p in mosaic_exp.POLICIES] + [("mosaic", "42", "0.10")])
def test_each_point_changes_only_its_own_keys(tmp_path, policy, seed, tau):
    base = flat(tomllib.loads(mosaic_exp.BASE.read_text()))
    path = mosaic_exp.point_config(tmp_path, policy, seed, tau, None)
    got = flat(tomllib.loads(path.read_text()))
    changed = {k for k in base.keys() | got.keys() if base.get(k) != got.get(k)}
    assert changed <= {"edge.admission.policy", "edge.admission.tau_ipc", "experiment.seed", "experiment.name", "experiment.output"}, changed
    assert (got["edge.admission.policy"], got["experiment.seed"], got["edge.admission.tau_ipc"]) == (policy, int(seed), float(tau))
    spec = experiment.load(path)
    assert spec.edge["mosaic"]["policy"] == policy


def test_original_aggregation_counts_every_generated_task(tmp_path):
    r = {"scheduler": "FCFS", "hit_rate": 0.5, "hits": 10, "p99_ms": 100.0, "starvation_rate": 0.0, "throughput_tps": 1.0,
         "accounting": {"generated": 100, "admitted": 30, "completed": 20, "rejected": 0, "expired": 0}}
    (tmp_path / "poisson-42.json").write_text(json.dumps({"results": [r]}))
    (tmp_path / "poisson-43.json").write_text(json.dumps({"results": [{**r, "hit_rate": 0.7, "hits": 30}]}))
    got = original.aggregate(tmp_path)["poisson"]["fcfs"]
    assert got["seeds"] == 2 and got["hit"] == pytest.approx(60.0) and got["hit_of_all"] == pytest.approx(20.0)


def test_load_point_changes_only_the_utilisation_and_window(tmp_path):
    base = flat(tomllib.loads(mosaic_exp.BASE.read_text()))
    path = mosaic_exp.point_config(tmp_path, "fcfs", "44", "0.35", 30, 1.3)
    got = flat(tomllib.loads(path.read_text()))
    changed = {k for k in base.keys() | got.keys() if base.get(k) != got.get(k)}
    assert {"workload.utilisation", "experiment.duration_s"} <= changed
    assert changed <= {"workload.utilisation", "experiment.duration_s", "edge.admission.policy", "experiment.seed",
                       "experiment.name", "experiment.output"}, changed
    assert (got["workload.utilisation"], got["experiment.duration_s"]) == (1.3, 30)
    assert mosaic_exp.point_name("fcfs", "44", "0.35", 0.9) != mosaic_exp.point_name("fcfs", "44")
    experiment.load(path)
