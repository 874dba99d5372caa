"""MOSAIC's cgroup agent (mosaic/agent.py): the root helper that makes a
task's cgroup for an executor that cannot (inside `continuum run` it is an
unprivileged process with a /sys of its own). It moves a process of the
node into the task's weighted cgroup and back, and refuses any process
outside the node. Needs root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuum import cgroups, naming
from continuum.runtime import wait_for, wrapped
from mosaic.agent import AgentCgroups
from mosaic.classes import Task

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the agent makes cgroups: run as root")


def _where(pid: int, cg: cgroups.Cgroup) -> Path | None:
    for f in cg.dirs["cpu"].glob("**/cgroup.procs"):
        if str(pid) in f.read_text().split():
            return f.parent
    return None


def test_the_agent_moves_a_node_process_into_its_task_cgroup_and_back(tmp_path: Path):
    version, mounts = cgroups.detect()
    cg = cgroups.create(naming.cgroup(naming.new_run_id(), "edge0"), 1.0, 256 << 20, leaf=True)
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen([sys.executable, "-m", "mosaic.agent", "--socket", str(sock), "--cpu-dir", str(cg.dirs["cpu"]),
                              "--cgroup-version", str(version), "--cpu-mount", str(mounts["cpu"])])
    worker = subprocess.Popen(wrapped([sys.executable, "-c", "import time; time.sleep(60)"], cgroup=cg))
    try:
        home = cg.dirs["cpu"] / "rest" if version == 2 else cg.dirs["cpu"]
        wait_for(lambda: _where(worker.pid, cg) == home and sock.exists(), 15, "the worker in the node, the agent listening")
        client = AgentCgroups(str(sock))
        handle = client.enter(Task("t1", "dispatch_api", 0, 100), worker.pid, 3.0)
        task_dir = cg.dirs["cpu"] / "task-t1"
        assert _where(worker.pid, cg) == task_dir
        weight = (task_dir / ("cpu.weight" if version == 2 else "cpu.shares")).read_text().strip()
        assert weight == ("300" if version == 2 else "3072")
        client.leave(handle, worker.pid)
        assert _where(worker.pid, cg) == home and not task_dir.exists()
        with pytest.raises(RuntimeError, match="not in the node's cgroup"):
            client.enter(Task("t2", "dispatch_api", 0, 100), os.getpid(), 1.0)  # this test's own process: outside
        with pytest.raises(RuntimeError, match="bad task id"):
            client.enter(Task("../x", "dispatch_api", 0, 100), worker.pid, 1.0)
    finally:
        worker.kill()
        worker.wait()
        agent.terminate()
        agent.wait(timeout=10)
        cg.remove()


def test_the_agent_finds_the_cpu_hierarchy_where_it_runs(tmp_path):
    """On a VM or another machine no one passes --cpu-mount: the agent reads its own mounts."""
    from continuum import cgroups
    from mosaic.agent import cpu_mount

    version, roots = cgroups.detect()
    assert cpu_mount(version) == roots["cpu"]
    mounts = tmp_path / "mounts"
    mounts.write_text("cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
                      "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n"
                      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n")
    assert cpu_mount(1, str(mounts)) == Path("/sys/fs/cgroup/cpu,cpuacct")
    assert cpu_mount(2, str(mounts)) == Path("/sys/fs/cgroup/unified")
