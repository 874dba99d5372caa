"""A load- or rate-sensitive test's premise (an offered load, an overload, a
contention, a number of events), checked and recorded in one call.

A premise that does not hold fails the test, naming what was measured and
against what: a test never passes without its premise. With
CONTINUUM_PREMISE_LOG set (tests/stress.py --repeat sets it), each check is
also appended to that file as one JSON line, so many runs can be tabulated:
how much margin each premise has on this machine (issue #59)."""

from __future__ import annotations

import json
import os


def premise(name: str, value: float, threshold: float, *, at_most: bool = False, detail: object = "") -> float:
    """Assert `value >= threshold` (`<=` with at_most) and log it; returns the value's margin as a ratio
    (value / threshold, or threshold / value with at_most: > 1 is held)."""
    held = value <= threshold if at_most else value >= threshold
    if at_most:
        margin = threshold / value if value > 0 else float("inf")
    else:
        margin = value / threshold if threshold > 0 else float("inf")
    log = os.environ.get("CONTINUUM_PREMISE_LOG")
    if log:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
        with open(log, "a") as f:
            f.write(json.dumps({"test": test, "premise": name, "value": value, "threshold": threshold,
                                "at_most": at_most, "held": held, "margin": margin}) + "\n")
    assert held, (f"premise '{name}' does not hold: measured {value:.4g}, needs {'<=' if at_most else '>='} {threshold:.4g}"
                  + (f"; {detail}" if detail != "" else ""))
    return margin
