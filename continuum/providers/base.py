"""The provider interface: turn a network plan into live nodes, and find and
remove what a run left behind. Deliberately small (check, deploy, destroy):
everything else (the link, the workload, results) is the same for every
provider and lives outside it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar

from continuum import commands
from continuum.cgroups import Cgroup
from continuum.config import ExperimentSpec, NodeSpec
from continuum.network.plan import Plan

REGISTRY: dict[str, type["Provider"]] = {}


def register(cls: type["Provider"]) -> type["Provider"]:
    REGISTRY[cls.kind] = cls
    return cls


@dataclass
class Node:
    """A live node (or the ran/core infrastructure namespaces): where its
    processes run, the cgroup that limits them, its address."""

    name: str
    netns: str
    address: str | None = None
    spec: NodeSpec | None = None
    cgroup: Cgroup | None = None

    def argv(self, argv: list[str]) -> list[str]:
        return commands.in_netns(self.netns, argv)

    def run(self, argv: list[str], *, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess:
        return commands.run(self.argv(argv), check=check, timeout=timeout)

    def start(self, argv: list[str], log: Path, env: dict[str, str] | None = None, *, cwd: Path | None = None,
              contained: bool = True) -> subprocess.Popen:
        """Start a long-running process inside the node (and its cgroup), output to log.

        contained=False starts it on the host: for `docker run`, whose container
        joins the node by itself (network and cgroup)."""
        log.parent.mkdir(parents=True, exist_ok=True)
        out = open(log, "ab")
        try:
            return subprocess.Popen(
                self.argv(argv) if contained else argv,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                preexec_fn=self.cgroup.join if self.cgroup and contained else None,
                start_new_session=True,  # Ctrl-C reaches the orchestrator only; it stops children in order
            )
        finally:
            out.close()


def stop_process(p: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM, wait, then SIGKILL: the undo of Node.start."""
    if p.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        p.send_signal(signal.SIGTERM)
    try:
        p.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            p.kill()
        p.wait(grace)


@dataclass
class Deployment:
    run_id: str
    nodes: dict[str, Node] = field(default_factory=dict)  # node name, "ran", "core" -> Node
    facts: dict = field(default_factory=dict)  # recorded in the manifest (cgroup version, ...)


class Provider:
    """Base class: every method does nothing by default."""

    kind: ClassVar[str] = ""

    def check(self, spec: ExperimentSpec) -> list[str]:
        """What the host lacks for this experiment (empty when ready)."""
        return []

    def deploy(self, spec: ExperimentSpec, plan: Plan, run_id: str, undo: contextlib.ExitStack,
               say: Callable[[str], None]) -> Deployment:
        """Create the nodes and the network of the plan; register each undo on `undo` the moment it exists."""
        raise NotImplementedError

    def leftovers(self, run_id: str | None) -> list[str]:
        """Human-readable list of what exists on the host from this run (or any run)."""
        return []

    def destroy(self, run_id: str | None, say: Callable[[str], None]) -> int:
        """Remove leftovers found on the host; return how many resources were removed."""
        return 0


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, poll: float = 0.05) -> None:
    from continuum.errors import ProviderError

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise ProviderError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)
