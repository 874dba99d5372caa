"""`continuum compare` on two committed result folders of one experiment file
(configs/qemu-smec.toml, 20 s: under netns and under qemu on TCG, 2026-11-26;
their requests.csv and manifest.json only): its figures against the same
figures computed here from the CSVs by hand (sorting, counting, the largest
gap between the two empirical CDFs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from continuum.results import compare

HERE = Path(__file__).parent / "compare"
A, B = HERE / "netns", HERE / "qemu"


def _answered(folder: Path, col: str) -> list[float]:
    d = pd.read_csv(folder / "requests.csv")
    d = d[(d["phase"] == "measure") & (d["status"] == "ok")]
    return sorted(float(x) for x in d[col])


def _median(v: list[float]) -> float:
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _ks(x: list[float], y: list[float]) -> float:
    """The largest gap between the two step CDFs, at every value either side took."""
    return max(abs(sum(v <= t for v in x) / len(x) - sum(v <= t for v in y) / len(y)) for t in set(x) | set(y))


@pytest.mark.parametrize("col", ["uplink_ms", "server_ms", "e2e_ms"])
def test_medians_p99s_and_ks_distance_match_a_computation_by_hand(col):
    c = compare.compare(compare.load(A), compare.load(B))
    row = next(r for r in c["metrics"] if r["group"] == "all" and r["metric"] == col)
    x, y = _answered(A, col), _answered(B, col)
    assert (row["n_a"], row["n_b"]) == (len(x), len(y))
    assert row["median_a"] == pytest.approx(_median(x)) and row["median_b"] == pytest.approx(_median(y))
    assert row["median_ratio"] == pytest.approx(_median(y) / _median(x))
    assert row["p99_a"] == pytest.approx(np.percentile(x, 99)) and row["p99_b"] == pytest.approx(np.percentile(y, 99))
    assert row["ks"] == pytest.approx(_ks(x, y))
    agrees = abs(_median(y) / _median(x) - 1) <= 0.10 and _ks(x, y) <= 0.20
    assert row["verdict"] == ("agrees" if agrees else "diverges")


def test_the_slo_share_counts_every_measured_request():
    c = compare.compare(compare.load(A), compare.load(B))
    (o,) = c["outcomes"]
    slo = json.loads((A / "manifest.json").read_text())["apps"]["file_transfer"]["slo_ms"]
    assert o["slo_ms"] == slo
    for side, folder in (("a", A), ("b", B)):
        d = pd.read_csv(folder / "requests.csv")
        d = d[d["phase"] == "measure"]
        met = sum(1 for _, r in d.iterrows() if r["status"] == "ok" and r["e2e_ms"] <= slo)
        assert o[f"slo_met_{side}"] == pytest.approx(met / len(d)) and o[f"requests_{side}"] == len(d)
    assert o["slo_met_difference"] == pytest.approx(o["slo_met_b"] - o["slo_met_a"])


def test_the_command_writes_the_report_figure_and_json_and_refuses_a_folder_that_is_no_run(tmp_path):
    cli = [sys.executable, "-m", "continuum", "compare"]
    p = subprocess.run([*cli, str(A), str(B), "--out", str(tmp_path / "c")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    md = (tmp_path / "c" / "compare.md").read_text()
    c = json.loads((tmp_path / "c" / "compare.json").read_text())
    e2e = next(r for r in c["metrics"] if r["metric"] == "e2e_ms")
    assert f"| all | end-to-end | {e2e['n_a']} | {e2e['n_b']} | {e2e['median_a']:.2f} | {e2e['median_b']:.2f} |" in md, md
    assert "Kolmogorov-Smirnov" in md and (tmp_path / "c" / "compare.png").stat().st_size > 10_000
    bad = subprocess.run([*cli, str(tmp_path), str(B)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "is not a finished run folder" in bad.stderr, bad.stderr


def test_a_side_with_no_answered_request_gets_no_verdict_and_its_panels_say_so(tmp_path):
    """A run whose every request timed out (MOSAIC's full-size tasks in a TCG guest did): no
    median, no KS, "too few"; the figure draws the other side and says which answered nothing."""
    import shutil

    b = tmp_path / "b"
    shutil.copytree(B, b)
    d = pd.read_csv(b / "requests.csv")
    d["status"] = "timeout"
    d.to_csv(b / "requests.csv", index=False)
    c, files = compare.run(A, b, tmp_path / "c")
    e2e = next(r for r in c["metrics"] if r["metric"] == "e2e_ms" and r["group"] == "all")
    assert e2e["n_b"] == 0 and e2e["median_b"] is None and e2e["ks"] is None and e2e["verdict"] == "too few", e2e
    assert c["outcomes"][0]["slo_met_b"] == 0
    assert (tmp_path / "c" / "compare.png").stat().st_size > 10_000


def test_report_of_two_runs_shows_their_known_difference_in_a_browser(tmp_path):
    """`continuum report A B` writes one page comparing them; in headless Chromium it logs
    nothing to the console, draws a CDF per run and metric, and its table holds the medians
    and KS distances computed here by hand (the qemu run's server time is ~2x netns')."""
    import re

    from browser import drawn_traces, figure, render

    p = subprocess.run([sys.executable, "-m", "continuum", "report", str(A), str(B), "--out", str(tmp_path / "cmp")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    shown = render(tmp_path / "cmp" / "report.html", tmp_path / "compare.png", height=2400)
    assert shown.console == [], shown.console
    for section in ("runs", "differences", "distributions", "over-time"):
        assert f'id="{section}"' in shown.dom
    cells = {(m, s): v for m, s, v in re.findall(r'data-run="B" data-metric="(\w+)" data-stat="(\w+)">([^<]+)<', shown.dom)}
    for col in ("uplink_ms", "server_ms", "e2e_ms"):
        a, b = _answered(A, col), _answered(B, col)
        assert cells[(col, "median_a")] == f"{_median(a):.2f}" and cells[(col, "median_b")] == f"{_median(b):.2f}"
        assert cells[(col, "ks")] == f"{_ks(a, b):.3f}"
    assert _median(_answered(B, "server_ms")) > 1.5 * _median(_answered(A, "server_ms")), "the known difference"
    assert "diverges" in figure(shown.dom, "comparison-cdfs") or "diverges" in shown.dom
    assert drawn_traces(figure(shown.dom, "comparison-cdfs")) >= 10  # two runs x the metrics both have


def _p99(v: list[float]) -> float:
    """Linear interpolation between the two closest ranks (numpy's default, done here by hand)."""
    h = (len(v) - 1) * 0.99
    k = int(h)
    return v[k] + (v[min(k + 1, len(v) - 1)] - v[k]) * (h - k)


def test_an_experiments_html_twin_shows_its_markdown_figures_and_arms_in_a_browser(tmp_path):
    """`continuum report EXPERIMENT_FOLDER`: the page beside its markdown, in headless Chromium: no
    console message, the markdown's table and figure, one CDF per arm and metric, each arm's medians
    and P99s equal to the ones computed here; `--self-contained` carries the figure and the library."""
    import re
    import shutil

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from browser import drawn_traces, figure, render

    exp = tmp_path / "exp"
    (exp / "results").mkdir(parents=True)
    (exp / "README.md").write_text("# A two-arm experiment\n\nRun it with `./run`.\n")
    (exp / "run").write_text("#!/bin/sh\n")
    for arm, src in (("netns", A), ("qemu", B)):
        run = exp / "results" / "runs" / arm / "20261126-000000-x"
        run.mkdir(parents=True)
        for f in ("requests.csv", "manifest.json"):
            shutil.copy(src / f, run / f)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    fig.savefig(exp / "results" / "line.png")
    (exp / "results" / "report.md").write_text("# What we measured\n\n| arm | verdict |\n|---|---|\n| qemu | slower server |\n\n"
                                               "![a line](line.png)\n")
    p = subprocess.run([sys.executable, "-m", "continuum", "report", str(exp)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    page = exp / "report.html"
    shown = render(page, tmp_path / "experiment.png", height=2400)
    assert shown.console == [], shown.console
    assert "A two-arm experiment" in shown.dom and "<td>slower server</td>" in shown.dom
    (src,) = re.findall(r'<img alt="a line" src="([^"]+)"', shown.dom)
    assert (page.parent / src).resolve() == (exp / "results" / "line.png").resolve()
    assert "<script type='text/javascript' src=" in page.read_text() and len(page.read_bytes()) < 200_000  # no library inside
    assert drawn_traces(figure(shown.dom, "runs")) == 8  # two arms x four metrics
    assert drawn_traces(figure(shown.dom, "runs-over-time")) == 2  # each arm's end-to-end latency over time
    cells = {(a, m, s): v for a, m, s, v in re.findall(r'data-arm="(\w+)" data-metric="(\w+)" data-stat="(\w+)">([^<]+)<', shown.dom)}
    for arm, folder in (("netns", A), ("qemu", B)):
        for col in ("uplink_ms", "server_ms", "e2e_ms"):
            v = _answered(folder, col)
            assert cells[(arm, col, "median")] == f"{_median(v):.2f}" and cells[(arm, col, "p99")] == f"{_p99(v):.2f}"
    assert float(cells[("qemu", "server_ms", "median")]) > 1.5 * float(cells[("netns", "server_ms", "median")])
    for col in ("uplink_ms", "server_ms", "e2e_ms"):  # the second arm against the first, as `continuum compare` judges
        assert cells[("qemu", col, "ks")] == f"{_ks(_answered(A, col), _answered(B, col)):.3f}"
    p = subprocess.run([sys.executable, "-m", "continuum", "report", str(exp), "--self-contained", "--out", str(tmp_path / "one.html")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    one = render(tmp_path / "one.html")
    assert one.console == [] and drawn_traces(figure(one.dom, "runs")) == 8
    assert re.search(r'<img alt="a line" src="data:image/png;base64,', one.dom)
