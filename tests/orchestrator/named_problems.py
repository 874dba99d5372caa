"""Every problem an experiment file's load names, by key: the tests of one section's checks read them here."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuum import experiment
from continuum.errors import ConfigError


def problems(path: Path) -> dict[str, str]:
    """The load must fail; each problem's message by its key."""
    with pytest.raises(ConfigError) as e:
        experiment.load(path, materialize=False)
    return {i.key: i.message for i in e.value.issues}
