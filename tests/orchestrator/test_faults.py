"""Faults during the workload: the broker, the link emulator or the workload
server dies. Each must end the run at once with an error that names what
failed, keep the requests measured until then, and leave nothing behind.
While the run is live, nothing of it listens outside its own namespaces."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

import hoststate
from test_run import CLI, _start_and_wait_for_workload, _wait_for_answers, write_config

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")


def _tree(root: int) -> set[int]:
    """root and every process descended from it."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    found, grew = {root}, True
    while grew:
        more = {pid for pid, pp in parent.items() if pp in found} - found
        grew, found = bool(more), found | more
    return found


def _listening(root: int) -> set[str]:
    """Sockets of the host's own network namespace that the run (`root`, the `continuum run` process, and
    what it started) listens on, as local address:port. The run's, not the host's: the link lane's tests
    beside this one (tests/lanes.py) may listen there meanwhile (a VM's SSH forward)."""
    out = subprocess.run(["ss", "-Hltnup"], capture_output=True, text=True, check=True).stdout
    mine = _tree(root)
    return {line.split()[4] for line in out.splitlines()
            if line.strip() and mine & {int(x) for x in re.findall(r"pid=(\d+)", line)}}


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
    cfg = write_config(tmp_path, f"fault-{what}", duration=60, example=True)
    p, run_id = _start_and_wait_for_workload(cfg, tmp_path)
    _wait_for_answers(tmp_path)
    (run_dir,) = (tmp_path / "runs").glob("*")
    assert not _listening(p.pid), ("the run listens on the host's own network", _listening(p.pid))
    os.kill(_victim(what, run_id, run_dir), signal.SIGKILL)
    out = p.communicate(timeout=120)[0]
    assert p.returncode == 1, out[-3000:]
    assert named in out, out[-3000:]
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["status"].startswith("failed") and named in m["status"]
    assert m["teardown"]["complete"] is True
    assert len(pd.read_csv(run_dir / "requests.csv")) >= 2, "the requests measured before the fault are kept"
    assert not hoststate.namespaces(run_id) and not hoststate.cgroup_dirs(run_id)  # the run's (others run beside it)
    assert not hoststate.processes(str(run_dir))


@contextlib.contextmanager
def small_disk(where: Path, size: str):
    """A tmpfs of `size` at `where` (the run folder's own disk), unmounted after."""
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_a_run_its_disk_cannot_hold_is_refused_before_anything_is_created(tmp_path):
    """The estimate of `--dry-run` (continuum/diskspace.py) checked before the run: 300 KB free."""
    with small_disk(tmp_path / "small", "300k") as small:
        cfg = write_config(tmp_path, "no-room", duration=60, example=True)
        cfg.write_text(cfg.read_text().replace(f'output = "{tmp_path / "runs"}"', f'output = "{small / "runs"}"'))
        dry = subprocess.run([*CLI, "run", "--dry-run", str(cfg)], capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert dry.returncode == 0 and "disk: about " in dry.stdout and "MB free there" in dry.stdout, dry.stdout[-2000:]
        p = subprocess.run([*CLI, "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert p.returncode != 0, p.stdout[-3000:]
        assert f"the disk of the output folder {small / 'runs'} has 0.3 MB free" in p.stderr and "shorten duration_s" in p.stderr, p.stderr
        # refused before a run id, a folder or a namespace: the console never named a run
        assert not (small / "runs").exists() or not any((small / "runs").iterdir())
        assert "run " not in p.stdout and "provision" not in p.stdout, p.stdout


def test_a_disk_filling_during_the_run_stops_the_measurement_early_and_keeps_its_results(tmp_path):
    """The run folder on its own 64-MB disk below the experiment's folder, which the example app (run
    as nobody) sees read-only: its sandbox must still bind the run folder (a bind of the experiment's
    folder, not recursive, left that disk out: the server died on a read-only mount point, and the run
    blamed the server, not the disk). Once requests are answered another writer fills the disk to below
    what the results need (diskspace.MIN_RESERVE_BYTES): the endpoints stop, the records measured until
    then and the results built from them are kept, the run says why and fails, and nothing is left."""
    with small_disk(tmp_path / "small", "64m") as small:
        cfg = write_config(tmp_path, "filling", duration=120, example=True)  # the machinery, not W1's model
        cfg.write_text(cfg.read_text().replace(f'output = "{tmp_path / "runs"}"', f'output = "{small / "runs"}"'))
        with open(tmp_path / "out.txt", "w") as fo, open(tmp_path / "err.txt", "w") as fe:
            p = subprocess.Popen([*CLI, "run", str(cfg)], stdout=fo, stderr=fe, text=True, cwd=tmp_path)
        try:
            def answered() -> int:
                return sum(max(0, len(f.read_text().splitlines()) - 1) for f in (small / "runs").glob("*/raw/requests-*.csv"))

            deadline = time.monotonic() + 90
            while answered() < 4:
                assert p.poll() is None and time.monotonic() < deadline, "no answered requests"
                time.sleep(0.2)
            free = shutil.disk_usage(small).free
            subprocess.run(["fallocate", "-l", str(free - 8 * 2**20), str(small / "filler")], check=True)
            t_fill = time.monotonic()
            p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        out, err = (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()
        (run_dir,) = (small / "runs").glob("*")
        assert p.returncode == 1, out[-3000:] + err[-3000:]
        assert "the measurement stopped early: " in err and "left on the disk of the run folder" in err and str(run_dir) in err, err
        assert time.monotonic() - t_fill < 30, "the run went on after its disk filled"
        assert "Traceback" not in out + err
        status = json.loads((run_dir / "manifest.json").read_text())["status"]
        assert status.startswith("stopped early: "), status
        rows = pd.read_csv(run_dir / "requests.csv")
        assert (rows["status"] == "ok").sum() >= 4, rows["status"].value_counts()
        assert (run_dir / "summary.json").exists()
        rid = json.loads((run_dir / "manifest.json").read_text())["run_id"]
        assert not hoststate.namespaces(rid) and not hoststate.cgroup_dirs(rid) and not hoststate.processes(str(run_dir))
