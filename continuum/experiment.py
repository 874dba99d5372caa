"""An experiment file loaded with what the file's model cannot know by itself:
the registered providers' kinds and the registered edge systems, each of
which owns its [edge.*] table. Every command that reads a file goes through here."""

from __future__ import annotations

import os

from continuum.config import ExperimentSpec
from continuum.config import resolve
from continuum.edge.registry import SYSTEMS
from continuum.providers import REGISTRY as PROVIDERS


def load(path: str | os.PathLike, materialize: bool = True, provider: str | None = None,
         text: str | None = None) -> ExperimentSpec:
    """Parse, validate and resolve; raises ConfigError listing every problem (continuum/config/resolve.py).
    `provider`: [provider] kind in place of the file's (`continuum run --provider`); `text`: the file's
    text in place of what `path` holds (a campaign's point), its paths still relative to `path`'s folder."""
    return resolve.load(path, materialize, providers=PROVIDERS, systems=list(SYSTEMS.values()), provider=provider,
                        text=text)
