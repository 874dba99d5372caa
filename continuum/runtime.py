"""Live nodes and their processes, the same for every provider: a Node is
where a process runs (network namespace, cgroup, address), `Node.start`
starts one through the exec wrapper (continuum/nodeside/node_exec.py), and
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
from typing import TYPE_CHECKING, Callable, Sequence

from continuum import REPO, commands
from continuum.cgroups import Cgroup
from continuum.errors import ProviderError

if TYPE_CHECKING:
    from continuum.engines.k3s import Cluster
    from continuum.remote import SshHost

NODE_EXEC = Path(__file__).with_name("nodeside") / "node_exec.py"
# Process-mode workloads (built-in and bring-your-own) run as this user unless
# the experiment file sets workload.run_as_root; see continuum/nodeside/node_exec.py.
WORKLOAD_USER = "nobody"


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
            sandbox: Sandbox | None = None, cwd: Path | None = None, python: str = sys.executable,
            node_exec: Path = NODE_EXEC) -> list[str]:
    """argv started through the exec wrapper (continuum/nodeside/node_exec.py)."""
    wrapper = [python, "-I", "-S", str(node_exec)]
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
    processes run, the cgroup that limits them, its address, and the
    machine it is on (None: this one; else one reached over SSH, whose
    continuum code and environment are where the playbooks put them)."""

    name: str
    netns: str  # "": the machine's own network (a VM)
    address: str | None = None
    cgroup: Cgroup | None = None
    host: SshHost | None = None
    cluster: Cluster | None = None  # engine k3s: its container workloads run as pods of this cluster
    # how long its servers may take to load their models: a TCG guest runs them tens of times slower
    load_timeout_s: float = 300.0

    @property
    def python(self) -> str:
        """The Python that runs continuum's code on the node's machine."""
        return sys.executable if self.host is None else f"{self.host.root}/venv/bin/python"

    @property
    def repo(self) -> Path:
        """The checkout (continuum/, workloads/, smec-edge/) on the node's machine."""
        return REPO if self.host is None else Path(self.host.root) / "src"

    def argv(self, argv: list[str]) -> list[str]:
        return commands.in_netns(self.netns, argv) if self.netns else list(argv)

    def run(self, argv: list[str], *, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess:
        if self.host is not None:
            return self.host.run(self.argv(argv), check=check, timeout=timeout)
        return commands.run(self.argv(argv), check=check, timeout=timeout)

    def exec_argv(self, argv: Sequence[str], sandbox: Sandbox | None = None, cwd: Path | None = None) -> list[str]:
        """argv inside the node: the wrapper joins its cgroup, enters its
        namespace (and, with a sandbox, drops root), then execs argv."""
        return wrapped(argv, netns=self.netns or None, cgroup=self.cgroup, sandbox=sandbox, cwd=cwd, python=self.python,
                       node_exec=self.repo / "continuum" / "nodeside" / "node_exec.py")

    def start(self, argv: list[str], log: Path, env: dict[str, str] | None = None, *, cwd: Path | None = None,
              contained: bool = True, sandbox: Sandbox | None = None) -> subprocess.Popen:
        """Start a long-running process inside the node (and its cgroup), output to log.

        contained=False starts it on the host: for `docker run`, whose container
        joins the node by itself (network and cgroup)."""
        log.parent.mkdir(parents=True, exist_ok=True)
        if self.host is not None:
            # Popen's interface, for a process on another machine (continuum/remote.py)
            return self.host.start(self.exec_argv(argv, sandbox, cwd) if contained else argv, log, env,  # type: ignore[return-value]
                                   cwd=str(cwd) if cwd else None)
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

    def exists(self, path: Path) -> bool:
        """Whether a file is there on the node's machine."""
        return path.exists() if self.host is None else self.host.exists(path)

    def read_text(self, path: Path) -> str:
        """A file the node's processes wrote (on its machine)."""
        return path.read_text() if self.host is None else self.host.read_text(path)

    def push(self, paths: Sequence[Path]) -> None:
        """Files the node's processes will read, to the same paths on its machine (nothing to do on this one)."""
        if self.host is not None:
            self.host.push(paths)


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


def stop_processes(procs: list[subprocess.Popen], grace: float = 5.0) -> None:
    """stop_process for several at once: SIGTERM to all, one shared grace, then SIGKILL
    (programs that each take seconds to stop, such as srsRAN's, stop side by side)."""
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
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


def exit_status(code: int | None) -> str:
    """A process's end for an error line: its status, or the signal that killed it (and
    what that usually means where it is not obvious)."""
    if code is None or code >= 0:
        return f"status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"
    why = {"SIGILL": ": an instruction this CPU lacks (on a QEMU guest, the VM's CPU model; [provider] vm_cpu)",
           "SIGKILL": ": killed from outside, often by the kernel's OOM killer (the node's memory limit)",
           "SIGSEGV": ": a crash in native code", "SIGBUS": ": a crash in native code"}.get(name, "")
    return f"killed by {name}{why}"


def start_node_daemon(node: Node, module: str, args: list[str], code: Sequence[str], log: Path, ready: Path,
                      title: str) -> subprocess.Popen:
    """The node_daemon verb (continuum/config/edge.py): an edge system's root daemon
    (`python -m module args`) on the machine of `node`, outside the node's cgroup and
    network namespace, which it manages through files there (cgroups, a unix socket in
    raw/: the run folder has one path on every machine). This machine for netns; the
    VM itself for qemu; the node's machine for hosts, with the code the playbooks copied
    (`code`: the repository's folders it imports beside continuum/)."""
    if node.host is None:
        return start_daemon([sys.executable, "-m", module, *args], log, ready, title)
    path = os.pathsep.join((str(node.repo), *(str(node.repo / c) for c in code)))
    proc = node.host.start([node.python, "-m", module, *args], log, {"PYTHONPATH": path})
    host = node.host

    def listening() -> bool:
        if proc.poll() is not None:
            raise ProviderError(f"{title} on {host.name} exited ({exit_status(proc.returncode)}); see {log}")
        return host.exists(ready)

    # A TCG guest imports the daemon's modules in seconds; each check is an SSH round trip
    wait_for(listening, 120, f"{title} on {host.name}", poll=0.3)
    return proc  # type: ignore[return-value]  # RemoteProcess: Popen's interface for a process there


def start_daemon(argv: list[str], log: Path, ready: Path, title: str, timeout: float = 15.0) -> subprocess.Popen:
    """A root daemon beside the nodes (an edge system's manager or agent): on this
    machine, in its own session, outside every node's cgroup (its own work must not
    count against what it manages); running and listening (`ready` exists) when this
    returns, else a ProviderError that points at its log."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def listening() -> bool:
        if proc.poll() is not None:
            raise ProviderError(f"{title} exited ({exit_status(proc.returncode)}); see {log}")
        return ready.exists()

    wait_for(listening, timeout, title)
    return proc
