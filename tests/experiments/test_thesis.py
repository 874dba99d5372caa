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

import pytest

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


def test_each_experiment_is_a_campaign_of_its_shipped_point_files(tmp_path):
    """campaign.py: every experiment's points as named arms over its first file, each point its shipped file
    key for key but for the campaign's timing, name and folder (campaign.check, which must catch a point
    that differs more), and a valid file as `continuum run` loads it."""
    import importlib.util
    import sys

    from continuum.campaign import sweep

    def load(name: str):
        """experiments/thesis/NAME.py under a name of its own: other experiments have a campaign.py too."""
        spec = importlib.util.spec_from_file_location(f"thesis_experiment_{name}", REPO / "experiments" / "thesis" / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(REPO / "experiments"))  # their `from points import ...`
        spec.loader.exec_module(module)
        return module

    campaign, thesis = load("campaign"), load("thesis")

    quick = {"duration_s": 20, "warmup_s": 3, "repetitions": 1}
    for exp, pts in thesis.EXPERIMENTS.items():
        path = tmp_path / f"{exp}.toml"
        path.write_text(campaign.text(exp, pts, pts, quick, tmp_path, None))
        campaign.check(path, pts, None)
        specs = sweep.check(path, sweep.points(path))
        assert [s.duration_s for s in specs] == [20] * len(pts) and {s.name for s in specs} == {f"thesis-{exp}"}
    # E2's text point: another app, and the image point's bank_size unset, not left behind
    text = tmp_path / "E2.toml"
    e2 = {p.arm: p for p in sweep.points(text)}
    assert "bank_size" not in e2["e2-text"].text and 'app = "translation"' in e2["e2-text"].text
    # a part of an experiment is a campaign of its own; a drifted point is caught, named
    part = tmp_path / "part.toml"
    part.write_text(campaign.text("E4", ["e4-10rps", "e4-10rps-cc"], thesis.EXPERIMENTS["E4"], quick, tmp_path, "emulator"))
    campaign.check(part, ["e4-10rps", "e4-10rps-cc"], "emulator")
    assert sweep.points(part)[0].text.count('segmentation = "emulator"') == 1
    part.write_text(part.read_text().replace('[sweep.arms.e4-10rps-cc]\n', '[sweep.arms.e4-10rps-cc]\n"workload.rate" = 9.0\n'))
    with pytest.raises(AssertionError, match="e4-10rps-cc"):
        campaign.check(part, ["e4-10rps", "e4-10rps-cc"], "emulator")
