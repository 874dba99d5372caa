"""The run folder's size estimate (continuum/diskspace.py) from a plan, no root
needed: the link logs are the traces' opportunity rates over the emulator's
lifetime, so they scale with the traces and the run's length, and the
estimate of a long run is the link logs' (the fixed files are a few MB).
Its agreement with a real folder is checked on the live runs of
test_run.py (the quickstart) and stated for a long run in docs/reliability.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from continuum import diskspace, experiment
from continuum.network import plan as netplan

REPO = Path(__file__).resolve().parents[2]


def _estimate(tmp_path: Path, up: str, down: str, duration: float, reps: int = 1) -> diskspace.Estimate:
    text = (REPO / "configs" / "quickstart.toml").read_text()
    text = re.sub(r'(?m)^uplink = .*$', f'uplink = "{up}"', text)
    text = re.sub(r'(?m)^downlink = .*$', f'downlink = "{down}"', text)
    text = re.sub(r"(?m)^duration_s = .*$", f"duration_s = {duration}", text)
    text = re.sub(r"(?m)^repetitions = .*$", f"repetitions = {reps}", text)
    text = re.sub(r"(?m)^output = .*$", f'output = "{tmp_path / "runs"}"', text)
    (tmp_path / "e.toml").write_text(text)
    spec = experiment.load(tmp_path / "e.toml")  # the const- traces are made on this machine
    return diskspace.estimate(spec, netplan.build(spec))


def test_the_link_logs_are_the_opportunities_over_the_emulators_lifetime(tmp_path):
    e = _estimate(tmp_path, "const-12mbps", "const-48mbps", 600)
    # the quickstart's 5-s warm-up, its one app and endpoint
    lifetime = 5 + 600 + diskspace.SETUP_S_PER_REPETITION + diskspace.SETUP_S_PER_APP + diskspace.SETUP_S_PER_ENDPOINT
    assert e.lifetime_s == pytest.approx(lifetime)
    # 1000 + 4000 opportunities a second, a line each of T (6 digits here) + " # 1504\n"
    opp_bytes = 5000 * lifetime * 14
    assert opp_bytes <= e.parts["link logs"] <= 1.05 * opp_bytes, e.parts
    assert e.parts["link logs"] > 0.9 * e.total, e.parts  # a long run's folder is its link logs


def test_the_estimate_scales_with_the_traces_and_the_runs_length(tmp_path):
    short = _estimate(tmp_path, "const-12mbps", "const-48mbps", 60)
    long = _estimate(tmp_path, "const-12mbps", "const-48mbps", 600)
    fast = _estimate(tmp_path, "const-120mbps", "const-48mbps", 600)
    twice = _estimate(tmp_path, "const-12mbps", "const-48mbps", 600, reps=2)
    assert 7.3 < long.parts["link logs"] / short.parts["link logs"] < 8.5  # (600 + ~32) / (60 + ~32) s, its lines a digit wider
    # 14000 opportunities a second against 5000; the requests' own packet lines stay as they were
    assert 2.6 < fast.parts["link logs"] / long.parts["link logs"] <= (10000 + 4000) / 5000
    assert 2 * long.parts["link logs"] <= twice.parts["link logs"] <= 2.2 * long.parts["link logs"]  # one log, T grows on
    assert long.parts["plots and report"] == short.parts["plots and report"]
    assert long.reserve_bytes >= diskspace.MIN_RESERVE_BYTES
    assert "for the run folder" in long.describe(1e9) and "1.0 GB free there" in long.describe(1e9)
