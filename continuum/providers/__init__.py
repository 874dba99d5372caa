"""Infrastructure providers register under a kind name (`[provider] kind = ...`).
An unknown kind is a config error listing the valid ones; nothing is imported
from a string taken out of a config file."""

from __future__ import annotations

from continuum.providers.base import REGISTRY, Provider, register
from continuum.providers import netns as _netns  # noqa: F401  (registers "netns")
from continuum.providers import hosts as _hosts  # noqa: F401  (registers "hosts")
from continuum.providers import qemu as _qemu  # noqa: F401  (registers "qemu")

__all__ = ["REGISTRY", "Provider", "register"]
