"""Faults during the workload: the broker, the link emulator or the workload
server dies. Each must end the run at once with an error that names what
failed, keep the requests measured until then, and leave nothing behind.
While the run is live, nothing of it listens outside its own namespaces."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import hoststate
from test_run import CLI, _start_and_wait_for_workload, _wait_for_answers, write_config

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")


def _listening() -> set[str]:
    """Listening sockets of the host's own network namespace (local address:port)."""
    out = subprocess.run(["ss", "-Hltnu"], capture_output=True, text=True, check=True).stdout
    return {line.split()[4] for line in out.splitlines() if line.strip()}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _victim(what: str, run_id: str, run_dir: Path) -> int:
    if what == "emulator":
        pids = [p for p in hoststate.processes(str(run_dir)) if "mahimahi-link" in _cmdline(p)]
    else:
        in_edge = subprocess.run(["ip", "netns", "pids", f"ctm-{run_id}-edge0"], capture_output=True, text=True).stdout.split()
        word = "mosquitto" if what == "broker" else "app.py"
        pids = [int(p) for p in in_edge if word in _cmdline(int(p))]
    assert len(pids) == 1, (what, pids)
    return pids[0]


@pytest.mark.parametrize("what, named", [
    ("broker", "mosquitto on edge0 exited"),
    ("emulator", "mahimahi-link (the cellular link) exited"),
    ("server", "the custom server on edge0 exited"),
])
def test_a_dying_part_ends_the_run_named_keeps_results_and_leaves_nothing(tmp_path, what, named):
    before = hoststate.snapshot()
    listening = _listening()
    cfg = write_config(tmp_path, f"fault-{what}", duration=60, example=True)
    p, run_id = _start_and_wait_for_workload(cfg, tmp_path)
    _wait_for_answers(tmp_path)
    (run_dir,) = (tmp_path / "runs").glob("*")
    assert _listening() == listening, "the run listens on the host's own network"
    os.kill(_victim(what, run_id, run_dir), signal.SIGKILL)
    out = p.communicate(timeout=120)[0]
    assert p.returncode == 1, out[-3000:]
    assert named in out, out[-3000:]
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["status"].startswith("failed") and named in m["status"]
    assert m["teardown"]["complete"] is True
    assert len(pd.read_csv(run_dir / "requests.csv")) >= 2, "the requests measured before the fault are kept"
    after = hoststate.snapshot()
    assert after["namespaces"] == before["namespaces"] and after["cgroups"] == before["cgroups"]
    assert not hoststate.processes(str(run_dir))


def test_a_full_disk_ends_the_run_with_that_reason_and_leaves_nothing(tmp_path):
    """The run folder on its own small disk below the experiment's folder, which the example app
    (run as nobody) sees read-only: its sandbox must still bind the run folder (a bind of the
    experiment's folder, not recursive, left that disk out: the server died on a read-only mount
    point, and the run blamed the server, not the disk)."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(small)], check=True)
    try:
        before = hoststate.snapshot()
        cfg = write_config(tmp_path, "full-disk", duration=60, example=True)  # the machinery, not W1's model
        cfg.write_text(cfg.read_text().replace(f'output = "{tmp_path / "runs"}"', f'output = "{small / "runs"}"'))
        p = subprocess.run([*CLI, "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path, timeout=180)
        assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
        (run_dir,) = (small / "runs").glob("*")
        assert f"no space left on the disk of the run folder {run_dir}" in p.stderr, p.stderr
        assert "Traceback" not in p.stdout + p.stderr
        assert (run_dir / "experiment.toml").exists() and (run_dir / "raw").is_dir()  # what fit is kept
        after = hoststate.snapshot()
        assert after["namespaces"] == before["namespaces"] and after["cgroups"] == before["cgroups"]
        assert not hoststate.processes(str(run_dir))
    finally:
        subprocess.run(["umount", str(small)], check=True)
