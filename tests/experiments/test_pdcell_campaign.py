"""experiments/pdcell runs as two campaigns: configs/pdcell-mrfs.toml with a
[sweep] of named arms (fig9: seven arms at load 0.6; load: three arms at 0.3
and 0.9). Each arm's point is its shipped config (configs/pdcell-*.toml), key
for key, but for the run's name and folder and what the arm varies; every
point is a valid file (nothing runs here). The checker itself must find a
point that drifted from its shipped config."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from continuum.campaign import sweep

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not (REPO.parent / "shared" / "traces").is_dir(),
                                reason="the pDCell configs replay ../shared/traces' LTE traces (not here)")


def _campaign():
    spec = importlib.util.spec_from_file_location("pdcell_campaign", REPO / "experiments" / "pdcell" / "campaign.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_each_arm_is_its_shipped_config_and_every_point_is_valid(tmp_path):
    c = _campaign()
    made = {}
    for part in ("fig9", "load"):
        path = tmp_path / f"{part}.toml"
        path.write_text(c.text(part, tmp_path))
        c.check(part, path)
        specs = sweep.check(path, sweep.points(path))
        made[part] = [(p.arm, s.edge.get("pdcell").kind if s.edge.get("pdcell") else "tcp", s.cell.downlink)
                      for p, s in zip(sweep.points(path), specs)]
    assert made["fig9"] == [("mrfs", "pdcell", "mrfs"), ("pfs", "pdcell", "pf"), ("tcp", "tcp", "pf"), ("tcp-reno", "tcp", "pf"),
                            ("tcp-bbr", "tcp", "pf"), ("phost-inf", "phost", "pf"), ("phost-3mb", "phost", "pf")], made["fig9"]
    assert [a for a, _, _ in made["load"]] == ["mrfs", "mrfs", "tcp", "tcp", "tcp-bbr", "tcp-bbr"]
    # an arm that drifts from its shipped config is caught
    path = tmp_path / "drift.toml"
    path.write_text(c.text("fig9", tmp_path).replace('"transport.congestion_control" = "reno"', '"transport.congestion_control" = "bbr"'))
    with pytest.raises(AssertionError, match="tcp-reno"):
        c.check("fig9", path)
