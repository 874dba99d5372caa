"""The experiment-file loader on generated documents (the million-case run is
experiments/reliability/fuzz_config.py, figures in docs/reliability.md): each
loads or is rejected with issues naming the file and the key. The documents
that crashed the loader when the fuzzer first ran are kept as cases."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest
import tomli_w

from continuum import experiment
from continuum.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("fuzz_config", REPO / "experiments" / "reliability" / "fuzz_config.py")
assert _spec and _spec.loader
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)


def test_generated_documents_load_or_name_their_key(tmp_path):
    loaded, rejected, issues, crashes = fuzz._run((400, 7, 400))
    assert not crashes, crashes[0]
    assert loaded > 0 and rejected > 0, "the generator must reach both outcomes"


@pytest.mark.parametrize("section, key, value, expected_key", [
    ("mobile", "uplink", "~nosuchuser/t", "mobile.uplink"),         # expanduser raised RuntimeError
    ("nodes.edge", "memory", "1e999G", "nodes.edge.memory"),        # OverflowError
    ("core", "edge", float("nan"), "core.edge"),                    # nan ms passed the range check
    ("experiment", "output", "runs\x00x", "experiment.output"),     # NUL loaded, failed at mkdir
    ("mobile", "downlink", "x" * 300, "mobile.downlink"),           # ENAMETOOLONG from is_file()
])
def test_found_by_the_fuzzer(tmp_path, section, key, value, expected_key):
    doc = tomllib.loads((REPO / "tests" / "orchestrator" / "configs" / "good-full.toml").read_text())
    table = doc
    for part in section.split("."):
        table = table[part]
    table[key] = value
    path = tmp_path / "experiment.toml"
    path.write_text(tomli_w.dumps(doc))
    with pytest.raises(ConfigError) as e:
        experiment.load(path, materialize=False)
    assert [i.key for i in e.value.issues] == [expected_key]
