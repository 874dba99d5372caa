"""The thesis experiments' pipeline, in test-suite time. The full smoke run
(`experiments/thesis/run --quick`, every point once, ~16 minutes here) is an
experiment, not a test; here:
- the analysis redraws every figure and a report with every finding from the
  committed full run (experiments/thesis/results), as `--analyze-only`.
(A live point through the script cost a minute of the test command's budget;
the core delay it showed is tests/orchestrator/test_run.py's, live.)
The numbers themselves are the experiment's result, not pass/fail: only what
a broken pipeline would get wrong is checked."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "experiments" / "thesis" / "run"
RESULTS = REPO / "experiments" / "thesis" / "results"
FIGURES = ["e1_latency_per_request", "e1_decomposition", "e2_decomposition", "e3_cdf", "e3_uplink_vs_core", "e4_uplink_vs_time",
           "e4_uplink_vs_capacity", "e4_uplink_vs_queue", "e4_congestion_control", "6g"]
VERDICTS = ("agrees", "mostly agrees", "differs", "same direction, different size", "agrees on 5G, differs on LTE")


def test_analysis_of_the_committed_run_draws_every_figure_and_finding(tmp_path):
    out = tmp_path / "results"
    shutil.copytree(RESULTS, out, ignore=shutil.ignore_patterns("figures", "report.md"))
    p = subprocess.run([str(REPO / ".venv" / "bin" / "python"), str(REPO / "experiments" / "thesis" / "thesis.py"),
                        "--analyze-only", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for f in FIGURES:
        assert (out / "figures" / f"{f}.png").stat().st_size > 10_000, f
    report = (out / "report.md").read_text()
    table = report.split("## Our numbers next to the thesis'")[1].split("\n## ")[0]
    findings = [r for r in table.splitlines() if r.startswith("| E") or r.startswith("| 6G")]
    assert len(findings) == 10, table
    for r in findings:
        cells = [c.strip() for c in r.strip("|").split("|")]
        assert len(cells) == 5 and all(cells), r
        assert cells[3] in VERDICTS, r
    # the committed report is what this code makes of the committed runs
    committed = (RESULTS / "report.md").read_text()
    assert table == committed.split("## Our numbers next to the thesis'")[1].split("\n## ")[0]
