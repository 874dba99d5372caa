"""srsRAN 4G's configuration as continuum writes it for a run, without srsRAN
installed: what is refused (naming the key), the carrier each EARFCN means,
and the files' agreement with each other (ports, subscriber, paths). Where
srsRAN is installed, every option written is checked against its own
documented example files."""

from __future__ import annotations

import configparser
import re
import subprocess
from pathlib import Path

import pytest

from srsran_integration import lte

EXAMPLES = Path("/usr/local/share/srsran")


def _files(tmp_path: Path) -> lte.Files:
    return lte.Files(folder=tmp_path / "srsran", logs=tmp_path / "logs", metrics=tmp_path / "raw",
                     examples=EXAMPLES, ue_netns="ctm-0a1b2c3d-endpoint0")


def _ini(text: str) -> configparser.ConfigParser:
    c = configparser.ConfigParser(interpolation=None)
    c.read_string(text)
    return c


@pytest.mark.parametrize("earfcn, band, dl, ul", [(3350, 7, 2680.0, 2560.0), (1575, 3, 1842.5, 1747.5),
                                                  (300, 1, 2140.0, 1950.0), (6300, 20, 806.0, 847.0)])
def test_an_earfcn_names_its_band_and_carriers(earfcn, band, dl, ul):
    assert lte.band(earfcn) == band
    assert lte.frequencies_mhz(earfcn) == (dl, ul)


@pytest.mark.parametrize("cell, key, words", [
    (lte.Cell(prb=30), "bandwidth_mhz", "1.4 MHz (6 PRBs), 3 MHz (15 PRBs), 5 MHz (25 PRBs)"),
    (lte.Cell(earfcn=5000), "arfcn", "band 7: 2750-3449"),
    (lte.Cell(ue="cots"), "ue", "only srsUE"),
    (lte.Cell(device_args="type=b200"), "device_args", "radio = \"usrp\""),
    (lte.Cell(radio="usrp"), "ue_device_args", "its own USRP"),
    (lte.Cell(radio="usrp", device_args="serial=1", ue_device_args="serial=1"), "ue_device_args", "own serial"),
    (lte.Cell(zmq_port=80), "zmq_port", "1024 to 65534"),
])
def test_a_cell_that_cannot_run_is_refused_naming_the_key(cell, key, words):
    found = lte.problems(cell)
    assert [k for k, _ in found] == [key], found
    assert words in found[0][1]


def test_valid_cells_have_no_problems():
    assert lte.problems(lte.Cell()) == []
    assert lte.problems(lte.Cell(radio="usrp", ue="cots", device_args="type=b200", prb=50, earfcn=1575)) == []


@pytest.mark.parametrize("prb", sorted(lte.PRB_OF_MHZ.values()))
def test_the_zmq_radios_face_each_other_at_one_sample_rate_every_cell_width_divides(tmp_path, prb):
    files = lte.configs(lte.Cell(prb=prb, zmq_port=2400), _files(tmp_path))
    enb, ue = _ini(files["enb.conf"]), _ini(files["ue.conf"])
    args = {side: dict(kv.split("=", 1) for kv in c["rf"]["device_args"].split(",")) for side, c in (("enb", enb), ("ue", ue))}
    assert enb["rf"]["device_name"] == ue["rf"]["device_name"] == "zmq"
    assert args["enb"]["tx_port"] == "tcp://*:2400" and args["ue"]["rx_port"] == "tcp://localhost:2400"
    assert args["ue"]["tx_port"] == "tcp://*:2401" and args["enb"]["rx_port"] == "tcp://localhost:2401"
    base = float(args["enb"]["base_srate"])
    assert base == float(args["ue"]["base_srate"]) == lte.CELL_RATE[prb]
    # the cell's rate and the UE's 6-PRB search rate divide it whole (the ZMQ radio decimates by whole factors)
    for rate in (lte.CELL_RATE[prb], 1.92e6):
        assert base % rate == 0, (base, rate)
    assert int(enb["enb"]["n_prb"]) == prb


def test_the_ue_and_the_epc_know_the_same_subscriber_and_network(tmp_path):
    files = lte.configs(lte.Cell(earfcn=1575), _files(tmp_path))
    enb, epc, ue = _ini(files["enb.conf"]), _ini(files["epc.conf"]), _ini(files["ue.conf"])
    name, auth, imsi, key, op_type, opc, _amf, _sqn, _qci, ip = files["user_db.csv"].strip().split(",")
    assert (auth, op_type) == ("mil", "opc") and ue["usim"]["algo"] == "milenage"
    assert (imsi, key, opc) == (ue["usim"]["imsi"], ue["usim"]["k"], ue["usim"]["opc"])
    assert ip == f"{lte.UE_POOL}.2" and epc["spgw"]["sgi_if_addr"] == f"{lte.UE_POOL}.1"
    assert ue["nas"]["apn"] == epc["mme"]["apn"]
    assert (enb["enb"]["mcc"], enb["enb"]["mnc"]) == (epc["mme"]["mcc"], epc["mme"]["mnc"]) == (imsi[:3], imsi[3:5])
    assert enb["enb"]["mme_addr"] == epc["mme"]["mme_bind_addr"]
    assert enb["rf"]["dl_earfcn"] == ue["rat.eutra"]["dl_earfcn"] == "1575"
    assert ue["gw"]["netns"] == "ctm-0a1b2c3d-endpoint0"


def test_every_file_the_run_writes_is_in_its_folders(tmp_path):
    files = lte.configs(lte.Cell(), _files(tmp_path))
    for name, text in files.items():
        if not name.endswith(".conf"):
            continue
        for section in _ini(text).values():
            for key, value in section.items():
                if "filename" in key or key in ("db_file",):
                    assert Path(value).is_relative_to(tmp_path), (name, key, value)
    for path in re.findall(r"(?<![\w:/*])/[\w./-]+", "".join(files.values())):  # no srsRAN default (/tmp/enb.log, ...)
        assert Path(path).is_relative_to(tmp_path) or Path(path).is_relative_to(EXAMPLES), path


def test_a_phone_needs_no_srsue_config(tmp_path):
    files = lte.configs(lte.Cell(radio="usrp", ue="cots", device_args="type=b200"), _files(tmp_path))
    assert "ue.conf" not in files
    assert _ini(files["enb.conf"])["rf"]["device_name"] == "uhd"
    assert _ini(files["enb.conf"])["rf"]["device_args"] == "type=b200"


def _documented(example: Path) -> dict[str, set[str]]:
    """Section -> option names in one of srsRAN's example files, commented out or not."""
    out: dict[str, set[str]] = {}
    section = ""
    for line in example.read_text().splitlines():
        if m := re.match(r"^\s*\[([\w.]+)\]", line):
            section = m.group(1)
        elif m := re.match(r"^#?\s*([a-z_0-9]+)\s*=", line):
            out.setdefault(section, set()).add(m.group(1))
    return out


@pytest.mark.parametrize("conf, example", [("enb.conf", "enb.conf.example"), ("epc.conf", "epc.conf.example"),
                                           ("ue.conf", "ue.conf.example")])
def test_every_option_written_is_one_srsran_documents(tmp_path, conf, example):
    if not (EXAMPLES / example).is_file():
        pytest.skip(f"srsRAN 4G is not installed ({EXAMPLES / example} is absent): "
                    "ansible-playbook -i playbooks/inventory/local.yml playbooks/srsran.yml builds it")
    documented = _documented(EXAMPLES / example)
    for section in _ini(lte.configs(lte.Cell(), _files(tmp_path))[conf]).values():
        if section.name == "DEFAULT":
            continue
        unknown = set(section) - documented.get(section.name, set())
        assert not unknown, f"{conf} [{section.name}]: {sorted(unknown)} not in srsRAN's {example}"


@pytest.mark.parametrize("conf, program", [("enb.conf", "srsenb"), ("epc.conf", "srsepc"), ("ue.conf", "srsue")])
def test_every_option_written_is_one_the_program_takes(tmp_path, conf, program):
    """The programs' own option tables (`PROGRAM --help`), which also hold what the examples leave out."""
    binary = EXAMPLES.parents[1] / "bin" / program
    if not binary.is_file():
        pytest.skip(f"srsRAN 4G is not installed ({binary} is absent): "
                    "ansible-playbook -i playbooks/inventory/local.yml playbooks/srsran.yml builds it")
    text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30).stdout
    known = set(re.findall(r"--([a-z_][a-z_0-9.]*)", text))
    c = _ini(lte.configs(lte.Cell(), _files(tmp_path))[conf])
    written = {f"{s}.{k}" for s in c.sections() for k in c[s]}
    assert written - known == set(), f"{conf}: {sorted(written - known)} not among {program}'s options"
