"""[transport] (pDCell, docs/pdcell.md): the table's problems named by key and
the emulator options it becomes, the flows' rate from a load; then one short run of the flows app over
pDCell's transport with MRFS (two UEs on constant channels, flows from two
server nodes): every flow complete through the shims, each server node sending
some, the results' FCT table and the CU's buffer within its bound, and nothing
of the run left on the host."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import hoststate
from continuum import experiment
from continuum.network import link, plan
from named_problems import problems
from test_run import run

REPO = Path(__file__).resolve().parents[2]
SHORT = """[experiment]
name = "pdcell-short"
seed = 1
duration_s = 6
warmup_s = 1

[nodes.endpoint]
count = 2
cpus = 0.25
memory = "256M"

[nodes.edge]
cpus = 1.0
memory = "1G"

[nodes.cloud]
count = 1
cpus = 0.5
memory = "512M"

[mobile]
uplink = "const-12mbps"
downlink = "const-48mbps"

[workload]
app = "flows"
arrivals = "poisson"
timeout_s = 10

[workload.params]
sizes = "web-search"
max_bytes = 300000
load = 0.25

[cell]
uplink = "pf"
downlink = "mrfs"
slot_us = 1000
class = "be"

[cell.ue.endpoint1]
downlink = "const-12mbps"

[transport]
kind = "pdcell"
buffer_kb = 200
servers = ["edge0", "cloud0"]
"""


def _file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "p.toml"
    p.write_text(text)
    return p


def test_every_transport_problem_is_named_by_key(tmp_path):
    got = problems(_file(tmp_path, SHORT.replace('kind = "pdcell"', 'kind = "pdcell"\nwindow_us = 5\nspeed = 1')))
    assert "greater than or equal to 10" in got["transport.window_us"]
    assert "unknown key" in got["transport.speed"] or "Extra inputs" in got["transport.speed"]
    # the CU sits at a shared cell's downlink
    got = problems(_file(tmp_path, SHORT.replace('downlink = "mrfs"', 'downlink = "private"')))
    assert "the CU sits at a shared cell's downlink" in got["transport.kind"]
    # MRFS hears the flow sizes from the CU only
    got = problems(_file(tmp_path, SHORT.replace('kind = "pdcell"', 'kind = "tcp"')))
    assert "only pDCell's CU tells the MAC" in got["cell.downlink"]
    # and the CU's settings without a CU are refused, not ignored
    assert "which kind \"tcp\" has none of" in got["transport.buffer_kb"], got
    # the CU bounds the queues and leaves radio losses to the radio
    got = problems(_file(tmp_path, SHORT.replace('downlink = "const-48mbps"\n', 'downlink = "const-48mbps"\ndownlink_queue = "droptail"\n'
                                                                                 'downlink_queue_args = "packets=100"\n')))
    assert "leave downlink_queue \"infinite\"" in got["mobile.downlink_queue"]
    got = problems(_file(tmp_path, SHORT.replace('downlink = "const-48mbps"\n', 'downlink = "const-48mbps"\ndownlink_loss = 0.01\n')))
    assert "downlink_loss 0" in got["mobile.downlink_loss"]
    # the flows' servers: edge or cloud nodes, the offload node among them
    got = problems(_file(tmp_path, SHORT.replace('servers = ["edge0", "cloud0"]', 'servers = ["cloud0", "endpoint1"]')))
    assert "'endpoint1' is not an edge or cloud node of this file; valid: edge0, cloud0" in got["transport.servers[1]"]
    assert "the offload node edge0 takes the requests and serves too" in got["transport.servers"]
    # netns only, for now
    got = problems(_file(tmp_path, SHORT.replace("[experiment]", '[provider]\nkind = "qemu"\n\n[experiment]')))
    assert "netns provider" in got["transport.kind"]
    # mrfs schedules the downlink only
    got = problems(_file(tmp_path, SHORT.replace('uplink = "pf"\ndownlink = "mrfs"', 'uplink = "mrfs"\ndownlink = "mrfs"')))
    assert "cell.uplink" in got


def test_the_table_becomes_the_cus_options(tmp_path):
    spec = experiment.load(_file(tmp_path, SHORT), materialize=False)
    argv = link.argv(spec, plan.build(spec), tmp_path, tmp_path / "stats.json", "mahimahi-link", binary=Path("mml"))
    # the first loop estimate: twice the edge's 0.5 ms, two 1 ms slots, 1 ms
    assert "--cu=port=47200,buffer-bytes=200000,window-us=1000,unscheduled=2,rtt-us=4000,alpha-lowest-bps=2000000" in argv
    assert f"--cu-log={tmp_path}/cu.log" in argv and "--downlink-cell=mrfs" in " ".join(argv)
    phost = experiment.load(_file(tmp_path, SHORT.replace('kind = "pdcell"\nbuffer_kb = 200', 'kind = "phost"\nbuffer_kb = "inf"\nalpha_ms = 3')),
                            materialize=False)
    argv = link.argv(phost, plan.build(phost), tmp_path, tmp_path / "s", "mahimahi-link", binary=Path("mml"))
    assert any(re.fullmatch(r"--cu=port=47200,buffer-bytes=inf,.*alpha-us=3000,phost,fronthaul-bps=10000000000", a) for a in argv), argv
    # load as a share of the cell: 0.5 x the mean of 48 and 12 Mbit/s over 2 UEs and the mean flow (web-search cut at 300 KB)
    from continuum.traces import mean_mbit
    from continuum.workloads import REGISTRY as WORKLOADS
    from workloads.flows.sizes import mean_bytes

    loaded = experiment.load(_file(tmp_path, SHORT.replace("load = 0.25", "load = 0.5")))
    rate, said = WORKLOADS["flows"].rate_from_params(loaded.apps[0], loaded)
    channels = [mean_mbit(loaded.mobile.downlink.path), mean_mbit(loaded.cell.channel("endpoint1", None, "downlink").path)]
    assert [round(c) for c in channels] == [48, 12]  # (1500-byte IP packets per opportunity: 48.0 and 12.0 Mbit/s)
    assert abs(rate - 0.5 * sum(channels) / 2 * 1e6 / 8 / mean_bytes("web-search", 300_000) / 2) < 1e-9, rate
    assert "load 0.5 of the cell's 30.0 Mbit/s" in said, said
    # kind = "tcp": no CU, only the servers' congestion control
    tcp = experiment.load(_file(tmp_path, SHORT.replace('downlink = "mrfs"', 'downlink = "pf"').replace(
        'kind = "pdcell"\nbuffer_kb = 200', 'kind = "tcp"\ncongestion_control = "reno"')), materialize=False)
    assert not [a for a in link.argv(tcp, plan.build(tcp), tmp_path, tmp_path / "s", "mahimahi-link", binary=Path("mml")) if a.startswith("--cu")]
    assert tcp.edge["pdcell"].congestion_control == "reno"
    for name in ("pdcell-mrfs", "pdcell-pfs", "pdcell-tcp", "pdcell-phost"):
        text = (REPO / "configs" / f"{name}.toml").read_text()
        if "mahimahi-" in text and not (REPO.parent / "shared" / "traces").exists():
            continue
        experiment.load(REPO / "configs" / f"{name}.toml", materialize=False)


@pytest.fixture(scope="module")
def short_run(tmp_path_factory, root_netns):
    d = tmp_path_factory.mktemp("pdcell")
    cfg = d / "short.toml"
    cfg.write_text(SHORT.replace("warmup_s = 1", f"warmup_s = 1\noutput = \"{d / 'runs'}\""))
    before = hoststate.snapshot(marker="pdcell.shim")
    p, run_dir = run(cfg, d)
    return {"run": run_dir, "stdout": p.stdout, "before": before, "after": hoststate.snapshot(marker="pdcell.shim")}


@pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")
def test_flows_go_through_the_shims_on_credit_and_every_one_completes(short_run):
    run_dir = short_run["run"]
    part = json.loads((run_dir / "summary.json").read_text())["transport"]
    assert part["kind"] == "pdcell" and part["downlink_scheduler"] == "mrfs", part
    total = part["all"]
    assert total["flows"] >= 10 and total["complete"] == total["flows"], part  # 2 UEs x ~3.2/s x 6 s, all within the timeout
    # the rate came from the load: 0.25 of the cell's 30.0 Mbit/s, and the run offered about that
    assert "flows: load 0.25 of the cell's 30.0 Mbit/s" in " ".join(short_run["stdout"].split())
    assert 0.1 < part["offered_load"] < 0.5, part["offered_load"]
    cu = part["cu"]
    # the flows crossed the CU on credit, none refused; a packet came twice only after its credit was given up on
    # and sent again (late data, not a loss); the bound held
    assert cu["credits"] > 0 and cu["admitted"] >= cu["credits"] - cu["expired"] and cu["not_admitted"] == 0, cu
    assert cu["duplicates"] <= cu["expired"] <= 0.01 * cu["credits"], cu
    assert 0 < cu["peak_bytes"] <= cu["buffer_bytes"] == 200_000, cu
    assert set(part["by_channel"]) == {"const-48mbps (48 Mbit/s)", "const-12mbps (12 Mbit/s)"}, part["by_channel"]
    assert (run_dir / "plots" / "flows.png").stat().st_size > 0
    assert "flows: transport pdcell, downlink mrfs" in " ".join(short_run["stdout"].split())
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["transport"]["kind"] == "pdcell" and m["transport"]["buffer_bytes"] == 200_000 and m["teardown"]["complete"], m["transport"]
    # the shims ran in the nodes, and the run left nothing behind (processes, namespaces, cgroups)
    logs = {p.name for p in (run_dir / "logs").glob("pdcell-shim-*.log")}
    assert logs == {"pdcell-shim-edge0.log", "pdcell-shim-cloud0.log", "pdcell-shim-endpoint0.log", "pdcell-shim-endpoint1.log"}, logs
    # two server nodes shared the requests (one MQTT shared subscription at edge0's broker): each sent some flows
    served = {n: len((run_dir / "raw" / f"server-{n}.csv").read_text().splitlines()) - 1 for n in ("edge0", "cloud0")}
    assert all(k > 0 for k in served.values()) and sum(served.values()) >= total["flows"], served  # (with the warm-up's)
    assert m["transport"]["servers"] == ["edge0", "cloud0"], m["transport"]
    assert short_run["after"] == short_run["before"], (short_run["before"], short_run["after"])
