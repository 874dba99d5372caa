"""Machines reached over SSH (the hosts and qemu providers): run a command,
start a long-running one, copy files to and from the same absolute paths.

Why the same paths: the rest of continuum writes a run's configs and reads
its records under the run folder. Each machine gets the run folder at the
same path, the configs are pushed before a process needs them and the
records pulled back before the results are built, so the code that writes
and reads them does not change with the provider.

One SSH master connection per machine (ControlMaster) carries every command
of a run: a command costs a round trip, not a handshake. A started process
writes its PID to a file first, so stopping it signals the process on the
machine (SIGTERM lets a workload write its records), not just the local ssh
client."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from continuum import commands
from continuum.errors import CommandError, ProviderError

CONTROL_DIR = Path("/run/continuum/ssh")
PIDS = "/run/continuum/pids"  # on the machine: a started process's pid (nodeside/hostside.py PIDS)


@dataclass(frozen=True)
class SshHost:
    """One machine: where to reach it and where continuum's files are on it
    (`root`, as the playbooks' continuum_root puts them)."""

    name: str
    address: str
    user: str = "root"
    port: int = 22
    key: str | None = None
    known_hosts: Path | None = None  # None: the user's own (~/.ssh/known_hosts, strict)
    root: str = "/opt/continuum"
    options: tuple[str, ...] = field(default=())

    @property
    def target(self) -> str:
        return f"{self.user}@{self.address}"

    def ssh_options(self) -> list[str]:
        CONTROL_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
        opts = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
                "-o", "ServerAliveCountMax=3", "-o", "ControlMaster=auto",
                "-o", f"ControlPath={CONTROL_DIR}/%C", "-o", "ControlPersist=120", "-p", str(self.port)]
        if self.known_hosts is not None:
            # A per-run file, trusted on first use: for machines made for the run (VMs, test containers).
            opts += ["-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=accept-new"]
        if self.key:
            opts += ["-i", str(Path(self.key).expanduser()), "-o", "IdentitiesOnly=yes"]
        return opts + list(self.options)

    def ssh_argv(self, remote: str) -> list[str]:
        return ["ssh", *self.ssh_options(), self.target, remote]

    # --- commands -----------------------------------------------------------

    def run(self, argv: Sequence[str], *, check: bool = True, timeout: float = 60.0,
            input: str | None = None) -> subprocess.CompletedProcess:
        """argv on the machine (quoted, no shell on our side)."""
        cmd = self.ssh_argv(shlex.join(argv))
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input,
                               stdin=None if input is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise CommandError(cmd, -1, f"timed out after {timeout:.0f} s on {self.name}") from e
        if p.returncode == 255 and not p.stdout and _ssh_failed(p.stderr):
            raise ProviderError(f"cannot reach {self.name} ({self.target} port {self.port}) over SSH: "
                                f"{p.stderr.strip().splitlines()[-1] if p.stderr.strip() else 'no answer'}")
        if check and p.returncode != 0:
            raise CommandError([f"[{self.name}]", *argv], p.returncode, p.stderr)
        return p

    def reachable(self) -> str | None:
        """None when a command runs there as root (or via sudo-less root); else why not."""
        try:
            p = self.run(["id", "-u"], check=False, timeout=20)
        except ProviderError as e:
            return str(e)
        except CommandError as e:
            return f"{self.name}: {e.stderr or e}"
        if p.returncode != 0:
            return f"{self.name}: `id -u` failed: {p.stderr.strip()}"
        if p.stdout.strip() != "0":
            return (f"{self.name}: logged in as {self.user}, who is not root; continuum creates namespaces and cgroups "
                    "there: use a root login (user = \"root\")")
        return None

    def start(self, argv: Sequence[str], log: Path, env: dict[str, str] | None = None,
              cwd: str | None = None) -> "RemoteProcess":
        """A long-running process on the machine; its output goes to the local `log`."""
        pidfile = f"{PIDS}/{os.getpid()}-{time.monotonic_ns()}"
        envs = " ".join(shlex.quote(f"{k}={v}") for k, v in (env or {}).items())
        # The process runs as the shell's child, not exec'd: a process killed by a signal ends
        # sshd's session with an exit signal, which ssh reports as its own 255 with nothing said
        # (a guest without AVX killed TensorFlow's server so: an empty log, "exited (255)").
        # The shell reports the signal into the log and exits 128 + its number (RemoteProcess).
        # Its pid file goes when it ends, and the folder with the last one (hostside.py destroy may
        # have run meanwhile); a start that meets that removal makes the folder again.
        body = ((f"cd {shlex.quote(cwd)} && " if cwd else "")
                + "{ " + (f"env {envs} " if envs else "") + shlex.join(argv)
                + f" & until {{ mkdir -p {PIDS} && echo $! > {pidfile}; }} 2>/dev/null; do sleep 0.01; done; wait $!; rc=$?; "
                + f"rm -f {pidfile}; rmdir {PIDS} {PIDS.rsplit('/', 1)[0]} 2>/dev/null; "
                + 'if [ $rc -gt 128 ] && [ $rc -ne 143 ]; then echo "continuum: the process was killed by SIG$(kill -l $rc) '
                + f'on {self.name}" >&2; fi; exit $rc; }}')
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            local = subprocess.Popen(self.ssh_argv(f"sh -c {shlex.quote(body)}"), stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        return RemoteProcess(self, local, pidfile)

    # --- files --------------------------------------------------------------

    def read_text(self, path: Path | str) -> str:
        p = self.run(["cat", str(path)], check=False, timeout=30)
        if p.returncode != 0:
            raise FileNotFoundError(f"{self.name}:{path}")
        return p.stdout

    def exists(self, path: Path | str) -> bool:
        return self.run(["test", "-e", str(path)], check=False, timeout=30).returncode == 0

    def _rsync_ssh(self) -> str:
        return shlex.join(["ssh", *self.ssh_options()])

    def push(self, paths: Sequence[Path], timeout: float = 300.0) -> None:
        """Copy files or folders to the same absolute paths on the machine."""
        paths = [p for p in paths if p.exists()]
        if not paths:
            return
        self.run(["mkdir", "-p", *sorted({str(p.parent) for p in paths})])
        cmd = ["rsync", "-a", "--relative", "-e", self._rsync_ssh(), *[str(p) for p in paths], f"{self.target}:/"]
        commands.run(cmd, timeout=timeout)

    def pull(self, folder: Path, timeout: float = 600.0) -> None:
        """Copy a folder's contents back from the same path on the machine
        (files there add to or replace files here; nothing here is deleted)."""
        if not self.exists(folder):
            return
        folder.mkdir(parents=True, exist_ok=True)
        commands.run(["rsync", "-a", "--no-owner", "--no-group", "--no-specials", "--no-devices", "-e", self._rsync_ssh(), f"{self.target}:{folder}/", f"{folder}/"],
                     timeout=timeout)

    def close(self) -> None:
        """End the master connection (the undo of the first command)."""
        subprocess.run(["ssh", *self.ssh_options(), "-O", "exit", self.target], capture_output=True, timeout=10)


def _ssh_failed(stderr: str) -> bool:
    s = stderr.lower()
    return any(k in s for k in ("connection refused", "connection timed out", "no route to host", "permission denied",
                                "could not resolve", "host key verification failed", "connection closed",
                                "operation timed out", "network is unreachable"))


class RemoteProcess:
    """A process on a machine, with the part of subprocess.Popen's interface
    continuum uses (poll, wait, send_signal, terminate, kill, returncode)."""

    def __init__(self, host: SshHost, local: subprocess.Popen, pidfile: str):
        self.host, self.local, self.pidfile = host, local, pidfile
        self.pid = local.pid

    @property
    def returncode(self) -> int | None:
        """Popen's convention: -N when the process there was killed by signal N (its shell exits 128 + N)."""
        rc = self.local.returncode
        return 128 - rc if rc is not None and 128 < rc < 128 + 65 else rc

    @property
    def args(self):
        return self.local.args

    def poll(self) -> int | None:
        self.local.poll()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self.local.wait(timeout)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.local.poll() is not None:
            return
        try:
            self.host.run(["sh", "-c", f"test -f {self.pidfile} && kill -{int(sig)} $(cat {self.pidfile})"],
                          check=False, timeout=15)
        except (ProviderError, CommandError):
            pass  # the machine is gone: ending the local client below is all that is left
        if sig == signal.SIGKILL:
            with contextlib.suppress(ProcessLookupError):
                self.local.kill()

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
