"""[mobile] emulator = "mahimahi" (upstream mm-link, patched: mahimahi-patches/): what
only mahimahi-link does is refused by key at validation, the plan wires one mm-link
namespace per endpoint; then (where the build is installed) one short run of the
quickstart on it: verified shaped once in mm-link's own logs, its logs in links/, the
manifest naming upstream's commit and each patch, nothing of the run left behind."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import hoststate
from continuum import experiment
from continuum.network import link, mahimahi, plan
from named_problems import problems
from test_run import CLI, run

REPO = Path(__file__).resolve().parents[2]
QUICK = (REPO / "configs" / "quickstart.toml").read_text()
MM = QUICK.replace('uplink_queue_args = "packets=500"', 'uplink_queue_args = "packets=500"\nemulator = "mahimahi"')


def _file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "mm.toml"
    p.write_text(text)
    return p


def test_what_only_mahimahi_link_does_is_refused_by_key(tmp_path):
    mobile = 'emulator = "mahimahi"\nsegmentation = "kernel"\nemulator_threads = 2\nms_bursts = true\nuplink_loss = 0.01\n' \
             'bypass = ["10.202.0.2:1883", "10.202.0.0/24"]'
    got = problems(_file(tmp_path, QUICK.replace('uplink_queue_args = "packets=500"', f'uplink_queue_args = "packets=500"\n{mobile}')
                         .replace("[workload]", '[[timeline]]\nt_s = 5\noutage_s = 0.1\n\n[workload]')))
    assert "\"kernel\" (mahimahi-link --gso)" in got["mobile.segmentation"]
    assert "--threads" in got["mobile.emulator_threads"]
    assert "1-ms ticks" in got["mobile.ms_bursts"]
    assert "no random loss" in got["mobile.uplink_loss"]
    assert "by address only" in got["mobile.bypass[0]"] and "mobile.bypass[1]" not in got
    assert "outages, trace switches" in got["timeline"]
    got = problems(_file(tmp_path, MM.replace("[workload]", '[cell]\nuplink = "pf"\n\n[workload]')))
    assert "shared cell" in got["cell"]
    got = problems(_file(tmp_path, MM.replace('kind = "netns"', 'kind = "qemu"')))
    assert "netns provider" in got["mobile.emulator"]
    got = problems(_file(tmp_path, MM.replace('emulator = "mahimahi"', 'emulator = "mm-link"')))
    assert "mahimahi-link" in got["mobile.emulator"]


def test_each_endpoint_gets_its_mm_link_namespace_and_ran_only_delays(tmp_path):
    spec = experiment.load(_file(tmp_path, MM.replace("count = 1\ncpus = 1.0\nmemory = \"512M\"", "count = 2\ncpus = 0.5\nmemory = \"256M\"", 1)),
                           materialize=False)
    assert spec.mobile.emulator == "mahimahi" and spec.mobile.segmentation == "emulator"
    p = plan.build(spec)
    assert [(s.endpoint, s.namespace, s.endpoint_address, s.probe_address) for s in p.mahimahi] == \
        [("endpoint0", "mm0", "10.200.0.2", "10.201.0.2"), ("endpoint1", "mm1", "10.200.1.2", "10.201.1.2")]
    assert p.bypass == ("0.0.0.0/0",), "every frame past the delay stage's trace"
    assert ("core", "10.200.1.0/24", "10.200.65.2") in {(r.namespace, r.destination, r.via) for r in p.routes}
    argv = link.argv(spec, p, tmp_path, tmp_path / "stats.json", "mahimahi-link", binary=Path("mml"))
    assert any(a.startswith("--link=name=mm1,ue=ue1,core=core1,up=") and "unused-bypassed.trace" in a for a in argv), argv
    assert f"--uplink-log={tmp_path}/core-delay/{{name}}.uplink.log" in argv
    mm = mahimahi.argv(Path("mm-link"), p.mahimahi[1], Path("u"), Path("d"), tmp_path, spec.mobile, 7)
    assert mm[:5] == ["mm-link", "--no-command", "--pass-through=ue", "--ready-fd=7", "--bypass=10.201.0.0/16"]
    assert "--uplink-queue=droptail" in mm and "--uplink-queue-args=packets=500" in mm and mm[-2:] == ["u", "d"]


@pytest.fixture(scope="module")
def short_run(tmp_path_factory, root_netns):
    missing = mahimahi.problems()
    if missing:
        pytest.skip("; ".join(missing))
    d = tmp_path_factory.mktemp("mm")
    cfg = d / "quick-mm.toml"
    cfg.write_text(MM.replace("duration_s = 30", "duration_s = 6").replace('output = "runs"', f'output = "{d / "runs"}"'))
    before = hoststate.snapshot(marker="mm-link")
    p, run_dir = run(cfg, d)
    return {"run": run_dir, "stdout": p.stdout, "before": before, "after": hoststate.snapshot(marker="mm-link")}


@pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")
def test_the_quickstart_runs_on_upstream_mm_link(short_run):
    run_dir = short_run["run"]
    out = " ".join(short_run["stdout"].split())
    assert "cellular link (upstream mm-link ae477d4 with 5 patches" in out
    v = json.loads((run_dir / "verification.json").read_text())
    shaped = v["shaped_once"][0]
    assert shaped["ok"] and shaped["endpoint0.uplink_packets"] == shaped["endpoint0.downlink_packets"] == 10, shaped
    assert all(r["ok"] for r in v["core_rtt"]), v["core_rtt"]
    # mm-link's own logs, in links/ where the report reads them
    log = (run_dir / "links" / "endpoint0.uplink.log").read_text()
    assert log.startswith("# mahimahi mm-link (Uplink)") and "--pass-through=ue" in log.splitlines()[1]
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["answered"] == s["requests"] > 0, (s["answered"], s["requests"])
    m = json.loads((run_dir / "manifest.json").read_text())
    e = m["mobile"]["emulator"]
    assert e["name"] == "mahimahi" and e["commit"] == "ae477d437615b972217498ba52be07db17a15618"
    assert [p["name"] for p in e["patches"]] == sorted(p.name for p in (REPO / "mahimahi-patches").glob("0*.patch"))
    assert e["binary_sha256"] == e["built_binary_sha256"]
    assert m["teardown"]["complete"]
    assert short_run["after"] == short_run["before"], (short_run["before"], short_run["after"])
    assert not list(Path("/tmp").glob("ctm-*-mahimahi")), "the run's mm-link folder was left behind"


@pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")
def test_a_killed_run_leaves_no_mm_link_after_destroy_twice(tmp_path, root_netns):
    """SIGKILL to `continuum run` once its mm-link shells are up: `continuum destroy --all`
    removes the shells, their dnsmasq, namespaces and folder; a second time finds nothing."""
    missing = mahimahi.problems()
    if missing:
        pytest.skip("; ".join(missing))
    cfg = tmp_path / "mm.toml"
    cfg.write_text(MM.replace('output = "runs"', f'output = "{tmp_path / "runs"}"'))
    log = open(tmp_path / "out.log", "wb")
    p = subprocess.Popen([*CLI, "run", str(cfg)], stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    deadline = time.monotonic() + 120
    while b"shells ready" not in (tmp_path / "out.log").read_bytes():
        assert p.poll() is None and time.monotonic() < deadline, (tmp_path / "out.log").read_text()[-2000:]
        time.sleep(0.1)
    p.kill()
    p.wait()
    left = mahimahi.leftovers(None)
    assert [pid for pid, _ in left if pid], "the killed run's mm-link shells should still be running before destroy"
    tree = {pid: mahimahi._descendants(pid) for pid, _ in left if pid}
    first = subprocess.run([*CLI, "destroy", "--all"], capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and "mm-link process" in first.stdout, first.stdout + first.stderr
    second = subprocess.run([*CLI, "destroy", "--all"], capture_output=True, text=True, timeout=120)
    assert second.returncode == 0 and "nothing to remove" in second.stdout, second.stdout
    alive = [q for pid, kids in tree.items() for q in (pid, *kids) if _running(q)]
    assert alive == [], f"still running after destroy: {alive}"
    assert mahimahi.leftovers(None) == [] and not list(Path("/tmp").glob("ctm-*-mahimahi"))


def _running(pid: int) -> bool:
    """Alive and not a zombie (the killed run's children wait for their reaper)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
