"""The MECaNIC experiment's caching arms (one campaign) are
configs/mecanic-cache.toml with only their difference changed, each a valid
experiment file; lab.py's
per-phase figures come out of receive logs as worked out here by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[2]


def _load(name: str):
    """experiments/mecanic/NAME.py under a name of its own (the pDCell experiment has a campaign.py too)."""
    spec = importlib.util.spec_from_file_location(f"mecanic_experiment_{name}", REPO / "experiments" / "mecanic" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


campaign, lab = _load("campaign"), _load("lab")

LUMOS = REPO.parent / "shared" / "traces" / "lumos5g-per-second"


def test_each_caching_arm_is_the_download_with_only_its_difference(tmp_path):
    """The cache campaign's four arms: each point a valid file, the shipped one but for its arm's change
    (campaign.check), and the change the arm is."""
    if not LUMOS.is_dir():
        pytest.skip(f"the Lumos5G traces are not at {LUMOS} (clone the repository beside ../shared)")
    from continuum.campaign import sweep

    f = tmp_path / "cache.toml"
    f.write_text(campaign.text(tmp_path))
    campaign.check(f)
    pts = sweep.points(f)
    for p, spec in zip(pts, sweep.check(f, pts)):
        arm = p.arm
        nic = spec.edge["mecanic"]
        assert spec.output == tmp_path / "runs" and spec.duration_s == 60 and nic.kind == "plain"
        assert (nic.cache_mb is not None) == arm.startswith("nic")
        apps = {a.name: a for a in spec.apps}
        if arm.endswith("stress"):
            assert set(apps) == {"dl", "stress"} and apps["dl"].endpoints == ("endpoint0",)
            assert apps["dl"].workload.params == apps["stress"].workload.params | {"bank_size": 2}
            assert apps["stress"].workload.app == "file_download" and len(apps["stress"].endpoints) == campaign.STRESS_ENDPOINTS
            assert nic.cache_endpoints == (("endpoint0",) if arm.startswith("nic") else ())
        else:
            assert list(apps) == ["file_download"] and apps["file_download"].workload.params == {"bank_size": 2, "file_bytes": 4_000_000}
    # an arm that changes more than its difference is caught
    f.write_text(f.read_text().replace('[sweep.arms.nic]\n', '[sweep.arms.nic]\n"mobile.uplink" = "const-12mbps"\n'))
    with pytest.raises(AssertionError, match="arm nic"):
        campaign.check(f)


def test_the_priority_figures_per_phase_from_receive_logs(tmp_path):
    """Low starts 1 s after High (phase 1 s): High's datagrams sent in each phase (its first 0.5 s
    left out), their latency end to end; loss over the whole run."""
    t0 = 10**12
    ms = 10**6
    high = [(t0 + k * 100 * ms + 2 * ms * (1 + (k >= 10) + (k >= 20)), k, t0 + k * 100 * ms, 0) for k in range(30)]
    low = [(t0 + 10**9 + k * 50 * ms + 50 * ms, k, t0 + 10**9 + k * 50 * ms, int(k % 4 == 3)) for k in range(40)]
    for name, rows in (("high", high), ("low", low)):
        (tmp_path / f"{name}.rx").write_text("".join(f"{a} {b} {c} {d}\n" for a, b, c, d in rows))
    got = {(r["phase"], r["flow"]): r for r in lab.priority_rows(tmp_path, "mecanic", 1.0, {"high": 32, "low": 40})}
    # High: sent at 0.0-2.9 s; each phase keeps its last 0.5 s: 5 datagrams at 2, 4, 6 ms
    assert [got[(p, "high")]["received"] for p in ("Low silent", "Low at 1x", "Low at 2x")] == [5, 5, 5]
    assert [got[(p, "high")]["mean_ms"] for p in ("Low silent", "Low at 1x", "Low at 2x")] == [2.0, 4.0, 6.0]
    # Low at 1x: sent at 1.5-1.95 s, every 4th marked (k = 11, 15, 19)
    assert got[("Low at 1x", "urgent (marked low)")]["received"] == 3 and got[("Low at 1x", "low")]["received"] == 7
    assert got[("whole run", "high")]["loss"] == round(1 - 30 / 32, 5) and got[("whole run", "low")]["loss"] == 0
