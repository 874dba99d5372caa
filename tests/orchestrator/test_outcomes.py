"""What `continuum run` says happened, when teardown or results fail: the
runner driven with a fake provider and a stand-in for the live phases, so
these run without root and in a second."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from continuum import runner
from continuum import experiment
from continuum.errors import ProviderError
from continuum.providers.base import Provider

HERE = Path(__file__).parent / "configs"


class FakeProvider(Provider):
    kind = "netns"

    def check(self, spec):
        return []


@pytest.fixture
def spec(tmp_path, monkeypatch):
    f = tmp_path / "exp.toml"
    f.write_text((HERE / "good-minimal.toml").read_text())
    monkeypatch.setattr(runner, "REGISTRY", {"netns": FakeProvider})
    return dataclasses.replace(experiment.load(f), output=tmp_path / "runs")


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=200, highlight=False), buf


def test_failed_teardown_is_reported_not_hidden(spec, monkeypatch):
    def live(ctx, provider):
        def stuck():
            raise OSError("device or resource busy")
        ctx.undo.callback(stuck)

    monkeypatch.setattr(runner, "_run", live)
    console, buf = _console()
    with pytest.raises(ProviderError, match="teardown was incomplete"):
        runner.run(spec, ["continuum", "run"], console)
    out = buf.getvalue()
    assert "nothing of this run is left" not in out
    assert "teardown incomplete" in out and "continuum destroy" in out
    (run_dir,) = spec.output.glob("*")
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["teardown"]["complete"] is False and "device or resource busy" in m["teardown"]["failures"][0]
    assert m["status"].startswith("failed")


def test_broken_results_never_replace_the_runs_own_error(spec, monkeypatch):
    def live(ctx, provider):
        (ctx.run_dir / "raw" / "requests-endpoint0-1.csv").write_text("not,the,contract\n1,2,3\n")
        raise ProviderError("the broker died")

    monkeypatch.setattr(runner, "_run", live)
    console, buf = _console()
    with pytest.raises(ProviderError, match="the broker died"):
        runner.run(spec, ["continuum", "run"], console)
    assert "partial results could not be built" in buf.getvalue()
    assert "nothing of this run is left" in buf.getvalue()


def test_the_experiment_file_kept_is_the_text_that_was_hashed(spec, monkeypatch):
    monkeypatch.setattr(runner, "_run", lambda *a: None)
    spec.source.write_text("# edited on disk after loading\n")
    console, _ = _console()
    run_dir = runner.run(spec, ["continuum", "run"], console)
    kept = (run_dir / "experiment.toml").read_text()
    m = json.loads((run_dir / "manifest.json").read_text())
    assert hashlib.sha256(kept.encode()).hexdigest() == m["config_sha256"] == spec.sha256
    assert m["status"] == "complete" and m["teardown"] == {"complete": True, "failures": []}


def test_an_interrupt_while_drawing_says_the_measurement_is_whole(spec, monkeypatch):
    monkeypatch.setattr(runner, "_run", lambda *a: None)

    def interrupted(run_dir):
        raise KeyboardInterrupt("SIGTERM")

    monkeypatch.setattr(runner.report, "build", interrupted)
    console, _ = _console()
    with pytest.raises(runner.Interrupted, match="while building the results; the run is complete; `continuum report "):
        runner.run(spec, ["continuum", "run"], console)
    (run_dir,) = spec.output.glob("*")
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "complete"
