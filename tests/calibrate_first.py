"""`continuum calibrate FILE` run first, as a user would, for the tests that
size something other than the load from the node's service time (an SLO, a
window): the calibration of each app, read back from the session's cache,
which the test's runs then take their rates from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from continuum import calibration
from continuum import experiment


def calibrate_first(cfg: Path) -> dict[str, calibration.Calibration]:
    p = subprocess.run([sys.executable, "-m", "continuum", "calibrate", str(cfg)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    spec = experiment.load(cfg, materialize=False)
    found = calibration.from_cache(spec, spec.offload_node.name, calibration.cpu_model())
    assert found, f"continuum calibrate {cfg} left nothing in the cache: {p.stdout[-2000:]}"
    return found
