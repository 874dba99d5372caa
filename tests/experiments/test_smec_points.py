"""The SMEC experiment's points (experiments/smec/smec.py): each is a copy of
configs/smec-mix.toml that differs only where the point says (uplink
scheduler, edge manager, early drop, arrivals), and every copy is a valid
experiment file. The runs themselves are the experiment (~16 min per
workload), not a test."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from continuum import config

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "smec"))
sys.path.insert(0, str(REPO / "experiments"))
from points import flat  # noqa: E402
import smec  # noqa: E402


@pytest.mark.parametrize("workload", ["dynamic", "static"])
def test_each_point_changes_only_its_own_keys(tmp_path, workload):
    base = flat(tomllib.loads(smec.BASE.read_text()))
    allowed = {"cell.uplink", "edge.manager.kind", "edge.manager.early_drop", "experiment.name", "experiment.output", "workload.arrivals"}
    for point, (uplink, manager, _) in smec.POINTS.items():
        path = smec.point_config(tmp_path, point, False, workload)
        got = flat(tomllib.loads(path.read_text()))
        changed = {k for k in base.keys() | got.keys() if base.get(k) != got.get(k)}
        assert changed <= allowed, (point, changed - allowed)
        assert (got["cell.uplink"], got["edge.manager.kind"]) == (uplink, manager)
        assert got["workload.arrivals"] == ("constant" if workload == "static" else "poisson")
        spec = config.load(path)
        assert spec.mix and len(spec.apps) == 4
