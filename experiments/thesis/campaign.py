"""The thesis experiments as campaigns (docs/campaigns.md), one per
experiment: its first point's file in configs/thesis/ with a [sweep] of
named arms, one per point, each setting the keys in which that point's
shipped file differs (points.arms_from_files):
    campaign.py RESULTS_FOLDER E1 [--quick] ...   (thesis.py writes and runs them)

The shipped files stay the points a researcher runs alone (`continuum run
configs/thesis/e1-lte.toml`); a campaign changes only their [experiment]
timing (--quick, --repetitions), where results go, and, when asked, who
segments the hosts' traffic (mobile.segmentation). `check()` holds every
point to its shipped file but for those keys."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import tomli_w

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from points import arms_from_files, complete_points, flat  # noqa: E402

CONFIGS = REPO / "configs" / "thesis"
# the campaign's own keys: its name and folder, the run's timing, and --segmentation's
OWN = ("experiment.name", "experiment.output", "experiment.duration_s", "experiment.warmup_s", "experiment.repetitions")


def shipped(point: str) -> dict:
    return tomllib.loads((CONFIGS / f"{point}.toml").read_text())


def name(experiment: str, points: list[str], every: list[str]) -> str:
    """The campaign's name: thesis-E1 for a whole experiment, its points named for a part (a folder of its own)."""
    return f"thesis-{experiment}" if points == every else f"thesis-{experiment}-{'+'.join(points)}"


def text(experiment: str, points: list[str], every: list[str], timing: dict, out: Path, segmentation: str | None) -> str:
    """The campaign file of POINTS of one experiment, its runs under OUT/runs."""
    base = shipped(points[0])
    base["experiment"].update(timing, name=name(experiment, points, every), output=str(out / "runs"))
    if segmentation:
        base.setdefault("mobile", {})["segmentation"] = segmentation
    arms = arms_from_files(shipped(points[0]), {p: shipped(p) for p in points}, OWN)
    head = f"# experiments/thesis: {experiment}'s points {', '.join(points)} (configs/thesis/), one campaign\n"
    return head + tomli_w.dumps(base) + "\n" + tomli_w.dumps({"sweep": {"arms": arms}})


def check(path: Path, points: list[str], segmentation: str | None) -> None:
    """Every point is its shipped file but for the campaign's own keys (and mobile.segmentation when set)."""
    from continuum.campaign import sweep

    own = (*OWN, "mobile.segmentation") if segmentation else OWN
    seen = []
    for p in sweep.points(path):
        want, got = flat(shipped(p.arm or "")), flat(tomllib.loads(p.text))
        diff = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k) and not k.startswith(own))
        assert not diff, f"{path} point {p.index} ({p.arm}) differs from configs/thesis/{p.arm}.toml in {diff}"
        seen.append(p.arm)
    assert seen == points, (seen, points)


def records(folder: Path) -> dict[str, dict]:
    """The campaign's complete points by point name: campaign.json's entries with their run folders."""
    return {e["arm"]: e for e in complete_points(folder)}
