"""CUDA MPS for SMEC's GPU path across applications.

Stream priorities order work inside one CUDA context. Each app's server is
its own process with its own context, and the driver time-slices between
contexts, so one app's urgent stream cannot overtake another app's kernels:
measured on an H100, an urgent AR request behind a neighbour process took
the same 1.15 s at either priority. Under MPS the processes share one
context and the priorities apply across them (2330 ms -> 96 ms median):
experiments/smec/gpu/gpu_streams.py, results in docs/smec.md. SMEC runs its apps
under MPS for this reason.

The control daemon is ours: its pipe and log folder is private to the run,
so it neither joins nor disturbs an MPS daemon someone else runs, and
`leftovers` finds ours after a crash by that folder's name (and the run's
id, written in it as `owner`)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

CONTROL = "nvidia-cuda-mps-control"
MARK = "continuum-mps"  # the folder name that says a daemon is ours
MAX_PIPE_PATH = 90  # unix socket paths are at most 107 bytes; MPS adds its own file names


def unavailable() -> str | None:
    """Why MPS cannot run here, or None when it can."""
    if shutil.which(CONTROL) is None:
        return f"{CONTROL} is not installed"
    if not Path("/dev/nvidiactl").exists():
        return "no NVIDIA GPU (/dev/nvidiactl is missing)"
    return None


class Mps:
    """One MPS control daemon with its pipes in `folder` (made here; its name
    must contain MARK); processes with `env` in their environment share its
    context."""

    def __init__(self, folder: Path) -> None:
        if MARK not in folder.name:
            raise ValueError(f"the MPS folder's name must contain {MARK!r}: {folder}")
        if len(str(folder)) > MAX_PIPE_PATH:
            raise ValueError(f"the MPS pipe folder's path is too long for a unix socket ({len(str(folder))} > "
                             f"{MAX_PIPE_PATH} characters): {folder}")
        self.folder = folder
        self.env = {"CUDA_MPS_PIPE_DIRECTORY": str(folder), "CUDA_MPS_LOG_DIRECTORY": str(folder)}

    def start(self, owner: str = "", timeout_s: float = 20) -> None:
        why = unavailable()
        if why:
            raise RuntimeError(f"MPS cannot start: {why}")
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "owner").write_text(owner)
        self.folder.chmod(0o755)  # servers run as an unprivileged user; root owns the daemon
        r = subprocess.run([CONTROL, "-d"], env={**os.environ, **self.env}, capture_output=True, text=True, timeout=timeout_s)
        if r.returncode != 0:
            raise RuntimeError(f"{CONTROL} -d failed ({r.returncode}): {(r.stderr or r.stdout).strip()}")
        deadline = time.monotonic() + timeout_s
        while not (self.folder / "control").exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"MPS did not open its control pipe in {self.folder} within {timeout_s:g} s; see control.log there")
            time.sleep(0.05)

    def ask(self, command: str) -> str:
        """A command to the control daemon (e.g. get_server_list); its answer."""
        r = subprocess.run([CONTROL], input=command + "\n", env={**os.environ, **self.env}, capture_output=True, text=True, timeout=30)
        return r.stdout.strip()

    def stop(self) -> None:
        """Quit the daemon and its server; safe to call twice or after a failed start."""
        if (self.folder / "control").exists():
            self.ask("quit")
            deadline = time.monotonic() + 20
            while _daemons(self.folder) and time.monotonic() < deadline:
                time.sleep(0.1)
        for pid in _daemons(self.folder):
            _kill(pid)
        for f in self.folder.glob("*") if self.folder.is_dir() else ():
            if stat.S_ISSOCK(f.lstat().st_mode):  # its pipes; the logs stay, with the run's results
                f.unlink()

    def __enter__(self) -> "Mps":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _daemons(folder: Path | None = None) -> list[int]:
    """PIDs of MPS control daemons and servers whose pipe folder is ours
    (`folder`, or any with MARK in its name)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if not (d / "comm").read_text().startswith("nvidia-cuda-mps"):
                continue
            env = dict(v.split("=", 1) for v in (d / "environ").read_text().split("\0") if "=" in v)
        except OSError:
            continue
        pipe = env.get("CUDA_MPS_PIPE_DIRECTORY", "")
        if (folder is not None and pipe == str(folder)) or (folder is None and MARK in Path(pipe).name):
            found.append(int(d.name))
    return found


def _kill(pid: int) -> None:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


def leftovers(run_id: str | None) -> list[Path]:
    """Pipe folders of our MPS daemons still running (of one run, or all), for
    `continuum destroy`; Mps(folder).stop() ends each."""
    folders = set()
    for pid in _daemons():
        try:
            env = dict(v.split("=", 1) for v in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in v)
        except OSError:
            continue
        folder = Path(env["CUDA_MPS_PIPE_DIRECTORY"])
        try:
            owner = (folder / "owner").read_text()
        except OSError:
            owner = ""
        if run_id is None or run_id == owner:
            folders.add(folder)
    return sorted(folders)
