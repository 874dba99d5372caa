"""mobile.mode = "srsran" in the experiment file, without srsRAN running:
what the file may and may not combine it with (each refusal naming its
key), the plan it makes (no emulator, the UE's tunnel as the endpoint's way
out, the core delay by netem), a host that cannot run it refused before
anything is created, and srsENB's KPI report read onto the run's clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuum import experiment
from continuum.errors import ConfigError
from continuum.network import plan as netplan
from srsran_integration import environment, kpis, lte

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "configs" / "srsran-zmq.toml"


def run_namespaces() -> list[str]:
    """The namespaces runs make (ctm-*), not the link lane's that run beside this file (tests/lanes.py)."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.startswith("ctm-"))


def _load(tmp_path: Path, text: str):
    f = tmp_path / "x.toml"
    f.write_text(text)
    return experiment.load(f, materialize=False)


def _keys(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, text)
    for issue in e.value.issues:
        assert len(issue.message) > 30, issue
    return [i.key for i in e.value.issues]


BASE = """
[experiment]
name = "s"
duration_s = 10
[mobile]
mode = "srsran"
"""


def test_the_shipped_example_is_the_quickstart_with_the_stack_as_its_link():
    spec = experiment.load(EXAMPLE, materialize=False)
    quick = experiment.load(REPO / "configs" / "quickstart.toml", materialize=False)
    s = spec.mobile.srsran
    assert spec.mobile.mode == "srsran" and s is not None and s.generation == "4g"
    assert (s.cell.radio, s.cell.earfcn, s.cell.prb, s.cell.ue) == ("zmq", 3350, 25, "srsue")
    assert spec.mobile.uplink is None and spec.mobile.downlink is None
    assert "srsRAN 4G over ZMQ (band 7, EARFCN 3350, 2680 MHz down, 25 PRBs)" == spec.mobile.describe()
    # the same workload, nodes and core as the quickstart: only the link differs
    assert spec.workload.app == quick.workload.app and spec.workload.rate == quick.workload.rate
    assert [(n.role, n.cpus, n.memory_bytes) for n in spec.nodes] == [(n.role, n.cpus, n.memory_bytes) for n in quick.nodes]
    assert spec.core.edge_ms == quick.core.edge_ms


def test_the_plan_puts_the_stack_where_the_endpoint_was_and_routes_the_endpoint_through_the_ue():
    spec = experiment.load(EXAMPLE, materialize=False)
    plan = netplan.build(spec)
    quick = netplan.build(experiment.load(REPO / "configs" / "quickstart.toml", materialize=False))
    assert plan.addresses["endpoint0"] == f"{lte.UE_POOL}.2"
    # the endpoint has no veth: its one way out is srsUE's tunnel, routed once the UE attaches
    assert not [v for v in plan.veths if "endpoint0" in (v.a.namespace, v.b.namespace)]
    # srsRAN's namespace is wired to ran and the core exactly as the quickstart's endpoint is
    def wiring(p, ns):
        return [(v.a.name, v.a.address, v.b.namespace, v.b.name, v.b.address) for v in p.veths
                if ns in (v.a.namespace,) or v.b.namespace == "core" and v.a.namespace == "ran"]
    assert wiring(plan, netplan.EPC) == wiring(quick, "endpoint0")
    assert plan.node(netplan.EPC).forwarding and plan.node(netplan.EPC).limits is None  # SGi <-> core; not a workload node
    routes = {(r.namespace, r.destination): r.via for r in plan.routes}
    assert routes[("core", netplan.UE_NET)] == plan.node(netplan.EPC).address
    assert routes[("edge0", netplan.UE_NET)] == "10.202.0.1"  # answers go back to the UE's address
    # ran's emulator only adds the core delay: every frame bypasses its trace
    assert plan.bypass == ("0.0.0.0/0",) and [c.name for c in plan.cell_links] == [netplan.EPC]
    assert plan.delay_mechanism == "mahimahi-link" and plan.delay_rules == quick.delay_rules


@pytest.mark.parametrize("extra, keys", [
    ('uplink = "const-12mbps"\nuplink_loss = 0.1\nsegmentation = "kernel"\n', ["mobile.uplink", "mobile.uplink_loss", "mobile.segmentation"]),
    ('[nodes.endpoint]\ncount = 2\n', ["nodes.endpoint.count"]),
    ('[provider]\nkind = "qemu"\n', ["provider.kind"]),
    ('[core]\nmechanism = "mahimahi-link"\n', ["core.mechanism"]),
    ('[workload]\nruntime = "container"\n', ["workload.runtime"]),
    ('[mobile.srsran]\ngeneration = "5g"\n', ["mobile.srsran.generation"]),
    ('[mobile.srsran]\nbandwidth_mhz = 7\n', ["mobile.srsran.bandwidth_mhz"]),
    ('[mobile.srsran]\narfcn = 5000\n', ["mobile.srsran.arfcn"]),
    ('[mobile.srsran]\nradio = "usrp"\nue = "cots"\ndevice_args = "type=b200"\n', ["mobile.srsran.ue"]),
    ('[mobile.srsran]\nradio = "usrp"\n', ["mobile.srsran.ue_device_args"]),
    ('[mobile.srsran]\nprefix = "usr/local"\n', ["mobile.srsran.prefix"]),
    ('[mobile.srsran]\ncolour = "red"\n', ["mobile.srsran.colour"]),
    ('[cell]\nuplink = "pf"\n', ["cell"]),
])
def test_what_the_stack_cannot_be_combined_with_is_refused_by_key(tmp_path, extra, keys):
    text = BASE + extra if extra.startswith(("uplink", "downlink")) else BASE + "\n" + extra
    assert sorted(_keys(tmp_path, text)) == sorted(keys)


def test_srsran_settings_without_the_mode_are_refused(tmp_path):
    assert _keys(tmp_path, '[experiment]\nname = "s"\nduration_s = 10\n[mobile]\nuplink = "const-12mbps"\ndownlink = "const-12mbps"\n'
                           '[mobile.srsran]\nradio = "zmq"\n') == ["mobile.srsran"]


def test_every_lte_width_is_accepted(tmp_path):
    for mhz, prb in lte.PRB_OF_MHZ.items():
        spec = _load(tmp_path, BASE + f"\n[mobile.srsran]\nbandwidth_mhz = {mhz}\n")
        assert spec.mobile.srsran is not None and spec.mobile.srsran.cell.prb == prb


@pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root")
def test_a_host_that_cannot_run_the_stack_is_refused_before_anything_is_created(tmp_path):
    missing = environment.problems(Path("/nonexistent-prefix"), "zmq")
    assert any("srsRAN 4G is not installed under /nonexistent-prefix" in p for p in missing)
    f = tmp_path / "s.toml"
    f.write_text(EXAMPLE.read_text().replace('prefix = "/usr/local"', 'prefix = "/nonexistent-prefix"')
                 .replace('output = "runs"', f'output = "{tmp_path}/runs"'))
    before = run_namespaces()
    p = subprocess.run([sys.executable, "-m", "continuum", "run", str(f)], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    out = " ".join((p.stdout + p.stderr).split())
    assert "the host is not ready" in out and "playbooks/srsran.yml" in out, out
    assert not (tmp_path / "runs").exists()  # nothing half-created
    assert run_namespaces() == before  # ours only: the link lane makes its own beside this test


def _metrics(ts: float, dl_mcs: float, ul_bitrate: float) -> str:
    """One metrics entry as srslog's JSON formatter writes it (srsenb/src/metrics_json.cc's shape)."""
    doc = {"type": "metrics", "timestamp": ts, "cell_list": [{"cell_container": {
        "carrier_id": 0, "pci": 1, "nof_rach": 1, "ue_list": [{"ue_container": {
            "ue_rnti": 70, "dl_cqi": 15.0, "dl_mcs": dl_mcs, "dl_bitrate": 2.5e6, "dl_bler": 0.0, "ul_snr": 30.5,
            "ul_mcs": 20.0, "ul_pusch_rssi": -10.0, "ul_pucch_rssi": -10.0, "ul_pucch_ni": -60.0, "ul_pusch_tpc": 0,
            "ul_pucch_tpc": 0, "dl_cqi_offset": 0.0, "ul_snr_offset": 0.0, "ul_bitrate": ul_bitrate, "ul_bler": 0.1,
            "ul_phr": 40.0, "ul_bsr": 0, "bearer_list": []}}]}}]}
    return json.dumps(doc, indent=2)


def test_the_enb_report_gives_each_ues_kpis_on_the_wall_clock(tmp_path):
    event = json.dumps({"type": "rrc_connection", "timestamp": 1.0, "event_data": {"rnti": 70}}, indent=2)
    text = "\n".join([event, _metrics(1700000000.25, 27.0, 1e6), _metrics(1700000001.25, 26.0, 3e6)])
    report = tmp_path / "enb-report.json"
    report.write_text(text + '\n{\n  "type": "metrics", "timest')  # the last entry cut off mid-write
    k = kpis.enb_report(report)
    assert list(k["t_ns"]) == [1700000000250000000, 1700000001250000000]
    assert list(k["dl_mcs"]) == [27.0, 26.0] and set(k["rnti"]) == {70}
    s = kpis.summarize(k, 1700000000000000000, 1700000002000000000)
    assert s is not None and s["periods"] == 2 and s["median"]["dl_mcs"] == 26.5 and s["max_ul_mbps"] == 3.0
    assert kpis.summarize(k, 0, 1) is None
    assert kpis.enb_report(tmp_path / "absent.json").empty


def _mac_pcap(path, records, dlt=149):
    """A MAC pcap as srsRAN 4G's pcap.c writes it: (wall-clock s, direction, frame, subframe) per PDU; with
    DLT 149 each record behind a dummy UDP header and "mac-lte", then the context (radio type, direction,
    RNTI type, the RNTI, UE id and frame/subframe tags) and the PDU."""
    import struct

    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, dlt)]
    for t, direction, sfn, sf in records:
        ctx = bytes([1, direction, 3, 0x02]) + struct.pack(">H", 70) + b"\x03" + struct.pack(">H", 0) + b"\x04" \
            + struct.pack(">H", (sfn << 4) | sf) + b"\x07\x01\x0a\x00\x0f\x00\x01"
        data = (b"\xbe\xef\xde\xad\x00\x00\x00\x00mac-lte" if dlt == 149 else b"") + ctx + b"\x3f" * 20
        out.append(struct.pack("<IIII", int(t), round((t % 1) * 1e6), len(data), len(data)) + data)
    path.write_bytes(b"".join(out))


@pytest.mark.parametrize("dlt", [149, 147])
def test_the_stacks_pace_is_its_ttis_against_the_wall_clock(tmp_path, dlt):
    """A stack whose TTIs go by at 0.8 per ms over 20 s (the frame number wraps at 10240 TTIs once): its
    pace is 0.8, and it fell 4 s behind; uplink PDUs (their TTI is the reception's) are not used."""
    t0, records = 1700000000.0, []
    for i in range(400):  # a downlink PDU every 50 ms, an uplink one beside each with a wrong TTI
        tti = (2000 + round(0.8 * 50 * i)) % 10240
        records += [(t0 + 0.05 * i, 1, tti // 10, tti % 10), (t0 + 0.05 * i, 0, 0, 0)]
    folder = tmp_path / "srsran"
    folder.mkdir()
    _mac_pcap(folder / lte.PACE_PCAP, records, dlt)
    samples = kpis.tti_samples(folder, lte.PACE_PCAP)
    assert len(samples) == 400 and samples[-1][1] - samples[0][1] == round(0.8 * 50 * 399)  # unwrapped
    p = kpis.pace(samples, samples[0][0], samples[-1][0])
    assert p is not None and p["pace"] == pytest.approx(0.8, abs=0.001) and p["behind_ms"] == pytest.approx(0.2 * 19950, abs=2)
    # the pcap became a small CSV, read the same the next time (a report run again)
    assert not (folder / lte.PACE_PCAP).exists() and kpis.tti_samples(folder, lte.PACE_PCAP) == samples
    assert kpis.pace(samples, 0, samples[5][0]) is None  # under a second of samples: no pace
    # a quiet stretch of 12 s (the UE idle: no PDUs), over a wrap of the frame number, and a PDU written a TTI
    # out of order: unwrapped by the wall clock
    quiet = [r for r in records if not t0 + 1.0 < r[0] < t0 + 13.0]
    quiet.insert(5, (quiet[4][0], 1, quiet[2][2], quiet[2][3]))  # the downlink PDU two before, 40 TTIs back
    _mac_pcap(folder / lte.PACE_PCAP, quiet, dlt)
    gap = kpis.tti_samples(folder, lte.PACE_PCAP)
    assert len(gap) == sum(r[1] == 1 for r in quiet) and gap[-1][1] - gap[0][1] == round(0.8 * 50 * 399)
    assert gap[3][1] == gap[1][1]  # the one out of order: a step back, not a wrap forward
    g = kpis.pace(gap, gap[0][0], gap[-1][0])
    assert g is not None and g["pace"] == pytest.approx(0.8, abs=0.002)
    assert kpis.tti_samples(tmp_path / "absent", lte.PACE_PCAP) == []


def test_a_stack_behind_real_time_is_said_so():
    from continuum.results import tables

    slow = tables.srsran_pace({"pace": 0.8, "behind_ms": 4000.0, "seconds": 20.0})
    assert "80.0% of real time, a TTI every 1.25 ms" in slow and "fell behind real time" in slow
    assert "fell behind" not in tables.srsran_pace({"pace": 0.95, "behind_ms": 1000.0, "seconds": 20.0})
