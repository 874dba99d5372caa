"""Upstream Mahimahi's mm-link with mahimahi-patches/ applied. These tests need a
clone of upstream (to build) or the build (to run it); without them they skip
and say how to get them: no machine of the project's CI reaches github.com."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from continuum.network import mahimahi

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-link" / "lab"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-patches" / "lab"))

CACHE_CLONE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "continuum" / "mahimahi"


@pytest.fixture(scope="session")
def upstream_source() -> Path:
    """A clone of upstream Mahimahi: $CONTINUUM_MAHIMAHI_SOURCE, or the one mahimahi-patches/build made."""
    env = os.environ.get("CONTINUUM_MAHIMAHI_SOURCE")
    for p in ([Path(env)] if env else []) + [CACHE_CLONE]:
        if (p / "HEAD").exists() or (p / ".git").exists():
            return p
    pytest.skip("no clone of upstream Mahimahi here (https://github.com/ravinet/mahimahi): set "
                "CONTINUUM_MAHIMAHI_SOURCE to one, or run mahimahi-patches/build on a machine that reaches github.com")


@pytest.fixture(scope="session")
def mm_link(root_netns) -> Path:
    """The installed patched mm-link (mahimahi-patches/build), ready to run here."""
    problems = mahimahi.problems()
    if problems:
        pytest.skip("; ".join(problems))
    return mahimahi.binary()

