"""Node limits are enforced by the kernel: a busy loop in a 0.5-CPU node gets
about half a core; a process allocating past a node's memory limit is killed
by the OOM killer (the documented behaviour) and the kill is counted."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from continuum import cgroups
from continuum.runtime import wait_for, wrapped  # how node processes join their cgroup

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="cgroup limits need root")


@pytest.fixture
def cgroup_factory():
    made = []

    def make(name: str, cpus: float, memory: int) -> cgroups.Cgroup:
        cg = cgroups.create(f"continuum/test{os.getpid()}/{name}", cpus, memory)
        made.append(cg)
        return cg

    yield make
    for cg in made:
        cg.remove()


def busy_loop_cores(cg: cgroups.Cgroup, seconds: float) -> float:
    """Cores a busy loop inside cg gets, measured by the cgroup's own CPU accounting."""
    p = subprocess.Popen(wrapped([sys.executable, "-c", "while True: pass"], cgroup=cg))
    try:
        start = cg.cpu_usage_ns()
        deadline = time.monotonic() + 10
        while cg.cpu_usage_ns() - start < 50_000_000:  # running inside the cgroup: 50 ms of CPU charged to it
            assert p.poll() is None and time.monotonic() < deadline, "the busy loop did not start in the cgroup"
            time.sleep(0.01)
        u0, t0 = cg.cpu_usage_ns(), time.monotonic_ns()
        time.sleep(seconds)
        return (cg.cpu_usage_ns() - u0) / (time.monotonic_ns() - t0)
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("cpus, lo, hi", [(0.5, 0.4, 0.6), (0.2, 0.12, 0.28)])
def test_cpu_quota_is_enforced(cgroup_factory, cpus, lo, hi):
    cores = busy_loop_cores(cgroup_factory(f"busy{cpus}", cpus, 256 << 20), 3)
    assert lo <= cores <= hi, f"a busy loop in a {cpus}-CPU node used {cores:.2f} cores"


def test_memory_limit_kills_the_over_allocating_process(cgroup_factory):
    cg = cgroup_factory("hog", 1.0, 64 << 20)
    hog = "b = bytearray(300 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('survived')"
    p = subprocess.run(wrapped([sys.executable, "-c", hog], cgroup=cg), capture_output=True, text=True, timeout=60)
    assert p.returncode == -9, f"expected SIGKILL from the OOM killer, got {p.returncode}: {p.stdout} {p.stderr}"
    assert "survived" not in p.stdout
    assert cg.oom_kills() >= 1
    small = subprocess.run(wrapped([sys.executable, "-c", "b = bytearray(16 << 20); print('ok')"], cgroup=cg),
                           capture_output=True, text=True, timeout=60)
    assert small.stdout.strip() == "ok", "a process within the limit runs normally"


def test_removed_cgroups_leave_nothing(cgroup_factory):
    cg = cgroups.create(f"continuum/test{os.getpid()}x/gone", 1.0, 64 << 20)
    p = subprocess.Popen(wrapped(["sleep", "30"], cgroup=cg))
    wait_for(lambda: p.pid in cg.pids(), 10, "sleep to join its cgroup")
    cg.remove()  # kills what is inside first
    assert p.wait(5) == -9
    assert all(not d.exists() for d in cg.dirs.values())
    assert all(not d.parent.exists() for d in cg.dirs.values())
