"""Live tests that cost more than the test command's 20 minutes leave on the
project's 2-core machine: they skip, saying so, unless CONTINUUM_TEST_SLOW=1
(tests/README.md lists them, what each costs and what covers its claim in
the test command)."""

from __future__ import annotations

import os

import pytest

SLOW = os.environ.get("CONTINUUM_TEST_SLOW") == "1"


def only_slow(cost: str) -> pytest.MarkDecorator:
    """Skip unless CONTINUUM_TEST_SLOW=1; `cost` says what the test takes."""
    return pytest.mark.skipif(not SLOW, reason=f"{cost}: outside the test command's budget; "
                                               "CONTINUUM_TEST_SLOW=1 runs it (tests/README.md)")
