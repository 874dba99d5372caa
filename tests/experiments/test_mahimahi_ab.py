"""The mahimahi A/B's campaign: the quickstart with only the scenario's traces
and the emulator changed, each point a valid file, the two emulators' points
differing in that one line; its analysis turns link.csv rows into the shares and ranges
worked out here by hand; the lab's trace capacity per second is the trace's."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[2]
AB = REPO / "experiments" / "mahimahi-ab"
SHARED = REPO.parent / "shared" / "traces" / "mahimahi"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"mahimahi_ab_{name}", AB / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


campaign = _module("campaign")


def test_the_campaign_is_the_quickstart_per_scenario_and_emulator(tmp_path):
    """Six points, each the quickstart but for the scenario's traces, the emulator and the window (checked
    key for key by campaign.check), every one a valid file; the two emulators' points of a scenario differ
    in the emulator alone; a point that drifts is caught."""
    if not SHARED.is_dir():
        pytest.skip(f"the Verizon LTE trace is not at {SHARED} (clone the repository beside ../shared)")
    from continuum.campaign import sweep

    f = tmp_path / "runs.toml"
    f.write_text(campaign.text(tmp_path))
    campaign.check(f)
    pts = sweep.points(f)
    specs = sweep.check(f, pts)
    for p, spec in zip(pts, specs):
        s = campaign.scenario(p.values)
        assert spec.mobile.emulator == p.values["mobile.emulator"] and spec.repetitions == 3 and spec.duration_s == 20
        assert (spec.mobile.uplink.given, spec.mobile.downlink.given) == campaign.TRACES[s]
    for a, b in zip(pts[::2], pts[1::2]):
        la, lb = a.text.splitlines()[1:], b.text.splitlines()[1:]  # the first line names the point
        assert [x for x in lb if x not in la] == ['emulator = "mahimahi"'], (a.label(), b.label())
    f.write_text(f.read_text().replace("repetitions = 3", "repetitions = 2"))
    with pytest.raises(AssertionError):
        campaign.check(f)


def test_the_summary_is_the_hand_computed_shares_and_ranges(tmp_path):
    analyze = _module("analyze")
    rows = [  # two repetitions of one emulator: delivered payload against 12.032 Mbit/s of opportunities
        {"scenario": "quickstart", "emulator": "mahimahi", "rep": "1", "measure": "uplink delivered",
         "mbit_per_s": "11.776", "trace_mbit_per_s": "12.032", "cpu_s_per_gbit": "3.0"},
        {"scenario": "quickstart", "emulator": "mahimahi", "rep": "2", "measure": "uplink delivered",
         "mbit_per_s": "5.888", "trace_mbit_per_s": "12.032", "cpu_s_per_gbit": "4.0"},
        {"scenario": "quickstart", "emulator": "mahimahi", "rep": "1", "measure": "uplink delay, idle",
         "p50_ms": "1.0", "p90_ms": "1.5", "p99_ms": "2.0"},
        {"scenario": "quickstart", "emulator": "mahimahi", "rep": "2", "measure": "uplink delay, idle",
         "p50_ms": "3.0", "p90_ms": "3.5", "p99_ms": "4.0"},
    ]
    with open(tmp_path / "link.csv", "w", newline="") as f:
        w = csv.DictWriter(f, list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)
    text = analyze.summary(analyze._load(tmp_path), tmp_path)
    # 11.776 / (12.032 x 1472/1504) = 1.000 and half of it 0.500: mean 0.750, range 0.500-1.000
    assert "| quickstart (12 / 48 Mbit/s) | upstream mm-link + patches | 0.750 (0.500-1.000) |" in text
    assert "| 3.5 (3-4) |" in text  # CPU s per Gbit: mean and range
    # each repetition's own percentiles, never averaged across metrics: P50 2.00 (1.00-3.00), P99 3.00 (2.00-4.00)
    assert "| upstream mm-link + patches | 2.00 (1.00-3.00) | 2.50 (1.50-3.50) | 3.00 (2.00-4.00) | - | - | - |" in text


def test_the_lab_counts_a_traces_capacity_per_second(tmp_path):
    linklab = _module("linklab")
    trace = tmp_path / "t"
    trace.write_text("".join(f"{t}\n" for t in [*range(1, 1001), *[t for t in range(1001, 2001) for _ in range(2)]]))
    cap = linklab.per_second_capacity(trace)
    assert [round(c, 3) for c in cap] == [12.032, 24.064]  # 1000 and 2000 opportunities of 1504 bytes
    assert linklab.offered(cap, 1.0, 3) == pytest.approx((24.064 + 12.032 + 24.064) / 3, abs=1e-3)
    one_ms = tmp_path / "c"
    one_ms.write_text("1\n")
    assert [round(c, 3) for c in linklab.per_second_capacity(one_ms)] == [12.032]  # a 1-ms loop
