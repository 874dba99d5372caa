"""The provider interface: turn a network plan into live nodes, and find and
remove what a run left behind. Deliberately small (check, deploy, destroy):
everything else (the link, the workload, results) is the same for every
provider and lives outside it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar

from continuum.network.plan import Plan
from continuum.runtime import Node

if TYPE_CHECKING:
    from continuum.config import ExperimentSpec

REGISTRY: dict[str, type["Provider"]] = {}


def register(cls: type["Provider"]) -> type["Provider"]:
    REGISTRY[cls.kind] = cls
    return cls


@dataclass
class Deployment:
    run_id: str
    nodes: dict[str, Node] = field(default_factory=dict)  # node name, "ran", "core" -> Node
    facts: dict = field(default_factory=dict)  # recorded in the manifest (cgroup version, ...)


class Provider:
    """Base class: every method does nothing by default."""

    kind: ClassVar[str] = ""
    # The node verbs it implements for edge systems (continuum/config/edge.py PROVIDER_VERBS):
    # a system that needs one it lacks is refused before anything is built.
    node_verbs: ClassVar[frozenset[str]] = frozenset()

    def check(self, spec: ExperimentSpec) -> list[str]:
        """What the host lacks for this experiment (empty when ready)."""
        return []

    def deploy(self, plan: Plan, run_id: str, undo: contextlib.ExitStack, say: Callable[[str], None]) -> Deployment:
        """Create the nodes and the network of the plan (the plan is the whole
        recipe); register each undo on `undo` the moment it exists."""
        raise NotImplementedError

    def provision(self, plan: Plan, run_id: str, logs: Path, undo: contextlib.ExitStack,
                  say: Callable[[str], None]) -> dict:
        """Get the machines the plan names ready before deploy (install what
        the nodes run); returns facts for the manifest. Nothing to do for
        nodes on this machine."""
        return {}

    def share_run_folder(self, plan: Plan, dep: Deployment, run_dir: Path, undo: contextlib.ExitStack,
                         say: Callable[[str], None]) -> None:
        """Make the run folder usable by the nodes' processes wherever they
        run, and register how what they write comes back (nothing to do when
        the nodes are on this machine)."""

    def leftovers(self, run_id: str | None) -> list[str]:
        """Human-readable list of what exists on the host from this run (or any run)."""
        return []

    def destroy(self, run_id: str | None, say: Callable[[str], None]) -> int:
        """Remove leftovers found on the host; return how many resources were removed."""
        return 0
