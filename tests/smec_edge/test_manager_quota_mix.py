"""SMEC's manager in `quota` mode for a mix, on whichever cgroup version the
host has (this machine: v1; a lent GPU machine: v2): each app's server moves
into its own child cgroup of the node, its CPU weight follows the steps it
holds, and at the end the servers go back to the node and the children are
removed. Under v2 the node's own processes live in a leaf (`rest`) that
continuum.cgroups creates, since v2 lets no process sit beside child
cgroups that share the CPU. Needs root (it makes cgroups)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from continuum import cgroups, naming
from continuum.runtime import wait_for, wrapped

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the manager moves processes between cgroups: run as root")

SPIN = "import time\nwhile True:\n    time.perf_counter()\n"


def _cgroup_of(pid: int, cg: cgroups.Cgroup) -> Path | None:
    """The directory under the node's cpu hierarchy that holds pid (None: none of them yet)."""
    for f in cg.dirs["cpu"].glob("**/cgroup.procs"):
        if str(pid) in f.read_text().split():
            return f.parent
    return None


def test_a_mix_gets_a_weighted_cgroup_per_app_and_gives_it_back(tmp_path: Path):
    version, _ = cgroups.detect()
    run_id = naming.new_run_id()
    cg = cgroups.create(naming.cgroup(run_id, "edge0"), 1.0, 256 << 20, leaf=True)
    procs = []
    manager = None
    try:
        for _ in range(3):  # two apps' servers and a process of the node's own (its broker, say)
            procs.append(subprocess.Popen(wrapped([sys.executable, "-c", SPIN], cgroup=cg)))
        home = cg.dirs["cpu"] / cgroups.LEAF if version == 2 else cg.dirs["cpu"]
        wait_for(lambda: all(_cgroup_of(p.pid, cg) == home for p in procs), 10, "the processes in the node's cgroup")
        sock, log = tmp_path / "m.sock", tmp_path / "decisions.csv"
        manager = subprocess.Popen([sys.executable, "-m", "smec_edge.manager", "--socket", str(sock), "--mode", "quota",
                                    "--cpu-dir", str(cg.dirs["cpu"]), "--cpuacct-dir", str(cg.dirs["cpuacct"]),
                                    "--cgroup-version", str(version), "--unit-cpus", "0.25", "--max-units", "4",
                                    "--app", "ar:1:30", "--app", "ft:1:be", "--log", str(log)])
        wait_for(sock.exists, 15, "the manager's socket")
        tx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        tx.sendto(f"hello ar {procs[0].pid}".encode(), str(sock))
        tx.sendto(f"hello ft {procs[1].pid}".encode(), str(sock))
        ar, ft = cg.dirs["cpu"] / "smec-ar", cg.dirs["cpu"] / "smec-ft"
        wait_for(lambda: _cgroup_of(procs[0].pid, cg) == ar and _cgroup_of(procs[1].pid, cg) == ft, 5, "each server in its app's cgroup")
        assert _cgroup_of(procs[2].pid, cg) == home  # the node's own process stays where it was
        weight = (lambda d: int((d / "cpu.shares").read_text())) if version == 1 else (lambda d: int((d / "cpu.weight").read_text()))
        one = weight(ar)
        assert weight(ft) == one
        tx.sendto(b"budget ar 5000000", str(sock))  # urgent: one more step, a doubled weight
        wait_for(lambda: weight(ar) == 2 * one, 5, "a doubled weight for the urgent app")
        manager.terminate()
        manager.wait(timeout=10)
        assert all(_cgroup_of(p.pid, cg) == home for p in procs), "the servers are given back to the node"
        assert not ar.exists() and not ft.exists()
    finally:
        if manager is not None and manager.poll() is None:
            manager.kill()
        for p in procs:
            p.kill()
            p.wait()
        cg.remove()
    assert not cg.dirs["cpu"].exists()
