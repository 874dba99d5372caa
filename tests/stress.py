"""The load-sensitive tests under a harder machine (issue #36), from the
test command's environment: CONTINUUM_TEST_STRESS=hog runs a CPU hog
pinned to one core for the whole pytest session (calibrations included,
so loads stated as utilisation are measured against the busier machine),
and CONTINUUM_TEST_STRESS=half-speed emulates the edge's cores at half
speed (`speed = 0.5` on [nodes.edge]: a short CFS period, each request
stretched twice). Meant for the files tests/README.md lists as
load-sensitive, which must pass the same way idle, under the hog and at
half speed:

    CONTINUUM_TEST_STRESS=half-speed .venv/bin/python -m pytest tests/smec_edge/test_mix_live.py
"""

from __future__ import annotations

import os
import re

STRESSES = ("", "hog", "half-speed")
STRESS = os.environ.get("CONTINUUM_TEST_STRESS", "")
if STRESS not in STRESSES:
    raise SystemExit(f"CONTINUUM_TEST_STRESS={STRESS!r}: valid are {', '.join(repr(s) for s in STRESSES)}")


def edge_config(text: str) -> str:
    """An experiment file's text with the stress applied: at half-speed, the edge node's cores at speed 0.5
    (its CPU share stays what the file says: the kernel's quota is cpus x speed, so the node also serves half
    as much, which the calibration measures). A file that sets its own speed is left as it is."""
    if STRESS != "half-speed" or re.search(r"(?m)^speed\s*=", text):
        return text
    if not re.search(r"(?m)^\[nodes\.edge\]$", text):
        raise AssertionError("CONTINUUM_TEST_STRESS=half-speed: this test's experiment file has no [nodes.edge] to slow down")
    return re.sub(r"(?m)^\[nodes\.edge\]$", "[nodes.edge]\nspeed = 0.5", text, count=1)


def node_cgroup(cpus: float) -> tuple[float, int]:
    """(quota in CPUs, CFS period in us) for a node cgroup a test makes itself: at half-speed the quota is
    halved over the short period that `speed = 0.5` uses, as continuum gives a node at that speed."""
    from continuum.cgroups import PERIOD_US
    from continuum.config.spec import SPEED_PERIOD_US

    return (cpus * 0.5, SPEED_PERIOD_US) if STRESS == "half-speed" else (cpus, PERIOD_US)
