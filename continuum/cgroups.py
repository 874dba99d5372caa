"""CPU quota and memory limit for a node's processes, on cgroup v1 (this
machine: hybrid, separate cpu, cpuacct and memory hierarchies) and v2 (most
users: one unified hierarchy). Which one is used is detected, never assumed,
and recorded in the manifest.

A node's cgroup is <root>/continuum/<run id>/<node>. A process joins it before
it execs (see `join`), so everything it starts is limited too. Memory limits
are hard: swap is excluded where the kernel allows (memsw / memory.swap.max),
so a process that allocates past the limit is killed by the kernel's OOM
killer and the kill is counted (`oom_kills`)."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from continuum.errors import ProviderError
from continuum.naming import CGROUP_ROOT

PERIOD_US = 100_000
V1_CONTROLLERS = ("cpu", "cpuacct", "memory")


def _mounts() -> list[tuple[str, str, set[str]]]:
    out = []
    for line in Path("/proc/mounts").read_text().splitlines():
        _, mnt, fstype, opts, *_ = line.split()
        out.append((fstype, mnt, set(opts.split(","))))
    return out


def detect() -> tuple[int, dict[str, Path]]:
    """(version, {controller: hierarchy root}) with cpu and memory available."""
    mounts = _mounts()
    for fstype, mnt, _ in mounts:
        if fstype == "cgroup2":
            ctl = Path(mnt) / "cgroup.controllers"
            if ctl.exists() and {"cpu", "memory"} <= set(ctl.read_text().split()):
                root = Path(mnt)
                return 2, {"cpu": root, "cpuacct": root, "memory": root}
    roots: dict[str, Path] = {}
    for fstype, mnt, opts in mounts:
        if fstype == "cgroup":
            for c in V1_CONTROLLERS:
                if c in opts and c not in roots:
                    roots[c] = Path(mnt)
    if all(c in roots for c in V1_CONTROLLERS):
        return 1, roots
    raise ProviderError(
        "no usable cgroup hierarchy: need cgroup v2 with the cpu and memory controllers, "
        "or cgroup v1 with cpu, cpuacct and memory mounted (see /proc/mounts)"
    )


LEAF = "rest"  # v2, a node with child cgroups: where its own processes live (cgroup v2 keeps processes in leaves)


@dataclass
class Cgroup:
    version: int
    dirs: dict[str, Path]  # controller -> this cgroup's directory
    leaf: bool = False  # v2: the node's processes join <dir>/LEAF, so that child cgroups may sit beside it

    @property
    def procs_files(self) -> list[Path]:
        """What a process joining the node writes its pid to."""
        return sorted({(d / LEAF if self.leaf else d) / "cgroup.procs" for d in self.dirs.values()})

    def pids(self) -> set[int]:
        """The node's processes, its child cgroups' too (SMEC's manager makes one per app in quota mode)."""
        out: set[int] = set()
        for f in sorted({f for d in self.dirs.values() for f in d.glob("**/cgroup.procs")}):
            try:
                out |= {int(x) for x in f.read_text().split()}
            except OSError:
                pass
        return out

    def cpu_usage_ns(self) -> int:
        if self.version == 2:
            for line in (self.dirs["cpu"] / "cpu.stat").read_text().splitlines():
                k, v = line.split()
                if k == "usage_usec":
                    return int(v) * 1000
            return 0
        return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text())

    def memory_bytes(self) -> int:
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return int((self.dirs["memory"] / name).read_text())

    def oom_kills(self) -> int:
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        for line in (self.dirs["memory"] / name).read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def sample(self) -> tuple[int, int, int]:
        """(CPU time ns, memory bytes, OOM kills): what the node sampler records."""
        return self.cpu_usage_ns(), self.memory_bytes(), self.oom_kills()

    def timed_sample(self) -> tuple[int, int, int, int]:
        """(when it was read, ns since the epoch, then `sample`): a cgroup on
        another machine answers with the time it read its files there."""
        return time.time_ns(), *self.sample()

    def kill_all(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)

    def remove(self) -> None:
        """Kill what is left inside and remove the directories (and empty parents we made)."""
        self.kill_all()
        for d in set(self.dirs.values()):
            for child in sorted((c for c in d.glob("**/*") if c.is_dir()), key=lambda c: -len(c.parts)):
                _rmdir_retry(child)
            _rmdir_retry(d)
            for parent in (d.parent, d.parent.parent):  # <run id>, continuum
                if parent.name and parent.exists() and not any(p.is_dir() for p in parent.iterdir()):
                    try:
                        parent.rmdir()
                    except OSError:
                        pass


def _rmdir_retry(d: Path, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while d.exists():
        try:
            d.rmdir()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _enable_v2_controllers(path: Path, root: Path) -> None:
    """cpu and memory must be enabled in the subtree_control of every ancestor."""
    parts = path.relative_to(root).parts
    for k in range(len(parts)):
        ctl = root.joinpath(*parts[:k]) / "cgroup.subtree_control"
        have = set(ctl.read_text().split())
        missing = [f"+{c}" for c in ("cpu", "memory") if c not in have]
        if missing:
            ctl.write_text(" ".join(missing))


def create(relative: str, cpus: float, memory_bytes: int, leaf: bool = False, period_us: int = PERIOD_US) -> Cgroup:
    """Make the cgroup and set its limits (`cpus` of quota per `period_us`, at least
    the kernel's 1 ms); raises ProviderError if the kernel refuses.
    `leaf`: the node will get child cgroups (SMEC's manager makes one per app). Under
    v2 a cgroup whose children use a controller may hold no process itself, so the
    node's own processes go into a leaf child (LEAF); v1 has no such rule."""
    version, roots = detect()
    leaf = leaf and version == 2
    dirs = {c: roots[c] / relative for c in V1_CONTROLLERS}
    quota = max(1000, round(cpus * period_us))
    try:
        for d in set(dirs.values()):
            d.mkdir(parents=True, exist_ok=True)
        if version == 2:
            _enable_v2_controllers(dirs["cpu"], roots["cpu"])
            (dirs["cpu"] / "cpu.max").write_text(f"{quota} {period_us}")
            (dirs["memory"] / "memory.max").write_text(str(memory_bytes))
            swap = dirs["memory"] / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
            if leaf:
                (dirs["cpu"] / LEAF).mkdir(exist_ok=True)
                (dirs["cpu"] / "cgroup.subtree_control").write_text("+cpu +memory")
        else:
            (dirs["cpu"] / "cpu.cfs_period_us").write_text(str(period_us))
            (dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(quota))
            (dirs["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
            memsw = dirs["memory"] / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(str(memory_bytes))
    except OSError as e:
        cg = Cgroup(version, dirs)
        try:
            cg.remove()
        except OSError:
            pass
        raise ProviderError(f"cannot set up cgroup {relative} (v{version}): {e}") from e
    return Cgroup(version, dirs, leaf)


def existing(run_id: str | None = None) -> dict[str, list[Cgroup]]:
    """Our cgroups that exist on the host now: {run id: [node cgroups]}."""
    try:
        version, roots = detect()
    except ProviderError:
        return {}
    found: dict[str, list[Cgroup]] = {}
    bases = {c: roots[c] / CGROUP_ROOT for c in V1_CONTROLLERS}
    runs = set()
    for b in set(bases.values()):
        if b.is_dir():
            runs |= {p.name for p in b.iterdir() if p.is_dir()}
    for rid in sorted(runs):
        if run_id is not None and rid != run_id:
            continue
        nodes = set()
        for b in set(bases.values()):
            if (b / rid).is_dir():
                nodes |= {p.name for p in (b / rid).iterdir() if p.is_dir()}
        found[rid] = [Cgroup(version, {c: bases[c] / rid / n for c in V1_CONTROLLERS}) for n in sorted(nodes)]
        if not nodes:
            found[rid] = [Cgroup(version, {c: bases[c] / rid for c in V1_CONTROLLERS})]
    return found


def prune(run_id: str | None = None) -> list[Path]:
    """Remove empty continuum/<run id> directories from every cgroup hierarchy,
    deepest first; returns what was removed. Docker's cgroupfs driver creates a
    container's parent path in all controllers (pids, freezer, devices, ...),
    not only the three a node's limits use."""
    removed = []
    for fstype, mnt, _ in _mounts():
        if fstype not in ("cgroup", "cgroup2"):
            continue
        base = Path(mnt) / CGROUP_ROOT
        if not base.is_dir():
            continue
        runs = [base / run_id] if run_id else [p for p in base.iterdir() if p.is_dir()]
        for run in runs:
            if not run.is_dir():
                continue
            for d in sorted((p for p in run.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [run]:
                try:
                    d.rmdir()
                    removed.append(d)
                except OSError:
                    pass
        try:
            if not any(p.is_dir() for p in base.iterdir()):
                base.rmdir()
        except OSError:
            pass
    return removed
