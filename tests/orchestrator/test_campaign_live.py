"""The shipped campaign (configs/campaign-quickstart.toml: 2 traces x 2 uplink
schedulers x 2 seeds, short windows) run as a user runs it, interrupted
mid-point with Ctrl-C, then run again: the interrupted point was torn down,
the points finished before are kept untouched, only the missing ones run,
each point's run is the point it says it is, and the table has a row per
trace and scheduler with both seeds behind it. Nothing is left on the host.

Its sweep, windows, cell and payloads are the shipped file's; its app is the
bring-your-own example (workloads/example/app.py, 5 ms of work per request)
in place of W1: nine W1 runs took 150 s of the test command's 20 minutes on
the slower machine of 2026-11-29, ~7 s of each TensorFlow's start and
MobileNetV2's build. Every point of the shipped file, W1 and all, is checked
as a whole file by test_campaign_config.py, and W1 runs live in
test_run.py and test_workloads.py."""

from __future__ import annotations

import csv
import json
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import hoststate

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "continuum"]
SHIPPED = REPO / "configs" / "campaign-quickstart.toml"


def light_app(text: str, folder: Path) -> str:
    """The shipped file with the example app in place of W1 (its [workload] keys but the app's own)."""
    shutil.copy(REPO / "workloads" / "example" / "app.py", folder / "app.py")
    folder.chmod(0o755)  # the app runs as nobody from this folder (pytest makes it 0700)
    head, rest = text.split("[workload]\n", 1)
    assert 'app = "image_classification"' in rest and "[workload.params]\nbank_size = 16\n" in rest, rest
    rest = rest.replace('app = "image_classification"', 'app = "custom"', 1).replace("[workload.params]\nbank_size = 16\n", "")
    custom = ('\n[workload.custom]\nserver_command = ["{python}", "app.py", "server"]\n'
              'endpoint_command = ["{python}", "app.py", "endpoint"]\nenvironment = { EXAMPLE_WORK_MS = "5" }\n')
    return head + "[workload]\n" + rest + custom


def _wait_for(pred, timeout: float, what: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert proc.poll() is None, f"the campaign ended ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _left(folder: Path) -> list[str]:
    """What the campaign's runs (every point's folder, attempts too) left on the host: their namespaces and
    cgroups, by run id (this test runs beside the link lane's, which make their own: tests/lanes.py)."""
    left = []
    for man in folder.glob("points/*/manifest.json"):
        rid = json.loads(man.read_text())["run_id"]
        left += sorted(hoststate.namespaces(rid)) + sorted(hoststate.cgroup_dirs(rid))
    return left


def _state(folder: Path) -> dict:
    try:
        return json.loads((folder / "campaign.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def test_a_campaign_resumes_after_ctrl_c_with_only_the_missing_points(tmp_path, root_netns):
    cfg = tmp_path / "campaign.toml"
    cfg.write_text(light_app(SHIPPED.read_text(), tmp_path).replace('output = "runs"', f'output = "{tmp_path / "out"}"'))
    folder = tmp_path / "out" / "campaign-quickstart-sweep"
    log = open(tmp_path / "first.log", "w")
    p = subprocess.Popen([*CLI, "run", str(cfg)], stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)

    def mid_point() -> bool:
        """Two points complete, and the third answering requests (its workload is up)."""
        pts = _state(folder).get("points") or []
        done = [e for e in pts if e["status"] == "complete"]
        running = [e for e in pts if e["status"] == "running"]
        if len(done) < 2 or not running:
            return False
        raw = folder / running[0]["run"] / "raw"
        return any(len(f.read_text().splitlines()) > 1 for f in raw.glob("requests-*.csv")) if raw.is_dir() else False

    _wait_for(mid_point, 240, "two points done and a third mid-run", p)
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=120) == 130, (tmp_path / "first.log").read_text()[-3000:]
    first = _state(folder)["points"]
    done = {e["index"]: e for e in first if e["status"] == "complete"}
    (cut,) = [e for e in first if e["status"] == "interrupted"]
    assert 2 <= len(done) < 8 and cut["index"] not in done, first
    cut_man = json.loads((folder / cut["run"] / "manifest.json").read_text())
    assert cut_man["status"].startswith("interrupted") and cut_man["teardown"]["complete"], cut_man["status"]
    assert not _left(folder), ("the interrupted point left something on the host", _left(folder))
    kept = {i: (folder / e["run"] / "summary.json").stat().st_mtime_ns for i, e in done.items()}

    again = subprocess.run([*CLI, "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert f"{len(done)} of 8 points done before; {8 - len(done)} to run" in again.stdout, again.stdout[:2000]
    ran = [int(n) for n in __import__("re").findall(r"point (\d+) of 8 \(", again.stdout)]
    assert sorted(ran) == sorted(set(range(1, 9)) - set(done)), ran
    after = _state(folder)["points"]
    assert all(e["status"] == "complete" for e in after), after
    assert {i: (folder / after[i - 1]["run"] / "summary.json").stat().st_mtime_ns for i in done} == kept
    assert list(folder.glob(f"points/{Path(cut['run']).name}.attempt-*")), "the interrupted attempt's folder is kept beside"
    # each point's run is the point it says it is
    for e in after:
        ran_file = tomllib.loads((folder / e["run"] / "experiment.toml").read_text())
        assert (ran_file["mobile"]["uplink"], ran_file["cell"]["uplink"], ran_file["experiment"]["seed"]) == (
            e["values"]["mobile.uplink"], e["values"]["cell.uplink"], e["seed"]), e
        assert json.loads((folder / e["run"] / "summary.json").read_text())["answered"] > 0, e
    rows = list(csv.DictReader(open(folder / "summary.csv")))
    assert len(rows) == 8 and all(r["status"] == "complete" and float(r["uplink_ms_median"]) > 0 for r in rows), rows
    table = (folder / "table.md").read_text().splitlines()
    groups = [line for line in table if line.startswith("| const-")]
    assert len(groups) == 4 and all("| 2 / 2 |" in g for g in groups), table
    assert len(list(folder.glob("points/*/manifest.json"))) >= 9 and not _left(folder), _left(folder)
    # the campaign's page: its table and figures (the CDFs, the medians against each swept key) in one file
    page = (folder / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3 and "| const-12mbps | rr | 2 / 2 |" in page
    assert {f.name for f in (folder / "plots").iterdir()} == {"cdf.png", "median_vs_mobile.uplink.png", "median_vs_cell.uplink.png"}
    # two groups compared as two runs are: each group's runs' requests together
    cmp = subprocess.run([*CLI, "compare", "--campaign", str(folder), "cell.uplink=rr", "cell.uplink=pf"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert cmp.returncode == 0 and "cell.uplink=rr (4 runs)" in " ".join(cmp.stdout.split()), cmp.stdout + cmp.stderr
    made = json.loads((folder / "compare-cell.uplink_rr-vs-cell.uplink_pf" / "compare.json").read_text())
    runs_rr = sum(json.loads((folder / e["run"] / "summary.json").read_text())["answered"] for e in after
                  if e["values"]["cell.uplink"] == "rr")
    assert next(r for r in made["metrics"] if r["metric"] == "uplink_ms")["n_a"] == runs_rr
    bad = subprocess.run([*CLI, "compare", "--campaign", str(folder), "cell.uplink=rr", "fastest"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert bad.returncode == 2 and "'fastest' names no complete point" in bad.stderr and "cell.uplink=pf" in bad.stderr, bad.stderr
    # the same command once more: nothing to run, nothing changed
    third = subprocess.run([*CLI, "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert third.returncode == 0 and "8 of 8 points done before; 0 to run" in third.stdout, third.stdout[-2000:]
    # a changed file is refused, not mixed in
    cfg.write_text(cfg.read_text().replace("seeds = [1, 2]", "seeds = [1, 2, 3]"))
    changed = subprocess.run([*CLI, "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert changed.returncode == 2 and "another version" in changed.stderr, changed.stderr
