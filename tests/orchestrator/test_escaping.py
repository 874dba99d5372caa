"""Every path and name a user can set, with the characters that change the
meaning of the small text formats they end up in (the emulator's --link
option, docker's -v, config lines): each either arrives intact as one value
or is refused with an error naming the key. No root needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuum import experiment
from continuum.errors import ConfigError
from continuum.network import link, plan as netplan

HERE = Path(__file__).parent / "configs"
CHARS = [",", "=", ":", "'", '"', "\n", " ", "{name}"]


def _file(tmp_path: Path, trace: str, output: str = "runs", runtime: str = "process") -> Path:
    text = (HERE / "good-minimal.toml").read_text()
    text = text.replace("[mobile]", f"[mobile]\nuplink = {json.dumps(trace)}\ndownlink = {json.dumps(trace)}", 1)
    text = text.replace("[experiment]", f"[experiment]\noutput = {json.dumps(output)}", 1)
    text += f"\n[workload]\nruntime = {json.dumps(runtime)}\n" if "[workload]" not in text else ""
    f = tmp_path / "exp.toml"
    f.write_text(text)
    return f


@pytest.mark.parametrize("ch", CHARS, ids=repr)
def test_trace_paths_reach_the_emulator_whole_or_are_refused(tmp_path, ch):
    d = tmp_path / f"dir{ch}x"
    d.mkdir()
    trace = d / f"t{ch}y.trace"
    trace.write_text("1\n2\n")
    f = _file(tmp_path, str(trace))
    if ch == ",":
        with pytest.raises(ConfigError) as e:
            experiment.load(f, materialize=False)
        assert {i.key for i in e.value.issues} == {"mobile.uplink", "mobile.downlink"}
        assert "--link" in str(e.value)
        return
    spec = experiment.load(f, materialize=False)
    assert spec.mobile.uplink.path == trace.resolve()
    argv = link.argv(spec, netplan.build(spec), tmp_path / "logs", tmp_path / "stats.json", "mahimahi-link")
    (arg,) = [a for a in argv if a.startswith("--link=")]
    parts = dict(p.split("=", 1) for p in arg.removeprefix("--link=").split(","))  # as the emulator splits it
    assert parts["up"] == parts["down"] == str(trace.resolve())
    assert set(parts) == {"name", "ue", "core", "up", "down"}


@pytest.mark.parametrize("ch", CHARS, ids=repr)
def test_output_folders_that_containers_cannot_mount_are_refused(tmp_path, ch):
    trace = tmp_path / "t.trace"
    trace.write_text("1\n2\n")
    out = str(tmp_path / f"out{ch}x")
    for runtime in ("process", "container"):
        f = _file(tmp_path, str(trace), out, runtime)
        refused = ch in ("\n", "{name}") or (ch == ":" and runtime == "container")
        if refused:
            with pytest.raises(ConfigError) as e:
                experiment.load(f, materialize=False)
            assert [i.key for i in e.value.issues] == ["experiment.output"], e.value
        else:
            assert str(experiment.load(f, materialize=False).output) == out
