"""End-to-end: `continuum run` on real namespaces, a real Mosquitto, the real
MobileNetV2 server and the real link emulator. Results are checked against
physics (serialization time at the trace rate, the preset core RTT), not only
for existence; afterwards the host must hold nothing of the run, also after a
SIGINT, and after a SIGKILL followed by `continuum destroy`."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import hoststate

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "continuum"]
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")


def write_config(dir: Path, name: str, duration: float = 10, warmup: float = 2, rate: float = 2.0, offload: str = "edge",
                 cloud: str = "eu_central_1", cloud_count: int = 0, max_bytes: int = 100000, up: str = "const-12mbps",
                 example: bool = False) -> Path:
    """The quickstart with these settings; `example`: its app replaced by workloads/example/app.py (a 1-ms
    busy loop, copied beside the file), for tests of the run's own machinery, which need a server but not
    W1's model (loading it took 7 s of every run here)."""
    text = (REPO / "configs" / "quickstart.toml").read_text()
    if example:
        shutil.copy(REPO / "workloads" / "example" / "app.py", dir / "app.py")
        dir.chmod(0o755)  # the app runs as nobody from this folder (pytest makes it 0700)
        text = text.replace('app = "image_classification"', 'app = "custom"').replace("[workload.params]\nbank_size = 16\n", "")
        text += ('\n[workload.custom]\nserver_command = ["{python}", "app.py", "server"]\n'
                 'endpoint_command = ["{python}", "app.py", "endpoint"]\nenvironment = { EXAMPLE_WORK_MS = "1" }\n')
    text = re.sub(r"(?m)^name = .*$", f'name = "{name}"', text)
    text = re.sub(r"(?m)^duration_s = .*$", f"duration_s = {duration}", text)
    text = re.sub(r"(?m)^warmup_s = .*$", f"warmup_s = {warmup}", text)
    text = re.sub(r"(?m)^output = .*$", f'output = "{dir / "runs"}"', text)
    text = re.sub(r"(?m)^rate = .*$", f"rate = {rate}", text)
    text = re.sub(r"(?m)^offload = .*$", f'offload = "{offload}"', text)
    text = re.sub(r"(?m)^cloud = .*$", f'cloud = "{cloud}"', text)
    text = re.sub(r"(?m)^min_bytes = .*$", f"min_bytes = {min(10000, max_bytes)}", text)
    text = re.sub(r"(?m)^max_bytes = .*$", f"max_bytes = {max_bytes}", text)
    text = re.sub(r"(?m)^bank_size = .*$", "bank_size = 8", text)
    text = re.sub(r'(?m)^uplink = .*$', f'uplink = "{up}"', text)
    text = text.replace("[nodes.cloud]\ncount = 0", f"[nodes.cloud]\ncount = {cloud_count}\ncpus = 1.0\nmemory = \"2G\"")
    path = dir / f"{name}.toml"
    path.write_text(text)
    return path


def run(config: Path, cwd: Path) -> tuple[subprocess.CompletedProcess, Path]:
    p = subprocess.run([*CLI, "run", str(config)], capture_output=True, text=True, cwd=cwd, timeout=600)
    dirs = sorted((cwd / "runs").glob("*"))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p, dirs[-1]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """The shipped quickstart, shortened to 6 s measured."""
    d = tmp_path_factory.mktemp("quick")
    cfg = write_config(d, "quick", duration=6)
    before = hoststate.snapshot()
    p, run_dir = run(cfg, d)
    return p, run_dir, before


def test_quickstart_writes_every_result_file(quickstart):
    p, run_dir, _ = quickstart
    for f in ("experiment.toml", "manifest.json", "requests.csv", "summary.json", "summary.txt", "nodes.csv",
              "verification.json", "links/endpoint0.uplink.log", "links/endpoint0.downlink.log",
              "plots/latency_over_time.png", "plots/decomposition.png", "plots/link_endpoint0.png", "plots/nodes.png"):
        assert (run_dir / f).exists() and (run_dir / f).stat().st_size > 0, f
    assert "end-to-end" in p.stdout and "P99" in p.stdout
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["status"] == "complete"
    assert m["cgroup_version"] in (1, 2) and m["delay_mechanism"] == "mahimahi-link"
    assert len(m["traces"]["uplink"]["sha256"]) == 64 and len(m["config_sha256"]) == 64
    for k in ("continuum", "python", "kernel", "mosquitto", "mahimahi-link", "torch"):
        assert m["versions"][k] not in ("", "unknown", "not installed"), k
    assert m["workload"]["server"]["model"] == "MobileNetV2" and m["workload"]["server"]["framework"] == "tensorflow"
    assert m["workload"]["server"]["weights"].startswith(("random", "imagenet"))
    assert m["workload"]["runtime"] == {"endpoint": "process", "server": "process"}
    assert m["workload"]["user"] == {"endpoint": "nobody", "server": "nobody"}  # not root: the file did not ask
    assert {f.stat().st_uid for f in (run_dir / "raw").iterdir()} == {0}, "the results were given back to the run folder's owner"
    with open(run_dir / "links" / "endpoint0.uplink.log") as f:
        assert f.readline().startswith("# mahimahi mm-link (Uplink)")
    # the TCP each node used: the file names none, so the machine's default, read back in its namespace
    default_cc = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    assert m["nodes"]["endpoint0"] == {"role": "endpoint", "cpus": 1.0, "memory_bytes": 512 << 20, "cpu_period_us": 100_000, "speed": 1.0,
                                       "tcp_congestion_control": default_cc}
    assert m["host"]["cpu_model"]
    # a load given as a rate, no [calibration] asked: nothing was measured (and this session's cache holds no W1
    # at 1 CPU yet), so nothing is claimed
    assert m["calibration"] is None or m["calibration"]["apps"]["image_classification"]["source"] == "cache"


def test_quickstart_counts_and_privileges_agree(quickstart):
    """The progress bar counts what the summary counts (measured requests),
    the broker dropped root, and the link stats still say something after the run."""
    p, run_dir, _ = quickstart
    summary = json.loads((run_dir / "summary.json").read_text())
    bar = re.findall(r"(\d+) of (\d+) answered", p.stdout)
    assert bar, p.stdout[-2000:]
    assert (int(bar[-1][0]), int(bar[-1][1])) == (summary["answered"], summary["requests"])
    broker_out = (run_dir / "logs" / "mosquitto-edge0.log").read_text()
    assert "should not be run as root" not in broker_out
    assert "New client connected" in broker_out  # it logged, as its own user, into the run folder
    stats = json.loads((run_dir / "links" / "stats.json").read_text())["links"][0]
    for d, cap in (("uplink", 12), ("downlink", 48)):
        assert stats[d]["mean_capacity_mbps"] == pytest.approx(cap, rel=0.05)
        assert stats[d]["capacity_mbps"] == pytest.approx(cap, rel=0.2), f"{d}: the last busy interval's rates, not an idle one's: {stats[d]}"


def test_quickstart_latencies_obey_physics(quickstart):
    _, run_dir, _ = quickstart
    df = pd.read_csv(run_dir / "requests.csv")
    measured = df[(df["phase"] == "measure") & (df["status"] == "ok")]
    assert len(measured) >= 10  # 6 s at 2 req/s
    assert (df["phase"] == "warmup").sum() >= 3
    # the parts add up to end-to-end exactly (one clock for every node)
    parts = measured[["uplink_ms", "downlink_ms", "preprocessing_ms", "server_ms"]].sum(axis=1)
    assert (parts - measured["e2e_ms"]).abs().max() < 1e-3
    # uplink at 12 Mbit/s: the median request cannot arrive faster than its bytes serialize
    serialization_ms = measured["request_bytes"].median() * 8 / 12e6 * 1e3
    assert measured["uplink_ms"].median() >= serialization_ms
    assert measured["uplink_ms"].median() <= serialization_ms * 3 + 20
    # the ~150-byte answer on a 48 Mbit/s downlink plus 0.5 ms core delay
    assert 0.5 <= measured["downlink_ms"].median() <= 15
    assert (measured["server_ms"] >= measured["inference_ms"]).all()
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["metrics"]["e2e_ms"]["p99"] >= s["metrics"]["e2e_ms"]["median"]
    assert s["dropped"] == 0 and s["timeouts"] == 0


def test_quickstart_verified_the_network(quickstart):
    _, run_dir, _ = quickstart
    v = json.loads((run_dir / "verification.json").read_text())
    assert v["ok"]
    (rtt,) = v["core_rtt"]
    assert abs(rtt["p25_rtt_ms"] - 1.0) <= 0.6
    (once,) = v["shaped_once"]
    assert once["endpoint0.uplink_packets"] == once["pings"] == once["endpoint0.downlink_packets"]
    assert all(r == "unreachable" for r in v["no_leaks"]["outside_routes"].values())


def test_quickstart_node_samples(quickstart):
    _, run_dir, _ = quickstart
    nodes = pd.read_csv(run_dir / "nodes.csv")
    assert set(nodes["node"]) == {"endpoint0", "edge0"}
    edge = nodes[nodes["node"] == "edge0"]
    assert edge["memory_bytes"].max() > 50 << 20  # the model is loaded
    assert edge["cpu_cores"].max() <= 1.15  # 1-CPU quota (sampling jitter allowed)


def test_quickstart_leaves_nothing(quickstart):
    _, run_dir, before = quickstart
    after = hoststate.snapshot()
    assert after["namespaces"] == before["namespaces"]
    assert after["cgroups"] == before["cgroups"]
    assert not hoststate.processes(str(run_dir))


def test_report_regenerates(quickstart):
    _, run_dir, _ = quickstart
    (run_dir / "summary.json").unlink()
    (run_dir / "plots" / "decomposition.png").unlink()
    p = subprocess.run([*CLI, "report", str(run_dir)], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert (run_dir / "summary.json").exists() and (run_dir / "plots" / "decomposition.png").exists()
    assert "end-to-end" in p.stdout


def test_the_far_cloud_adds_its_preset_rtt_to_the_network_time(tmp_path):
    """Small images (one TCP window), so uplink + downlink is one core RTT
    (2 x 40 ms to us_east_1) plus the link's own few milliseconds."""
    far = write_config(tmp_path, "far", duration=4, warmup=1, max_bytes=2000, offload="cloud", cloud="us_east_1", cloud_count=1,
                       example=True)
    _, run_dir = run(far, tmp_path)
    s = json.loads((run_dir / "summary.json").read_text())
    net = s["metrics"]["uplink_ms"]["median"] + s["metrics"]["downlink_ms"]["median"]
    assert 2 * 40 <= net <= 2 * 40 + 15, s["metrics"]
    # End to end adds the endpoint's pre-processing and the server's time, which
    # depend on the machine's speed (25 ms of server time on a slow CI runner),
    # so its bound is the network bound plus their P99s, not a fixed margin.
    m = s["metrics"]
    local = m["preprocessing_ms"]["p99"] + m["server_ms"]["p99"]
    assert 2 * 40 <= m["e2e_ms"]["median"] <= 2 * 40 + 15 + local + 5, m


def _wait_for(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _start_and_wait_for_workload(cfg: Path, cwd: Path) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([*CLI, "run", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd)
    run_id = None
    for line in p.stdout:
        m = re.search(r"run ([0-9a-f]{8}) ->", line)
        if m:
            run_id = m.group(1)
        if "server ready" in line:
            break
    assert run_id, "no run id printed"
    return p, run_id


def _wait_for_answers(cwd: Path, n: int = 2) -> None:
    """Until the endpoint has recorded n answered requests (there are partial results to keep)."""
    def answered() -> bool:
        files = list((cwd / "runs").glob("*/raw/requests-*.csv"))
        return bool(files) and sum(max(0, len(f.read_text().splitlines()) - 1) for f in files) >= n
    _wait_for(answered, 60, f"{n} answered requests")


def test_sigint_tears_down_and_keeps_partial_results(tmp_path):
    cfg = write_config(tmp_path, "interrupted", duration=60, example=True)
    p, run_id = _start_and_wait_for_workload(cfg, tmp_path)
    _wait_for_answers(tmp_path)
    assert hoststate.namespaces(run_id)
    p.send_signal(signal.SIGINT)
    out = p.communicate(timeout=60)[0]
    assert p.returncode == 130, out[-2000:]
    assert not hoststate.namespaces(run_id) and not hoststate.cgroup_dirs(run_id)
    (run_dir,) = (tmp_path / "runs").glob("*")
    assert not hoststate.processes(str(run_dir))
    assert json.loads((run_dir / "manifest.json").read_text())["status"].startswith("interrupted")
    assert len(pd.read_csv(run_dir / "requests.csv")) >= 2  # what was measured before the interrupt is kept


def test_sigkill_then_destroy_removes_everything_and_is_idempotent(tmp_path):
    cfg = write_config(tmp_path, "killed", duration=60, example=True)
    p, run_id = _start_and_wait_for_workload(cfg, tmp_path)
    _wait_for_answers(tmp_path)
    p.kill()
    p.wait()
    (run_dir,) = (tmp_path / "runs").glob("*")
    assert len(hoststate.namespaces(run_id)) == 4 and hoststate.cgroup_dirs(run_id)
    assert hoststate.processes(str(run_dir)), "the orphans are still running (what destroy is for)"
    listed = subprocess.run([*CLI, "destroy", run_id, "--list"], capture_output=True, text=True, cwd=REPO)
    assert f"ctm-{run_id}-ran" in listed.stdout and f"continuum destroy {run_id}" in listed.stdout
    every = subprocess.run([*CLI, "destroy", "--list"], capture_output=True, text=True, cwd=REPO)
    assert every.returncode == 0 and f"ctm-{run_id}-ran" in every.stdout, every.stderr
    d = subprocess.run([*CLI, "destroy", run_id], capture_output=True, text=True, cwd=REPO)
    assert d.returncode == 0, d.stderr
    assert not hoststate.namespaces(run_id) and not hoststate.cgroup_dirs(run_id)
    _wait_for(lambda: not hoststate.processes(str(run_dir)), 10, "orphans to exit")
    again = subprocess.run([*CLI, "destroy", run_id], capture_output=True, text=True, cwd=REPO)
    assert again.returncode == 0 and "nothing to remove" in again.stdout


def test_destroy_rejects_a_bad_run_id():
    p = subprocess.run([*CLI, "destroy", "../../etc"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 1 and "not a run id" in p.stderr


def test_destroy_says_what_it_needs_and_when_there_is_nothing_to_do():
    alone = subprocess.run([*CLI, "destroy"], capture_output=True, text=True, cwd=REPO)
    assert alone.returncode == 2 and "RUN_ID or --all" in alone.stderr
    both = subprocess.run([*CLI, "destroy", "0badc0de", "--all"], capture_output=True, text=True, cwd=REPO)
    assert both.returncode == 2 and "not both" in both.stderr
    for argv in (["0badc0de", "--list"], ["0badc0de"]):
        p = subprocess.run([*CLI, "destroy", *argv], capture_output=True, text=True, cwd=REPO)
        assert p.returncode == 0 and "nothing left by run 0badc0de: nothing to remove" in p.stdout, p.stdout


def test_core_jitter_uses_netem_or_says_the_kernel_lacks_it(tmp_path):
    """This machine's kernel has no sch_netem: the run must stop before the
    workload with a message that says so, and leave nothing; on kernels with
    netem the run uses it and records that."""
    cfg = write_config(tmp_path, "jitter", duration=3, warmup=0)
    cfg.write_text(cfg.read_text().replace('[core]\n', '[core]\njitter_ms = 2.0\n'))
    # Whether this kernel has netem, found independently of continuum: a scratch namespace's loopback.
    scratch = f"ctm-test-netem-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", scratch], check=True)
    try:
        kernel_has_netem = subprocess.run(["ip", "netns", "exec", scratch, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                                          capture_output=True).returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", scratch], check=True)
    before = hoststate.snapshot()
    p = subprocess.run([*CLI, "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    (run_dir,) = (tmp_path / "runs").glob("*")
    m = json.loads((run_dir / "manifest.json").read_text())
    if kernel_has_netem:
        assert p.returncode == 0, p.stderr
        assert m["delay_mechanism"] == "netem" and m["netem_available"] is True
    else:
        assert p.returncode == 1, p.stderr
        assert "no sch_netem" in p.stderr and "jitter_ms = 0" in p.stderr, p.stderr
        assert m["status"].startswith("failed")
    after = hoststate.snapshot()
    assert after["namespaces"] == before["namespaces"] and after["cgroups"] == before["cgroups"]


def test_report_html_opens_offline_and_shows_the_run(quickstart, tmp_path):
    """The run's report.html in headless Chromium, from disk with no network: no console message,
    every section, every figure drawn with data, and the distributions table's numbers the
    summary's; a screenshot under the test's folder (looked at when the page changes)."""

    from browser import drawn_traces, figure, render
    _, run_dir, _ = quickstart
    page = run_dir / "report.html"
    assert page.exists() and page.stat().st_size < 20 * 2**20
    assert "cdn.plot.ly" not in page.read_text()[:2000] and "<script src=" not in page.read_text(), "fetches at view time"
    shown = render(page, tmp_path / "report.png")
    assert shown.console == [], shown.console
    for section in ("configuration", "health", "time-series", "distributions", "apps", "manifest"):
        assert f'id="{section}"' in shown.dom, section
    # the time axis: the latency components (4), the link's capacity and delivery each way (4), the queue
    # delays (2), the nodes' CPU (2); the distributions: one CDF per metric (6)
    assert drawn_traces(figure(shown.dom, "time-series")) >= 12, "time series drawn"
    assert drawn_traces(figure(shown.dom, "distributions")) == 6, "one CDF per metric"
    summary = json.loads((run_dir / "summary.json").read_text())
    cells = dict(((m, s), v) for m, s, v in re.findall(r'data-metric="(\w+)" data-stat="(\w+)">([^<]+)<', shown.dom))
    assert len(cells) >= 25
    for (metric, stat), text in cells.items():
        want = summary["metrics"][metric][stat]
        assert text == (str(want) if stat == "count" else f"{want:.2f}"), (metric, stat, text, want)
    server = json.loads((run_dir / "manifest.json").read_text())["workload"]["server"]
    assert f"<td class=\"l\">{server['model']}</td>" in shown.dom, "the health section names the server's model"
    assert server["weights"].split(" (")[0] in shown.dom, "and its weights"
    assert (tmp_path / "report.png").stat().st_size > 50_000
