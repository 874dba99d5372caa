"""The thesis experiments' smoke test, as a user runs it: `experiments/thesis/run
--quick` runs every point of E1-E4 and the 6G projection once, briefly (~17
minutes here), and must produce every figure and a report whose every finding
has a number and a verdict. The numbers themselves are the experiment's
result, not pass/fail: only what a broken pipeline would get wrong is checked
(every request answered at low load, congestion control lowering the 10/s
tail, the 6G link's network share small)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIGURES = ["e1_latency_per_request", "e1_decomposition", "e2_decomposition", "e3_cdf", "e3_uplink_vs_core", "e4_uplink_vs_time",
           "e4_uplink_vs_capacity", "e4_uplink_vs_queue", "e4_congestion_control", "6g"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory, shared_traces, root_netns):
    out = tmp_path_factory.mktemp("thesis") / "quick"
    p = subprocess.run([str(REPO / "experiments" / "thesis" / "run"), "--quick", "--out", str(out)], capture_output=True, text=True,
                       timeout=40 * 60, env={**os.environ, "CONTINUUM_TRACE_MIRROR": str(shared_traces)})
    return out, p


def test_every_point_completes_and_the_report_has_every_finding(quick):
    out, p = quick
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    meta = json.loads((out / "points.json").read_text())
    assert [r["status"] for r in meta["points"]] == ["complete"] * 17, [(r["point"], r["status"]) for r in meta["points"]]
    for f in FIGURES:
        assert (out / "figures" / f"{f}.png").stat().st_size > 10_000, f
    report = (out / "report.md").read_text()
    table = report.split("## Our numbers next to the thesis'")[1].split("\n## ")[0]
    findings = [r for r in table.splitlines() if r.startswith("| E") or r.startswith("| 6G")]
    assert len(findings) == 10, table
    for r in findings:
        cells = [c.strip() for c in r.strip("|").split("|")]
        assert len(cells) == 5 and all(cells), r
        assert cells[3] in ("agrees", "mostly agrees", "differs", "same direction, different size", "agrees on 5G, differs on LTE"), r


def test_results_behave_like_the_system_they_measure(quick):
    out, _ = quick
    meta = json.loads((out / "points.json").read_text())
    summary = {r["point"]: json.loads((out / r["run_dir"] / "summary.json").read_text()) for r in meta["points"]}
    for point in ("e1-lte", "e1-5g", "e3-edge", "e3-us-east-1", "6g-emulated"):
        s = summary[point]
        assert s["requests"] >= 15 and s["answered"] == s["requests"], (point, s["requests"], s["answered"])
    med = lambda p, m: summary[p]["metrics"][m]["median"]  # noqa: E731
    # 40 ms one-way core delay must show in the median uplink (at least once each way of the request's RTTs)
    assert med("e3-us-east-1", "uplink_ms") - med("e3-edge", "uplink_ms") > 35
    assert summary["e4-10rps"]["metrics"]["e2e_ms"]["p99"] > summary["e4-10rps-cc"]["metrics"]["e2e_ms"]["p99"]
    assert med("6g-emulated", "uplink_ms") + med("6g-emulated", "downlink_ms") < 0.3 * med("6g-emulated", "e2e_ms")
