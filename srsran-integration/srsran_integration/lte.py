"""srsRAN 4G's configuration for one experiment: the eNB, the EPC, its
subscriber database and the UE, written from the experiment's cell.

Why generated, not copied: srsRAN's own example files (installed with it as
*.conf.example) carry lab defaults (a 50-PRB cell, logs in /tmp, the
radio found by probing) that would make two runs on one machine share files
and a ZMQ run try a USRP. Here every path is in the run folder, the radio is
named, the ports are the run's, and the values come from the experiment file;
only the option names are srsRAN's (those of release 23.11's example files:
srsenb/enb.conf.example, srsepc/epc.conf.example, srsepc/user_db.csv.example,
srsue/ue.conf.example). The radio-resource files (rr.conf, sib.conf, rb.conf)
are srsRAN's own examples, read from its installation, with the cell's
carrier set by the eNB's `[rf] dl_earfcn`, so none of srsRAN's text is
copied here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# The LTE cell widths: PRBs per channel bandwidth (MHz).
PRB_OF_MHZ = {1.4: 6, 3.0: 15, 5.0: 25, 10.0: 50, 15.0: 75, 20.0: 100}
# srsRAN's sample rate per cell width (its reduced FFT sizes, the default).
CELL_RATE = {6: 1.92e6, 15: 3.84e6, 25: 5.76e6, 50: 11.52e6, 75: 15.36e6, 100: 23.04e6}


def zmq_base_rate(prb: int) -> float:
    """The ZMQ radio's sample stream, on which both ends must agree (there is
    no hardware clock to negotiate with): the cell's own rate, the least
    traffic between the two programs. The UE's 6-PRB cell search (1.92 MHz)
    divides every cell's rate, as rf_zmq_imp.c needs (it decimates by whole
    factors only); srsRAN's usual 23.04 MHz would not divide a 75-PRB cell's
    15.36 MHz and streams up to 12 times the samples."""
    return CELL_RATE[prb]

# FDD bands (3GPP TS 36.101, table 5.7.3-1): DL low frequency (MHz), DL EARFCN
# offset and range, UL low frequency and UL EARFCN offset.
BANDS = {
    1: (2110.0, 0, 599, 1920.0, 18000),
    2: (1930.0, 600, 1199, 1850.0, 18600),
    3: (1805.0, 1200, 1949, 1710.0, 19200),
    4: (2110.0, 1950, 2399, 1710.0, 19950),
    5: (869.0, 2400, 2649, 824.0, 20400),
    7: (2620.0, 2750, 3449, 2500.0, 20750),
    8: (925.0, 3450, 3799, 880.0, 21450),
    12: (729.0, 5010, 5179, 699.0, 23010),
    13: (746.0, 5180, 5279, 777.0, 23180),
    20: (791.0, 6150, 6449, 832.0, 24150),
    25: (1930.0, 8040, 8689, 1850.0, 26040),
    26: (859.0, 8690, 9039, 814.0, 26690),
    28: (758.0, 9210, 9659, 703.0, 27210),
}

# A test subscriber (3GPP TS 35.208's Milenage test set 1 key and OPc, the
# test network 001/01): the same on the UE's SIM and in the EPC's database.
MCC, MNC = "001", "01"
IMSI = "001010123456780"
KEY = "00112233445566778899aabbccddeeff"
OPC = "63bfa50ee6523365ff14c1f45f88737d"
IMEI = "353490069873319"
APN = "continuum"
TAC = 0x0007
UE_POOL = "172.16.0"  # the EPC's SGi network: .1 the gateway, .2 the UE (static, so the run knows it)
PACE_PCAP = "enb-mac.pcap"  # srsENB's MAC pcap, read for the stack's pace (kpis.pace) and then removed
UE_TUN = "tun_srsue"  # srsUE's tunnel, in the endpoint's namespace: the endpoint's way out
MME_ADDR, ENB_ADDR = "127.0.1.100", "127.0.1.1"  # loopback addresses inside the namespace that runs them


@dataclass(frozen=True)
class Cell:
    """One LTE cell and its UE: what the experiment file's [mobile.srsran] says."""

    radio: str = "zmq"  # zmq | usrp
    earfcn: int = 3350  # band 7, 2680 MHz down
    prb: int = 25
    tx_gain: float = 80.0
    rx_gain: float = 40.0
    device_args: str = ""  # usrp: UHD's device arguments for the eNB (e.g. "type=b200,serial=..."); zmq: made here
    ue: str = "srsue"  # srsue | cots (a phone with a SIM programmed with the subscriber below)
    ue_device_args: str = ""  # usrp + srsue: the UE's own radio
    zmq_port: int = 2000  # zmq: eNB sends on this port, the UE on the next


def band(earfcn: int) -> int | None:
    return next((b for b, (_, lo, hi, _, _) in BANDS.items() if lo <= earfcn <= hi), None)


def frequencies_mhz(earfcn: int) -> tuple[float, float]:
    """(downlink, uplink) carrier frequency of an FDD EARFCN."""
    b = band(earfcn)
    if b is None:
        raise ValueError(f"EARFCN {earfcn} is in none of the FDD bands {sorted(BANDS)}")
    f_dl, off_dl, _, f_ul, off_ul = BANDS[b]
    return round(f_dl + 0.1 * (earfcn - off_dl), 1), round(f_ul + 0.1 * (earfcn - off_dl), 1)


def problems(cell: Cell) -> list[tuple[str, str]]:
    """(key under [mobile.srsran], what is wrong and what would be valid)."""
    out = []
    if cell.prb not in PRB_OF_MHZ.values():
        out.append(("bandwidth_mhz", f"{cell.prb} PRBs is not an LTE cell width; valid: "
                                     + ", ".join(f"{mhz:g} MHz ({prb} PRBs)" for mhz, prb in PRB_OF_MHZ.items())))
    if band(cell.earfcn) is None:
        ranges = "; ".join(f"band {b}: {lo}-{hi}" for b, (_, lo, hi, _, _) in BANDS.items())
        out.append(("arfcn", f"{cell.earfcn} is not a downlink EARFCN of an FDD band srsRAN 4G runs ({ranges})"))
    if cell.radio == "zmq" and cell.ue != "srsue":
        out.append(("ue", "the ZMQ radio is a socket: only srsUE can be at its other end (ue = \"srsue\")"))
    if cell.radio == "zmq" and (cell.device_args or cell.ue_device_args):
        out.append(("device_args", "the ZMQ radio's arguments are made from the run's ports; device arguments are for radio = \"usrp\""))
    if cell.radio == "usrp" and cell.ue == "srsue" and not cell.ue_device_args:
        out.append(("ue_device_args", "srsUE over the air needs its own USRP: give its UHD arguments "
                                      "(e.g. \"type=b200,serial=XXXX\"), or ue = \"cots\" for a phone"))
    if cell.radio == "usrp" and cell.ue_device_args and cell.ue_device_args == cell.device_args:
        out.append(("ue_device_args", "the UE and the eNB cannot share one radio: give each its own serial"))
    if not 1024 <= cell.zmq_port <= 65534:
        out.append(("zmq_port", "a TCP port from 1024 to 65534 (the UE uses the next one)"))
    return out


@dataclass(frozen=True)
class Files:
    """Where the run keeps srsRAN's configuration, logs and metrics."""

    folder: Path  # configs
    logs: Path
    metrics: Path
    examples: Path  # srsRAN's installed example files (rr.conf.example, sib.conf.example, rb.conf.example)
    ue_netns: str  # the endpoint's namespace: srsUE puts its TUN there


def _ini(sections: dict[str, dict[str, object]]) -> str:
    lines = ["# written by continuum (srsran-integration/srsran_integration/lte.py) for this run"]
    for name, values in sections.items():
        lines.append(f"\n[{name}]")
        lines += [f"{k} = {v}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def zmq_args(cell: Cell, side: str) -> str:
    """The ZMQ radio's device arguments: the eNB sends on zmq_port and
    receives on the next; the UE the other way round."""
    tx, rx = (cell.zmq_port, cell.zmq_port + 1) if side == "enb" else (cell.zmq_port + 1, cell.zmq_port)
    return f"fail_on_disconnect=true,tx_port=tcp://*:{tx},rx_port=tcp://localhost:{rx},id={side},base_srate={zmq_base_rate(cell.prb):.0f}"


def configs(cell: Cell, files: Files) -> dict[str, str]:
    """File name -> text, for the run's srsRAN folder."""
    radio = ({"device_name": "zmq", "device_args": zmq_args(cell, "enb")} if cell.radio == "zmq"
             else {"device_name": "uhd", "device_args": cell.device_args or "auto"})
    enb = _ini({
        "enb": {"enb_id": "0x19B", "mcc": MCC, "mnc": MNC, "mme_addr": MME_ADDR, "gtp_bind_addr": ENB_ADDR,
                "s1c_bind_addr": ENB_ADDR, "s1c_bind_port": 0, "n_prb": cell.prb},
        # srsRAN's own radio-resource files; [rf] dl_earfcn sets their one cell's carrier
        "enb_files": {"sib_config": files.examples / "sib.conf.example", "rr_config": files.examples / "rr.conf.example",
                      "rb_config": files.examples / "rb.conf.example"},
        "rf": {"dl_earfcn": cell.earfcn, "tx_gain": f"{cell.tx_gain:g}", "rx_gain": f"{cell.rx_gain:g}", **radio},
        "log": {"all_level": "warning", "filename": files.logs / "srsenb.log", "file_max_size": -1},
        "gui": {"enable": "false"},
        # the MAC pcap: each PDU's TTI beside the wall-clock time it was written, i.e. whether the stack kept
        # real time (kpis.pace; its ZMQ radio has no clock of its own, so a busy machine slows its TTIs)
        "pcap": {"enable": "true", "filename": files.metrics / PACE_PCAP},
        # the CSV: the cell's bit rates; the JSON report: each UE's MCS, CQI, BLER, SNR per period
        "expert": {"metrics_period_secs": 1, "metrics_csv_enable": "true", "metrics_csv_filename": files.metrics / "enb.csv",
                   "report_json_enable": "true", "report_json_filename": files.metrics / "enb-report.json"},
    })
    epc = _ini({
        "mme": {"mme_code": "0x1a", "mme_group": "0x0001", "tac": f"0x{TAC:04x}", "mcc": MCC, "mnc": MNC,
                "mme_bind_addr": MME_ADDR, "apn": APN, "dns_addr": f"{UE_POOL}.1", "encryption_algo": "EEA0",
                "integrity_algo": "EIA1", "paging_timer": 2, "request_imeisv": "false", "lac": "0x0006"},
        "hss": {"db_file": files.folder / "user_db.csv"},
        "spgw": {"gtpu_bind_addr": MME_ADDR, "sgi_if_addr": f"{UE_POOL}.1", "sgi_if_name": "srs_spgw_sgi", "max_paging_queue": 100},
        "pcap": {"enable": "false", "filename": files.logs / "epc.pcap"},
        "log": {"all_level": "warning", "filename": files.logs / "srsepc.log"},
    })
    # name,auth,IMSI,Key,OP_Type,OP/OPc,AMF,SQN,QCI,IP_alloc (srsepc/user_db.csv.example's columns)
    users = f"ue0,mil,{IMSI},{KEY},opc,{OPC},8000,000000001234,9,{UE_POOL}.2\n"
    ue_radio = ({"device_name": "zmq", "device_args": zmq_args(cell, "ue")} if cell.radio == "zmq"
                else {"device_name": "uhd", "device_args": cell.ue_device_args})
    ue = _ini({
        "rf": {"tx_gain": f"{cell.tx_gain:g}", "rx_gain": f"{cell.rx_gain:g}", **ue_radio},
        "rat.eutra": {"dl_earfcn": cell.earfcn, "nof_carriers": 1},
        "usim": {"mode": "soft", "algo": "milenage", "opc": OPC, "k": KEY, "imsi": IMSI, "imei": IMEI},
        "rrc": {"ue_category": 4, "release": 8},
        "nas": {"apn": APN, "apn_protocol": "ipv4"},
        "gw": {"netns": files.ue_netns, "ip_devname": UE_TUN, "ip_netmask": "255.255.255.0"},
        "gui": {"enable": "false"},
        "log": {"all_level": "warning", "filename": files.logs / "srsue.log", "file_max_size": -1},
        "general": {"metrics_csv_enable": "true", "metrics_period_secs": 1, "metrics_csv_filename": files.metrics / "ue.csv"},
    })
    out = {"enb.conf": enb, "epc.conf": epc, "user_db.csv": users}
    if cell.ue == "srsue":
        out["ue.conf"] = ue
    return out
