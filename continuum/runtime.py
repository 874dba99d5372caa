"""Live nodes and their processes, the same for every provider: a Node is
where a process runs (network namespace, cgroup, address), `Node.start`
starts one through the exec wrapper (continuum/node_exec.py), and
`stop_process` is its undo."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from continuum import commands
from continuum.cgroups import Cgroup
from continuum.errors import ProviderError

NODE_EXEC = Path(__file__).with_name("node_exec.py")


@dataclass(frozen=True)
class Sandbox:
    """Whom a workload process runs as and the paths it reaches: `rw` paths
    writable (its results), `ro` readable (code, models); see node_exec.py."""

    user: str
    ro: tuple[Path, ...] = ()
    rw: tuple[Path, ...] = ()

    def args(self) -> list[str]:
        return ["--user", self.user, *(a for p in self.ro for a in ("--ro", str(p))),
                *(a for p in self.rw for a in ("--rw", str(p)))]


def wrapped(argv: Sequence[str], *, netns: str | None = None, cgroup: Cgroup | None = None,
            sandbox: Sandbox | None = None, cwd: Path | None = None) -> list[str]:
    """argv started through the exec wrapper (continuum/node_exec.py)."""
    wrapper = [sys.executable, "-I", "-S", str(NODE_EXEC)]
    if netns is not None:
        wrapper += ["--netns", netns]
    for f in (cgroup.procs_files if cgroup else []):
        wrapper += ["--cgroup-procs", str(f)]
    if sandbox is not None:
        wrapper += sandbox.args()
    if cwd is not None:
        wrapper += ["--chdir", str(cwd)]
    return [*wrapper, "--", *argv]


@dataclass
class Node:
    """A live node (or the ran/core infrastructure namespaces): where its
    processes run, the cgroup that limits them, its address."""

    name: str
    netns: str
    address: str | None = None
    cgroup: Cgroup | None = None

    def argv(self, argv: list[str]) -> list[str]:
        return commands.in_netns(self.netns, argv)

    def run(self, argv: list[str], *, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess:
        return commands.run(self.argv(argv), check=check, timeout=timeout)

    def exec_argv(self, argv: Sequence[str], sandbox: Sandbox | None = None, cwd: Path | None = None) -> list[str]:
        """argv inside the node: the wrapper joins its cgroup, enters its
        namespace (and, with a sandbox, drops root), then execs argv."""
        return wrapped(argv, netns=self.netns, cgroup=self.cgroup, sandbox=sandbox, cwd=cwd)

    def start(self, argv: list[str], log: Path, env: dict[str, str] | None = None, *, cwd: Path | None = None,
              contained: bool = True, sandbox: Sandbox | None = None) -> subprocess.Popen:
        """Start a long-running process inside the node (and its cgroup), output to log.

        contained=False starts it on the host: for `docker run`, whose container
        joins the node by itself (network and cgroup)."""
        log.parent.mkdir(parents=True, exist_ok=True)
        out = open(log, "ab")
        try:
            return subprocess.Popen(
                self.exec_argv(argv, sandbox, cwd) if contained else argv,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
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


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, poll: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise ProviderError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)
