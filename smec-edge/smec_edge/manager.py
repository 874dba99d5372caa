"""SMEC's edge manager daemon, `quota` mode (this project's addition: CPU
bandwidth instead of whole cores, so it works on a 2-core edge node).

It runs as root next to the server, outside the app's cgroup, and applies
policy.CpuPolicy to that cgroup's CPU quota: the server sends it each
request's budget when processing starts (a datagram on a UNIX socket,
api.EdgeTiming(manager=...)); every period it reads the cgroup's CPU usage
to tell how much of its quota the app used. Every decision is logged (t_ns,
app, units, cpus, why) for the results.

    python -m smec_edge.manager --socket S --cpu-dir D --cgroup-version 1|2 \\
        --unit-cpus 0.25 --units 1 --max-units 8 --threshold-ms 30 --log decisions.csv"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import time
from pathlib import Path

from smec_edge.policy import CpuPolicy

PERIOD_US = 100_000
APP = "app"


class Quota:
    """A cgroup's CPU quota (v1 cpu.cfs_quota_us or v2 cpu.max) and usage."""

    def __init__(self, cpu_dir: Path, version: int) -> None:
        self.dir, self.version = cpu_dir, version

    def set_cpus(self, cpus: float) -> None:
        quota = max(1000, int(cpus * PERIOD_US))
        if self.version == 2:
            (self.dir / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        else:
            (self.dir / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.dir / "cpu.cfs_quota_us").write_text(str(quota))

    def usage_ns(self) -> int:
        if self.version == 2:
            for line in (self.dir / "cpu.stat").read_text().splitlines():
                k, v = line.split()
                if k == "usage_usec":
                    return int(v) * 1000
            return 0
        return int((self.dir / "cpuacct.usage").read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--cpu-dir", required=True, type=Path)
    ap.add_argument("--cpuacct-dir", type=Path, help="v1: the cpuacct hierarchy's directory (default: --cpu-dir)")
    ap.add_argument("--cgroup-version", type=int, choices=(1, 2), required=True)
    ap.add_argument("--unit-cpus", type=float, default=0.25)
    ap.add_argument("--units", type=int, default=1)
    ap.add_argument("--max-units", type=int, required=True)
    ap.add_argument("--threshold-ms", type=float, required=True)
    ap.add_argument("--period-ms", type=float, default=100.0)
    ap.add_argument("--log", required=True)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    quota = Quota(a.cpu_dir, a.cgroup_version)
    usage = Quota(a.cpuacct_dir or a.cpu_dir, a.cgroup_version)
    policy = CpuPolicy({APP: (a.units, int(a.threshold_ms * 1e6))}, total=a.max_units)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if os.path.exists(a.socket):
        os.unlink(a.socket)
    sock.bind(a.socket)
    os.chmod(a.socket, 0o666)  # the server runs as an unprivileged user
    sock.settimeout(a.period_ms / 1000)
    with open(a.log, "w", buffering=1) as log:
        log.write("t_ns,app,units,cpus,why\n")

        def apply(why: str) -> None:
            units = policy.units()[APP]
            quota.set_cpus(units * a.unit_cpus)
            log.write(f"{time.time_ns()},{APP},{units},{units * a.unit_cpus:g},{why}\n")

        apply("start")
        last_t, last_use = time.monotonic_ns(), usage.usage_ns()
        while True:
            try:
                data = sock.recv(64)
                budget = int(data.split()[1])
                if policy.request_budget(APP, budget, time.monotonic_ns()):
                    apply(f"urgent (budget {budget / 1e6:.1f} ms)")
            except (TimeoutError, ValueError, IndexError):
                pass
            now = time.monotonic_ns()
            if now - last_t >= a.period_ms * 1e6:
                use = usage.usage_ns()
                held = policy.units()[APP] * a.unit_cpus
                busy = (use - last_use) / ((now - last_t) * held) if held else 1.0
                last_t, last_use = now, use
                if policy.utilisation(APP, busy, now):
                    apply(f"idle ({busy:.0%} of {held:g} CPUs used)")


if __name__ == "__main__":
    raise SystemExit(main())
