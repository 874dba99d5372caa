"""experiments/smec-ran runs as one campaign: the shipped configs/smec-ran.toml
with a [sweep] of the uplink scheduler and the seeds. Its points are whole
files that differ from the shipped one only in the scheduler, the seed and
the timing the script sets (nothing runs here)."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

from continuum.campaign import sweep

REPO = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("smec_ran", REPO / "experiments" / "smec-ran" / "smec_ran.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def test_the_campaign_is_the_shipped_file_per_scheduler_and_seed(tmp_path):
    smec_ran = _script()
    cfg = smec_ran.campaign_file(tmp_path, ["pf", "rr", "smec", "tutti"], [1, 2, 3], 30, 5)
    pts = sweep.points(cfg)
    specs = sweep.check(cfg, pts)
    assert {(s.cell.uplink, s.seed) for s in specs} == {(u, sd) for u in ("pf", "rr", "smec", "tutti") for sd in (1, 2, 3)}
    shipped = _flat(tomllib.loads((REPO / "configs" / "smec-ran.toml").read_text()))
    for p in pts:
        point = _flat(tomllib.loads(p.text))
        differ = {k for k in shipped.keys() | point.keys() if shipped.get(k) != point.get(k)}
        assert differ <= {"cell.uplink", "experiment.seed", "experiment.output", "experiment.duration_s", "experiment.warmup_s",
                          "workload.custom.endpoint_command", "workload.custom.server_command"}, (p.label(), differ)
        assert point["experiment.output"] == str(tmp_path / "runs") and point["experiment.duration_s"] == 30
