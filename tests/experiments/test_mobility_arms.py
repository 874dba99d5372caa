"""The mobility experiment's campaign: its arms are configs/mobility-drive.toml
with only their difference changed (campaign.check, which must catch a
drifted arm), each point a valid experiment file; its analysis finds each
request's place relative to the handovers as worked out here by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from continuum import experiment

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "mobility"))
import analyze  # noqa: E402
import campaign  # noqa: E402
from continuum.campaign import sweep  # noqa: E402

DRIVE = REPO.parent / "shared" / "traces" / "irish-5g" / "5G-production-dataset.zip"


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    if not DRIVE.is_file():
        pytest.skip(f"the Irish 5G dataset is not at {DRIVE} (clone the repository beside ../shared)")
    out = tmp_path_factory.mktemp("mobility")
    path = out / "drive.toml"
    path.write_text(campaign.text(out))
    campaign.check(path, out)
    return {p.arm: (p, experiment.load(path, materialize=False, text=p.text)) for p in sweep.points(path)}


def test_the_campaign_holds_the_eight_arms_and_check_catches_a_drifted_one(points, tmp_path):
    assert list(points) == list(campaign.ARMS)
    drifted = tmp_path / "drift.toml"
    text = campaign.text(tmp_path)
    assert "[sweep.arms.stay-smec.core]\nedge = 0.5\n" in text
    drifted.write_text(text.replace("[sweep.arms.stay-smec.core]\nedge = 0.5\n", '[sweep.arms.stay-smec.core]\nedge = 0.5\ncloud = "eu_central_1"\n'))
    with pytest.raises(AssertionError, match="stay-smec"):
        campaign.check(drifted, tmp_path)


@pytest.mark.parametrize("arm", campaign.ARMS)
def test_each_arm_is_the_drive_with_only_its_difference(points, arm):
    point, spec = points[arm]
    assert spec.workload.offload == ("cloud" if arm == "cloud" else "edge")
    assert spec.workload.arrivals == "poisson" and spec.duration_s == 265 and spec.output.name == "runs"
    assert ("smec" in spec.edge) == ("smec" in arm)
    outages = [e for e in spec.timeline if e.kind == "outage"]
    assert len(outages) == (0 if arm == "edge-no-outage" else 10)  # the drive's handovers in its first 270 s
    steps = [e for e in spec.timeline if e.kind == "core_delay"]
    moves = [e for e in spec.timeline if e.kind == "relocate"]
    if not arm.startswith(("stay", "follow")):
        assert not steps and not moves
        return
    # one edge node per cell of the drive (12, then 11); edge1 far from the start, then at each
    # handover the old cell's site far and the new one's near
    assert len(spec.role("edge")) == 2 and spec.core.edge_ms == campaign.NEAR_MS
    assert [(e.t_s, e.node, e.core_delay_ms) for e in steps[:3]] == [(0, "edge1", campaign.FAR_MS), (77, "edge0", campaign.FAR_MS),
                                                                    (77, "edge1", campaign.NEAR_MS)]
    assert len(steps) == 1 + 2 * 10
    if arm.startswith("stay"):
        assert not moves
        return
    # the service follows the UE to the new cell's site, back and forth, each move timed from
    # the far site's 3 ms and the near one's 0.5 ms plus 10 MB at 1 Gbit/s
    assert [e.relocate for e in moves] == ["edge1", "edge0"] * 5 and [e.t_s for e in moves] == [e.t_s for e in outages]
    assert all(e.move_s == pytest.approx((campaign.FAR_MS + campaign.NEAR_MS) / 1000 + 0.08) for e in moves)


def test_requests_are_placed_relative_to_the_handovers_by_hand():
    s = 1_000_000_000
    handovers = [10 * s, 20 * s]
    drawn = pd.Series([5 * s, 10 * s, 10 * s + s // 2, 16 * s, 21 * s])
    assert analyze.since_handover(drawn, handovers).tolist()[1:] == [0.0, 0.5, 6.0, 1.0]
    assert pd.isna(analyze.since_handover(drawn, handovers)[0])
    assert analyze.to_nearest(drawn, handovers).tolist() == [-5.0, 0.0, 0.5, -4.0, 1.0]
