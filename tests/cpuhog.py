"""A competing CPU hog for the load-sensitive tests (issue #36): one process
spinning on one core for as long as a test needs it, so a test can show its
behaviour holds on a busier machine, not only on this one idle. The hog is
pinned to the last core (the emulator and the nodes may run anywhere), and
started before the run it competes with, calibration included: the loads
stated as utilisation are then measured against what the busier machine
can serve, which is the point."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from typing import Iterator


@contextlib.contextmanager
def cpu_hog(core: int | None = None) -> Iterator[subprocess.Popen]:
    cores = sorted(os.sched_getaffinity(0))
    core = cores[-1] if core is None else core
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
    try:
        os.sched_setaffinity(proc.pid, {core})
        # spinning: its CPU time grows as fast as the wall clock (a hog that is not running tests nothing)
        t0, c0 = time.monotonic(), _cpu_s(proc.pid)
        while time.monotonic() - t0 < 0.3:
            time.sleep(0.05)
        share = (_cpu_s(proc.pid) - c0) / (time.monotonic() - t0)
        assert share > 0.5, f"the CPU hog got {share:.0%} of a core: it is not competing"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _cpu_s(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
