"""`continuum compare --campaign FOLDER A B`: two groups of a campaign's runs
against each other, as `continuum compare` judges two runs (medians, P99s,
KS distance, verdicts). A group is an arm's name or KEY=VALUE[,KEY=VALUE]
of swept keys (and `seed=N`); its complete points' measured requests are
taken together, so the distributions compared carry every seed's run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from continuum.errors import UsageError
from continuum.results import compare


def side(folder: Path, selector: str) -> compare.Side:
    """The complete points of the campaign in `folder` that `selector` names, their requests together."""
    state_file = folder / "campaign.json"
    if not state_file.exists():
        raise UsageError(f"{folder} is not a campaign folder (no campaign.json): give OUTPUT/campaign-NAME")
    points = json.loads(state_file.read_text())["points"]
    chosen = [p for p in points if p.get("status") == "complete" and _matches(p, selector)]
    if not chosen:
        arms = sorted({p["arm"] for p in points if p.get("arm")})
        keys = sorted({f"{k}={v}" for p in points for k, v in p["values"].items()})
        raise UsageError(f"{selector!r} names no complete point of {folder}; groups: "
                         + ", ".join([*arms, *keys, "seed=N"]) + " (join KEY=VALUE pairs with ',')")
    sides = [compare.load(folder / p["run"]) for p in chosen]
    requests = pd.concat([s.requests for s in sides], ignore_index=True)
    return compare.Side(f"{selector} ({len(chosen)} runs)", folder, requests, sides[0].manifest)


def _matches(p: dict[str, Any], selector: str) -> bool:
    if "=" not in selector:
        return p.get("arm") == selector
    for part in selector.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        got = p.get("seed") if key == "seed" else p["values"].get(key)
        if got is None or str(got) != value.strip():
            return False
    return True
