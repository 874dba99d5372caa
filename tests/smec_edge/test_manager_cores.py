"""SMEC's manager in `cores` mode (the paper's): a real process's affinity,
set by the daemon and read back from the kernel, follows the policy: one
more core when a budget turns urgent, the core back once the app has used
under 60% of what it holds for a while and nothing was urgent for a second.
Needs two cores and root (it pins another process)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from continuum.runtime import wait_for

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the manager sets another process's affinity: run as root"),
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="cores mode needs two cores to move one"),
]

# One thread busy all the time: it uses one core, half of two (under the 60% that returns a core).
SPIN = "import time\nwhile True:\n    time.perf_counter()\n"


def test_an_urgent_app_gains_a_core_and_gives_it_back(tmp_path: Path):
    sock, log = tmp_path / "m.sock", tmp_path / "decisions.csv"
    cores = sorted(os.sched_getaffinity(0))[:2]
    manager = subprocess.Popen([sys.executable, "-m", "smec_edge.manager", "--socket", str(sock), "--mode", "cores",
                                "--app", "ar:1:30", "--max-units", "2", "--cores", ",".join(map(str, cores)),
                                "--window-ms", "500", "--log", str(log)])
    app = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        wait_for(sock.exists, 15, "the manager's socket")
        tx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        tx.sendto(f"hello ar {app.pid}".encode(), str(sock))
        wait_for(lambda: os.sched_getaffinity(app.pid) == {cores[0]}, 5, "the server pinned to its one core")
        tx.sendto(b"budget ar 50000000", str(sock))  # 50 ms: above the 30-ms threshold, not urgent
        tx.sendto(b"budget ar 5000000", str(sock))  # 5 ms: urgent
        t_urgent = time.monotonic()
        wait_for(lambda: os.sched_getaffinity(app.pid) == set(cores), 5, "a second core for the urgent app")
        gained = time.monotonic() - t_urgent
        wait_for(lambda: os.sched_getaffinity(app.pid) == {cores[0]}, 10, "the core given back")
        returned = time.monotonic() - t_urgent
    finally:
        app.kill()
        manager.terminate()
        manager.wait(timeout=10)
    assert gained < 0.5, f"the core came {gained:.2f} s after the urgent budget"
    assert returned >= 1.0, "an app urgent within the last second keeps its cores"
    dec = pd.read_csv(log)
    moves = dec.dropna(subset=["cpus"])
    assert list(moves["units"]) == [1, 1, 2, 1], moves  # start, placed, urgent, idle
    assert moves["why"].iloc[2].startswith("urgent (budget 5.0 ms)")
    assert moves["why"].iloc[3].startswith("idle (")
    # what the manager logged is what the kernel says the process may run on
    assert moves["why"].iloc[2].endswith(f"[cores {cores[0]},{cores[1]}; server's affinity {cores[0]},{cores[1]}]")


def test_the_manager_exits_when_its_parent_is_gone(tmp_path: Path):
    """A run killed with -9 must leave no daemon holding cores behind: started
    by a shell that is then killed, the manager exits within a period."""
    sock, log = tmp_path / "m.sock", tmp_path / "decisions.csv"
    core = sorted(os.sched_getaffinity(0))[0]
    manager = (f"{sys.executable} -m smec_edge.manager --socket {sock} --mode cores --app ar:1:30 --max-units 1 "
               f"--cores {core} --log {log}")
    shell = subprocess.Popen(["sh", "-c", f"{manager} & echo $!; read x"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert shell.stdout is not None
    pid = int(shell.stdout.readline())
    try:
        wait_for(sock.exists, 15, "the manager's socket")
        assert _alive(pid)
        shell.kill()
        shell.wait()
        wait_for(lambda: not _alive(pid), 5, "the orphaned manager to exit")
    finally:
        if _alive(pid):
            os.kill(pid, 9)
    assert "gone: exiting" in log.read_text().splitlines()[-1]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_run_folder_too_deep_for_a_socket_address_still_works(tmp_path: Path):
    """A socket path over 107 bytes cannot be bound as it is (a run under
    experiments/smec/results/static/runs/ failed so): the manager and the
    servers' API reach it through their folder's descriptor."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    sock, log = deep / "smec-manager.sock", deep / "decisions.csv"
    assert len(str(sock)) > 108
    core = sorted(os.sched_getaffinity(0))[0]
    manager = subprocess.Popen([sys.executable, "-m", "smec_edge.manager", "--socket", str(sock), "--mode", "cores",
                                "--app", "ar:1:30", "--max-units", "1", "--cores", str(core), "--log", str(log)])
    server = None
    try:
        wait_for(sock.exists, 15, "the manager's socket")
        # a server's side of the API says hello with its process id
        server = subprocess.Popen([sys.executable, "-c", "from smec_edge.api import EdgeTiming\nimport time\n"
                                   f"EdgeTiming(0, bind='127.0.0.1', manager={str(sock)!r}, app='ar')\ntime.sleep(60)"])
        wait_for(lambda: f"server pid {server.pid} adopted" in log.read_text(), 10, "the hello through the long path")
    finally:
        if server is not None:
            server.kill()
        manager.terminate()
        manager.wait(timeout=10)
