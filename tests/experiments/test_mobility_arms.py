"""The mobility experiment's arms are configs/mobility-drive.toml with only
their difference changed, each a valid experiment file; its analysis finds
each request's place relative to the handovers as worked out here by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from continuum import experiment

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "mobility"))
import analyze  # noqa: E402
import arms  # noqa: E402

DRIVE = REPO.parent / "shared" / "traces" / "irish-5g" / "5G-production-dataset.zip"


@pytest.mark.parametrize("arm", list(arms.ARMS))
def test_each_arm_is_the_drive_with_only_its_difference(tmp_path, arm):
    if not DRIVE.is_file():
        pytest.skip(f"the Irish 5G dataset is not at {DRIVE} (clone the repository beside ../shared)")
    f = tmp_path / f"{arm}.toml"
    f.write_text(arms.arm((REPO / "configs" / "mobility-drive.toml").read_text(), arm, str(tmp_path / "runs")))
    spec = experiment.load(f, materialize=False)
    assert spec.workload.offload == ("cloud" if arm == "cloud" else "edge")
    assert spec.workload.arrivals == "poisson" and spec.duration_s == 265 and spec.output == tmp_path / "runs"
    assert ("smec" in spec.edge) == (arm == "edge-smec")
    assert len(spec.timeline) == (0 if arm == "edge-no-outage" else 10)  # the drive's handovers in its first 270 s
    with pytest.raises(SystemExit):
        arms.arm("", "teleport", "x")


def test_requests_are_placed_relative_to_the_handovers_by_hand():
    s = 1_000_000_000
    handovers = [10 * s, 20 * s]
    drawn = pd.Series([5 * s, 10 * s, 10 * s + s // 2, 16 * s, 21 * s])
    assert analyze.since_handover(drawn, handovers).tolist()[1:] == [0.0, 0.5, 6.0, 1.0]
    assert pd.isna(analyze.since_handover(drawn, handovers)[0])
    assert analyze.to_nearest(drawn, handovers).tolist() == [-5.0, 0.0, 0.5, -4.0, 1.0]
