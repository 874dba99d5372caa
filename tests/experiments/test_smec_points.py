"""The SMEC experiment's points (experiments/smec/smec.py): each is a copy of
configs/smec-mix.toml that differs only where the point says (uplink
scheduler, edge manager, early drop, arrivals, seed, load, timing), and
every copy is a valid experiment file. The runs themselves are the
experiment (~26 min per workload), not a test."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from continuum import experiment

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "smec"))
sys.path.insert(0, str(REPO / "experiments"))
from points import flat  # noqa: E402
import smec  # noqa: E402


@pytest.mark.parametrize("workload", ["dynamic", "static"])
def test_each_point_changes_only_its_own_keys(tmp_path, workload):
    base = flat(tomllib.loads(smec.BASE.read_text()))
    allowed = {"cell.uplink", "edge.manager.kind", "edge.manager.early_drop", "experiment.name", "experiment.output",
               "workload.arrivals", "experiment.seed", "experiment.duration_s", "experiment.warmup_s"}
    names = set()
    for point, (uplink, manager, _) in smec.POINTS.items():
        path = smec.point_config(tmp_path, point, 2, 30, 5, workload)
        got = flat(tomllib.loads(path.read_text()))
        changed = {k for k in base.keys() | got.keys() if base.get(k) != got.get(k)}
        assert changed <= allowed, (point, changed - allowed)
        assert (got["cell.uplink"], got["edge.manager.kind"]) == (uplink, manager)
        assert got["workload.arrivals"] == ("constant" if workload == "static" else "poisson")
        assert (got["experiment.seed"], got["experiment.duration_s"], got["experiment.warmup_s"]) == (2, 30, 5)
        names.add(got["experiment.name"])
        spec = experiment.load(path)
        assert spec.mix and len(spec.apps) == 4
    assert len(names) == len(smec.POINTS)


def test_sweep_point_scales_only_the_latency_critical_utilisation(tmp_path):
    base = flat(tomllib.loads(smec.BASE.read_text()))
    got = flat(tomllib.loads(smec.point_config(tmp_path, "default", 3, 30, 5, "dynamic", 0.9).read_text()))
    changed = {k for k in base.keys() | got.keys() if base.get(k) != got.get(k)}
    lc = {f"workload.apps.{a}.utilisation" for a in smec.LC}
    assert lc <= changed and changed - lc <= {"cell.uplink", "edge.manager.kind", "experiment.name", "experiment.output",
                                              "experiment.seed", "experiment.duration_s", "experiment.warmup_s"}
    assert sum(got[k] for k in lc) == pytest.approx(0.9)
    assert got["workload.apps.ft.rate"] == base["workload.apps.ft.rate"]  # the best-effort load stays as written
    assert smec.point_name("default", 3, 0.9) != smec.point_name("default", 3)


def test_scaled_slos_change_only_the_latency_critical_slos(tmp_path):
    base = flat(tomllib.loads(smec.BASE.read_text()))
    slos = {"ss": 322, "ar": 250, "vc": 418}
    got = flat(tomllib.loads(smec.point_config(tmp_path, "smec", 1, 30, 5, "dynamic", smec.FILE_LOAD, slos).read_text()))
    changed = {k for k in base.keys() | got.keys() if base.get(k) != got.get(k)}
    assert {f"workload.apps.{a}.slo_ms" for a in slos} <= changed
    assert changed <= {f"workload.apps.{a}.slo_ms" for a in slos} | {"experiment.name", "experiment.output", "experiment.seed",
                                                                     "experiment.duration_s", "experiment.warmup_s"}, changed
    assert {a: got[f"workload.apps.{a}.slo_ms"] for a in slos} == slos
