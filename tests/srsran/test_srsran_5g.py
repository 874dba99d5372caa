"""The 5G lab files (srsran_integration.nr and `python3 -m srsran_integration
configs`), without a 5G stack here: NR-ARFCNs against 3GPP's numbers, cells
that cannot run refused by key, the gNB's file agreeing with the 4G files'
network and subscriber, SMEC's fork's policy where its configs put it, and
srsUE's SA options checked against `srsue --help` where srsUE is installed."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from srsran_integration import lte, nr

SRSUE = shutil.which("srsue") or "/usr/local/bin/srsue"


@pytest.mark.parametrize("arfcn, mhz", [(368500, 1842.5), (632628, 3489.42), (620000, 3300.0), (529950, 2649.75)])
def test_an_nr_arfcn_is_its_frequency(arfcn, mhz):
    assert nr.frequency_mhz(arfcn) == mhz


@pytest.mark.parametrize("cell, key, words", [
    (nr.NrCell(band=41), "band", "n3 (FDD), n7 (FDD), n78 (TDD)"),
    (nr.NrCell(arfcn=632628), "arfcn", "outside band n3"),
    (nr.NrCell(bandwidth_mhz=30, radio="usrp", ue="cots"), "bandwidth_mhz", "5, 10, 15, 20, 40, 50"),
    (nr.NrCell(ue="cots"), "ue", "only srsUE"),
    (nr.NrCell(band=78, arfcn=632628, bandwidth_mhz=20), "band", "FDD cells at 15 kHz"),
    (nr.NrCell(policy="edf"), "policy", "smec, tutti, arma"),
])
def test_a_5g_cell_that_cannot_run_is_refused_by_key(cell, key, words):
    found = nr.problems(cell)
    assert [k for k, _ in found] == [key], found
    assert words in found[0][1]


def test_the_gnb_file_names_the_network_the_4g_files_and_the_core_use():
    cell = nr.NrCell(band=3, arfcn=368500, bandwidth_mhz=20)
    g = yaml.safe_load(nr.gnb_yaml(cell, "/var/log/x"))
    plmn = lte.MCC + lte.MNC
    ta = g["cu_cp"]["amf"]["supported_tracking_areas"][0]
    assert (g["cell_cfg"]["plmn"], ta["plmn_list"][0]["plmn"], g["cell_cfg"]["tac"], ta["tac"]) == (plmn, plmn, lte.TAC, lte.TAC)
    assert g["cu_cp"]["amf"]["addr"] == nr.AMF_ADDR
    assert (g["cell_cfg"]["dl_arfcn"], g["cell_cfg"]["band"], g["cell_cfg"]["common_scs"]) == (368500, 3, 15)
    # the ZMQ radio faces srsUE's: ports crossed, one rate
    ue = configparser.ConfigParser(interpolation=None)
    ue.read_string(nr.srsue_conf(cell, "ue1", "/var/log/x"))
    gargs = dict(kv.split("=", 1) for kv in g["ru_sdr"]["device_args"].split(","))
    uargs = dict(kv.split("=", 1) for kv in ue["rf"]["device_args"].split(","))
    assert gargs["tx_port"].rsplit(":", 1)[1] == uargs["rx_port"].rsplit(":", 1)[1]
    assert float(gargs["base_srate"]) == float(uargs["base_srate"]) == g["ru_sdr"]["srate"] * 1e6
    assert int(ue["rat.nr"]["nof_prb"]) == 106 and ue["rat.eutra"]["nof_carriers"] == "0"
    assert (ue["usim"]["imsi"], ue["usim"]["k"], ue["usim"]["opc"]) == (lte.IMSI, lte.KEY, lte.OPC)
    assert nr.open5gs_subscriber() == ["open5gs-dbctl", "add", lte.IMSI, lte.KEY, lte.OPC]
    # srsUE's search settings for srsRAN Project's cell are there; no SMEC policy upstream
    assert g["cell_cfg"]["pdcch"]["dedicated"]["ss2_type"] == "common" and "sched_expert_cfg" not in g["cell_cfg"]


def test_smecs_policy_goes_where_its_fork_reads_it():
    cell = nr.NrCell(band=78, arfcn=632628, bandwidth_mhz=80, radio="usrp", device_args="type=x300", ue="cots", policy="smec")
    assert nr.problems(cell) == []
    g = yaml.safe_load(nr.gnb_yaml(cell, "/l"))
    assert g["cell_cfg"]["sched_expert_cfg"]["policy_sched_cfg"]["pf_sched"]["low_latency_policy"] == "smec"
    assert (g["ru_sdr"]["device_driver"], g["ru_sdr"]["srate"], g["cell_cfg"]["common_scs"]) == ("uhd", 92.16, 30)
    assert "pdcch" not in g["cell_cfg"]  # a phone needs no srsUE-specific search space


@pytest.mark.skipif(not Path(SRSUE).exists(), reason="srsUE is not installed (playbooks/srsran.yml)")
def test_every_srsue_sa_option_written_is_one_srsue_has():
    text = subprocess.run([SRSUE, "--help"], capture_output=True, text=True, timeout=30).stdout
    known = set(__import__("re").findall(r"--([a-z_.]+[a-z_0-9]*)", text))
    c = configparser.ConfigParser(interpolation=None)
    c.read_string(nr.srsue_conf(nr.NrCell(), "ue1", "/l"))
    written = {f"{s}.{k}" for s in c.sections() for k in c[s]}
    assert written - known == set(), written - known


def test_the_configs_command_writes_the_5g_files_and_refuses_by_key(tmp_path):
    exp = tmp_path / "lab.toml"
    exp.write_text('[experiment]\nname = "lab"\nduration_s = 10\n[mobile]\nmode = "srsran"\n[mobile.srsran]\n'
                   'generation = "5g"\nband = 3\narfcn = 368500\nbandwidth_mhz = 20\n')
    p = subprocess.run([sys.executable, "-m", "srsran_integration", "configs", str(exp), str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert {f.name for f in (tmp_path / "out").iterdir()} == {"gnb.yml", "ue-nr.conf", "open5gs-subscriber.sh"}
    assert "1842.5 MHz" in p.stdout and "106 PRBs" in p.stdout
    exp.write_text(exp.read_text().replace("arfcn = 368500", "arfcn = 632628"))
    p = subprocess.run([sys.executable, "-m", "srsran_integration", "configs", str(exp), str(tmp_path / "bad")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "mobile.srsran.arfcn" in p.stderr and not (tmp_path / "bad").exists()
