"""SMEC's edge manager daemon: applies policy.CpuPolicy to the applications
on the edge node, in one of two modes.

- `cores` (the paper's): each application's server holds a set of the host's
  cores, set with sched_setaffinity on every thread of the server and of the
  processes it started (ffmpeg, say).
- `quota` (this project's addition, for edge nodes with two cores): each
  application holds CPU bandwidth in steps of `--unit-cpus`. One
  application: the node's own cgroup's CPU quota (v1 cpu.cfs_quota_us or v2
  cpu.max). Several: a child cgroup per application under the node's, whose
  CPU weight (v1 cpu.shares, v2 cpu.weight) is its steps: the node's CPUs
  are shared in proportion to what each holds when they compete, and an
  application alone may use all of them. Caps would idle CPU one app leaves
  while its neighbour waits: measured on a 4-app mix on 1 CPU, 0% of SLOs
  met against 90-100% under Linux's scheduler alone. (Under v2 the node's
  own processes live in a leaf child, `rest`, which continuum makes.)

It runs as root on the host, outside the node's cgroup (its own work must not
count against what it hands out). The servers talk to it over a UNIX
datagram socket (api.EdgeTiming(manager=...)): `hello APP PID` when a server
starts, `budget APP NS` when a request's processing starts. Every period it
reads each application's CPU use to tell how much of what it holds it used.
Every decision is logged (t_ns, app, units, cpus, why) for the results.
It exits when the process that started it is gone (a run killed with -9
leaves no daemon holding cores or quota behind).

    python -m smec_edge.manager --socket S --mode cores --app ar:1:30 --app ft:1:be \\
        --max-units 2 --cores 0,1 --log decisions.csv"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import socket
import sys
import time
from collections import deque
from pathlib import Path

from smec_edge.policy import CpuPolicy
from smec_edge.unixpath import short

PERIOD_US = 100_000
TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


class Quota:
    """A cgroup's CPU quota and usage (under v1 the cpuacct directory can be another hierarchy's)."""

    def __init__(self, cpu_dir: Path, cpuacct_dir: Path, version: int, period_us: int = PERIOD_US) -> None:
        self.dir, self.acct, self.version, self.period = cpu_dir, cpuacct_dir, version, period_us

    def set_cpus(self, cpus: float) -> str:
        """The quota per the node's own CFS period (short where the node emulates slower cores);
        returns what the kernel holds now, read back (the decisions log shows it: on a VM or
        another machine, the only witness of the change there)."""
        quota = max(1000, int(cpus * self.period))
        if self.version == 2:
            (self.dir / "cpu.max").write_text(f"{quota} {self.period}")
            return "cpu.max " + (self.dir / "cpu.max").read_text().strip()
        (self.dir / "cpu.cfs_period_us").write_text(str(self.period))
        (self.dir / "cpu.cfs_quota_us").write_text(str(quota))
        return (f"cpu.cfs_quota_us {(self.dir / 'cpu.cfs_quota_us').read_text().strip()} "
                f"cpu.cfs_period_us {(self.dir / 'cpu.cfs_period_us').read_text().strip()}")

    def usage_ns(self) -> int:
        if self.version == 2:
            for line in (self.dir / "cpu.stat").read_text().splitlines():
                k, v = line.split()
                if k == "usage_usec":
                    return int(v) * 1000
            return 0
        return int((self.acct / "cpuacct.usage").read_text())


def descendants(pid: int) -> list[int]:
    """pid and every process below it (a scan of /proc: only on changes)."""
    parents: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            parents[int(d)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = [pid], [pid]
    while frontier:
        frontier = [c for c, p in parents.items() if p in frontier]
        out += frontier
    return out


def threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def process_cpu_ns(pid: int) -> int:
    """CPU time of pid and its children it waited for (utime + stime + cutime + cstime)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return sum(int(x) for x in fields[11:15]) * TICK_NS


class Cores:
    """`cores` mode: which of `available` each app's server may run on."""

    def __init__(self, available: list[int]) -> None:
        self.available = available
        self.held: dict[str, list[int]] = {}
        self.pids: dict[str, int] = {}

    def set_units(self, app: str, units: int) -> str:
        """The cores now held, and the server's affinity read back (what the kernel took)."""
        held = self.held.setdefault(app, [])
        taken = {c for a, cs in self.held.items() if a != app for c in cs}
        while len(held) < units:
            held.append(next(c for c in self.available if c not in taken and c not in held))
        del held[units:]
        self._apply(app)
        pid = self.pids.get(app)
        try:
            now = ",".join(map(str, sorted(os.sched_getaffinity(pid)))) if pid else "no server yet"
        except OSError:
            now = "server gone"
        return f"{','.join(map(str, held))}; server's affinity {now}"

    def adopt(self, app: str, pid: int) -> None:
        self.pids[app] = pid
        self._apply(app)

    def _apply(self, app: str) -> None:
        pid, cores = self.pids.get(app), self.held.get(app)
        if pid is None or not cores:
            return
        for p in descendants(pid):
            for t in threads(p):
                try:
                    os.sched_setaffinity(t, cores)
                except OSError:
                    pass  # a thread that just ended

    def usage_ns(self, app: str) -> int:
        pid = self.pids.get(app)
        return 0 if pid is None else sum(process_cpu_ns(p) for p in descendants(pid))


LEAF = "rest"  # v2: the node's own processes, beside the apps' cgroups (continuum.cgroups.LEAF)


class Quotas:
    """`quota` mode: each app's CPU quota, in its own cgroup (or the node's, for one app).
    Several apps under v2: the node's processes must already live in its LEAF
    child (continuum creates the node so), since v2 lets a cgroup whose
    children share its CPU hold no process of its own."""

    def __init__(self, cpu_dir: Path, cpuacct_dir: Path, version: int, apps: list[str], unit_cpus: float,
                 period_us: int = PERIOD_US) -> None:
        self.unit, self.version = unit_cpus, version
        self.children: list[Path] = []
        self.home = cpu_dir  # where close() gives the apps' processes back
        if len(apps) == 1:
            self.q = {apps[0]: Quota(cpu_dir, cpuacct_dir, version, period_us)}
            return
        if version == 2:
            self.home = cpu_dir / LEAF
            if not self.home.is_dir() or "cpu" not in (cpu_dir / "cgroup.subtree_control").read_text().split():
                raise SystemExit(f"quota mode for several apps under cgroup v2 needs the node's processes in {self.home} "
                                 f"and the cpu controller enabled for its children (continuum creates it so)")
        self.q = {}
        for app in apps:
            dirs = [d / f"smec-{app}" for d in dict.fromkeys((cpu_dir, cpuacct_dir))]
            for d in dirs:
                d.mkdir(exist_ok=True)
                self.children.append(d)
            self.q[app] = Quota(dirs[0], dirs[-1], version, period_us)

    def set_units(self, app: str, units: int) -> str:
        if self.children:  # a mix: weights (work-conserving), not caps; v1 shares default 1024, v2 weights 100
            weight, name = (1024 * units, "cpu.shares") if self.version == 1 else (min(10000, 100 * units), "cpu.weight")
            (self.q[app].dir / name).write_text(str(weight))
            return f"weight {weight}"
        return f"{units * self.unit:g}; kernel: {self.q[app].set_cpus(units * self.unit)}"

    def adopt(self, app: str, pid: int) -> None:
        if not self.children:
            return  # one app: it runs in the node's cgroup already
        for d in dict.fromkeys((self.q[app].dir, self.q[app].acct)):
            (d / "cgroup.procs").write_text(str(pid))  # the whole process, and what it starts later

    def usage_ns(self, app: str) -> int:
        return self.q[app].usage_ns()

    def close(self) -> None:
        """Give the apps' processes back to the node's cgroup and remove the children."""
        for d in self.children:
            try:
                pids = (d / "cgroup.procs").read_text().split()
                for pid in pids:
                    try:
                        ((self.home if self.version == 2 else d.parent) / "cgroup.procs").write_text(pid)
                    except OSError:
                        pass
                d.rmdir()
            except OSError:
                pass


def parse_app(text: str) -> tuple[str, int, int | None]:
    """NAME:UNITS:THRESHOLD_MS, or NAME:UNITS:be for a best-effort app."""
    name, units, threshold = text.split(":")
    return name, int(units), None if threshold == "be" else int(float(threshold) * 1e6)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--mode", choices=("quota", "cores"), default="quota")
    ap.add_argument("--app", action="append", type=parse_app, required=True, help="NAME:UNITS:THRESHOLD_MS or NAME:UNITS:be")
    ap.add_argument("--max-units", type=int, required=True)
    ap.add_argument("--cores", help="cores mode: the cores to hand out (default: this process's)")
    ap.add_argument("--cpu-dir", type=Path, help="quota mode: the node's cgroup (cpu controller)")
    ap.add_argument("--cpuacct-dir", type=Path, help="v1: the cpuacct hierarchy's directory (default: --cpu-dir)")
    ap.add_argument("--cgroup-version", type=int, choices=(1, 2), default=1)
    ap.add_argument("--unit-cpus", type=float, default=0.25, help="quota mode: CPUs of quota per unit (the kernel's, speed included)")
    ap.add_argument("--period-us", type=int, default=PERIOD_US, help="quota mode, one app: the node's CFS period")
    ap.add_argument("--period-ms", type=float, default=100.0)
    ap.add_argument("--window-ms", type=float, default=1000.0, help="utilisation is averaged over this long")
    ap.add_argument("--log", required=True)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = _arguments(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    apps = {name: (units, threshold) for name, units, threshold in a.app}
    # a best-effort app is never urgent: its threshold is below any budget
    policy = CpuPolicy({n: (u, -(10**18) if th is None else th) for n, (u, th) in apps.items()}, total=a.max_units)
    holder: Cores | Quotas
    if a.mode == "cores":
        cores = [int(c) for c in a.cores.split(",")] if a.cores else sorted(os.sched_getaffinity(0))
        if len(cores) < a.max_units:
            raise SystemExit(f"{a.max_units} cores to hand out, {len(cores)} available ({cores})")
        holder = Cores(cores[: a.max_units])
    else:
        if a.cpu_dir is None:
            raise SystemExit("quota mode needs --cpu-dir")
        holder = Quotas(a.cpu_dir, a.cpuacct_dir or a.cpu_dir, a.cgroup_version, list(apps), a.unit_cpus, a.period_us)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if os.path.exists(a.socket):
        os.unlink(a.socket)
    sock.bind(short(a.socket))  # a deep run folder makes a path too long for a socket address
    os.chmod(a.socket, 0o666)  # the servers run as an unprivileged user
    sock.settimeout(a.period_ms / 1000 / 4)
    try:
        with open(a.log, "w", buffering=1, newline="") as f:
            log = csv.writer(f)
            log.writerow(["t_ns", "app", "units", "cpus", "why"])

            def apply(app: str, why: str) -> None:
                units = policy.units()[app]
                held = holder.set_units(app, units)
                cpus = units * a.unit_cpus if a.mode == "quota" else units
                log.writerow([time.time_ns(), app, units, f"{cpus:g}", f"{why} [{a.mode} {held}]"])

            for app in apps:
                apply(app, "start")
            # utilisation is averaged over the last `window` (requests of tens of ms make 100-ms samples all or nothing)
            last_t = time.monotonic_ns()
            samples = {app: deque([(last_t, holder.usage_ns(app))]) for app in apps}
            parent = os.getppid()
            while True:
                try:
                    kind, app, value = sock.recv(128).decode().split()
                    if app in apps and kind == "hello":
                        holder.adopt(app, int(value))
                        samples[app] = deque([(time.monotonic_ns(), holder.usage_ns(app))])
                        log.writerow([time.time_ns(), app, policy.units()[app], "", f"server pid {value} adopted"])
                        if a.mode == "cores":
                            apply(app, "placed")
                    elif app in apps and kind == "budget" and policy.request_budget(app, int(value), time.monotonic_ns()):
                        apply(app, f"urgent (budget {int(value) / 1e6:.1f} ms)")
                except (TimeoutError, ValueError, UnicodeDecodeError):
                    pass
                now = time.monotonic_ns()
                if now - last_t < a.period_ms * 1e6:
                    continue
                if os.getppid() != parent:  # whoever started us is gone (a crashed run): nothing is left to manage
                    log.writerow([time.time_ns(), "", "", "", f"parent {parent} gone: exiting"])
                    break
                for app in apps:
                    window = samples[app]
                    window.append((now, holder.usage_ns(app)))
                    while now - window[0][0] > a.window_ms * 1e6:
                        window.popleft()
                    t0, use0 = window[0]
                    if now - t0 < a.window_ms * 1e6 / 2:
                        continue  # too little history yet
                    held_cpus = policy.units()[app] * (a.unit_cpus if a.mode == "quota" else 1)
                    busy = (window[-1][1] - use0) / ((now - t0) * held_cpus)
                    if policy.utilisation(app, busy, now):
                        apply(app, f"idle ({busy:.0%} of {held_cpus:g} CPUs used)")
                last_t = now
    finally:
        if isinstance(holder, Quotas):
            holder.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
