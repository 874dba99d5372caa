"""The SMEC experiment runs as campaigns (experiments/smec/smec.py): configs/smec-mix.toml with a [sweep]
of the points as named arms (uplink scheduler, edge manager, early drop) and the seeds; each part changes
only what it says (the arrivals, the latency-critical utilisation, the SLOs, the timing). Every point is a
valid file and `check` holds it to the shipped one; the checker must catch a point that drifted. The runs
themselves are the experiment (~17 min per workload), not a test."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from continuum.campaign import sweep

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "smec"))
sys.path.insert(0, str(REPO / "experiments"))
from points import flat  # noqa: E402
import smec  # noqa: E402


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "campaign.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("workload", ["dynamic", "static"])
def test_each_point_is_the_shipped_file_but_for_its_arm_seed_and_part(tmp_path, workload):
    path = _write(tmp_path, smec.campaign_text(tmp_path, list(smec.POINTS), [1, 2], 30, 5, workload))
    smec.check(path, workload, None)
    points = sweep.points(path)
    specs = sweep.check(path, points)
    assert [(p.arm, p.seed) for p in points] == [(a, s) for a in smec.POINTS for s in (1, 2)]
    base = flat(tomllib.loads(smec.BASE.read_text()))
    for p, spec in zip(points, specs):
        got = flat(tomllib.loads(p.text))
        uplink, manager, _ = smec.POINTS[p.arm]
        assert (spec.cell.uplink, got["edge.manager.kind"], got["edge.manager.early_drop"]) == (uplink, manager, p.arm != "smec-nodrop")
        assert got["workload.arrivals"] == ("constant" if workload == "static" else "poisson")
        assert (got["experiment.seed"], got["experiment.duration_s"], got["experiment.warmup_s"]) == (p.seed, 30, 5)
        assert spec.mix and len(spec.apps) == 4 and got["workload.apps.ft.rate"] == base["workload.apps.ft.rate"]
    # a point that drifts from the shipped file is caught, named
    drifted = _write(tmp_path, path.read_text().replace("timeout_s = ", "timeout_s = 1", 1))
    with pytest.raises(AssertionError, match="point 1 .arm default, seed 1. differs"):
        smec.check(drifted, workload, None)


def test_the_load_sweep_moves_the_three_latency_critical_utilisations_together(tmp_path):
    path = _write(tmp_path, smec.campaign_text(tmp_path, list(smec.SWEPT), [3], 30, 5, "dynamic", [0.3, 0.9]))
    smec.check(path, "dynamic", None)
    points = sweep.points(path)
    sweep.check(path, points)
    loads = [sum(flat(tomllib.loads(p.text))[f"workload.apps.{a}.utilisation"] for a in smec.LC) for p in points]
    assert [p.arm for p in points] == ["default", "default", "smec", "smec"] and loads == pytest.approx([0.3, 0.9, 0.3, 0.9])
    assert smec.campaign_name("dynamic", [0.3, 0.9], False) == "smec-sweep"
    assert smec.point_name("default", 3, 0.9) != smec.point_name("default", 3)


def test_scaled_slos_change_only_the_latency_critical_slos(tmp_path):
    slos = {"ss": 322, "ar": 250, "vc": 418}
    path = _write(tmp_path, smec.campaign_text(tmp_path, ["smec"], [1], 30, 5, "dynamic", None, slos))
    smec.check(path, "dynamic", slos)
    got = flat(tomllib.loads(sweep.points(path)[0].text))
    assert {a: got[f"workload.apps.{a}.slo_ms"] for a in slos} == slos
    with pytest.raises(AssertionError, match="slo_ms"):
        smec.check(path, "dynamic", None)
