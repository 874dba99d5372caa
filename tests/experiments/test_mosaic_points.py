"""The MOSAIC experiment's campaigns (experiments/mosaic/mosaic_exp.py): each
point of each part is configs/mosaic-paper.toml differing only in what the
part sweeps (the policy, the seed, tau_ipc, the utilisation; and the
campaign's name, folder and window), check() catches a point that differs
more, and every point is a valid experiment file. The runs themselves are the experiment (~75 min), not a
test. original.py's aggregation of MOSAIC's own harness is checked on a
hand-made result of it."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "mosaic"))
sys.path.insert(0, str(REPO / "experiments"))
from points import flat  # noqa: E402
import mosaic_exp  # noqa: E402
import original  # noqa: E402


def _part(tmp_path: Path, part: str, duration: int | None = None) -> list:
    from continuum.campaign import sweep

    path = tmp_path / f"{part}.toml"
    path.write_text(mosaic_exp.campaign_text(part, tmp_path, duration, list(mosaic_exp.POLICIES), ["42", "43"],
                                             list(mosaic_exp.TAUS), [0.5, 1.3]))
    mosaic_exp.check(path, part)
    pts = sweep.points(path)
    sweep.check(path, pts)  # every point a valid file
    return pts


def test_each_point_changes_only_its_own_keys(tmp_path):
    base = flat(tomllib.loads(mosaic_exp.BASE.read_text()))
    main, tau = _part(tmp_path, "main"), _part(tmp_path, "tau")
    assert [mosaic_exp.point_of({"values": p.values, "seed": p.seed}) for p in main] == [
        mosaic_exp.point_name(pol, s) for pol in mosaic_exp.POLICIES for s in ("42", "43")]
    assert [mosaic_exp.point_of({"values": p.values, "seed": p.seed}) for p in tau] == [
        mosaic_exp.point_name("mosaic", "42", t) for t in mosaic_exp.TAUS]
    for p in main + tau:
        got = flat(tomllib.loads(p.text))
        changed = {k for k in base.keys() | got.keys() if base.get(k) != got.get(k)}
        assert changed <= {"edge.admission.policy", "edge.admission.tau_ipc", "experiment.seed", "experiment.name",
                           "experiment.output"}, changed
    # a point that changes more is caught, named
    drifted = tmp_path / "drift.toml"
    drifted.write_text((tmp_path / "main.toml").read_text().replace("[sweep]\n", '[sweep]\n"workload.rate" = [3.0]\n'))
    with pytest.raises(AssertionError, match="workload.rate"):
        mosaic_exp.check(drifted, "main")


def test_original_aggregation_counts_every_generated_task(tmp_path):
    r = {"scheduler": "FCFS", "hit_rate": 0.5, "hits": 10, "p99_ms": 100.0, "starvation_rate": 0.0, "throughput_tps": 1.0,
         "accounting": {"generated": 100, "admitted": 30, "completed": 20, "rejected": 0, "expired": 0}}
    (tmp_path / "poisson-42.json").write_text(json.dumps({"results": [r]}))
    (tmp_path / "poisson-43.json").write_text(json.dumps({"results": [{**r, "hit_rate": 0.7, "hits": 30}]}))
    got = original.aggregate(tmp_path)["poisson"]["fcfs"]
    assert got["seeds"] == 2 and got["hit"] == pytest.approx(60.0) and got["hit_of_all"] == pytest.approx(20.0)


def test_load_point_changes_only_the_utilisation_and_window(tmp_path):
    base = flat(tomllib.loads(mosaic_exp.BASE.read_text()))
    pts = _part(tmp_path, "load", 30)
    assert len(pts) == 2 * len(mosaic_exp.POLICIES) * 2
    for p in pts:
        got = flat(tomllib.loads(p.text))
        changed = {k for k in base.keys() | got.keys() if base.get(k) != got.get(k)}
        assert {"workload.utilisation", "experiment.duration_s"} <= changed
        assert changed <= {"workload.utilisation", "experiment.duration_s", "edge.admission.policy", "experiment.seed",
                           "experiment.name", "experiment.output"}, changed
        assert got["experiment.duration_s"] == 30 and got["workload.utilisation"] in (0.5, 1.3)
    assert mosaic_exp.point_of({"values": pts[-1].values, "seed": pts[-1].seed}) == mosaic_exp.point_name(
        "mosaic-nomatrix", "43", "0.35", 1.3)
    assert mosaic_exp.point_name("fcfs", "44", "0.35", 0.9) != mosaic_exp.point_name("fcfs", "44")
