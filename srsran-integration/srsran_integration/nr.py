"""5G SA for a lab machine: srsRAN Project's gNB (or SMEC's fork of it) with
Open5GS as the core, and srsUE in 5G SA mode or a phone as the UE.

continuum run drives srsRAN 4G only (generation = "4g"); these files are
what playbooks/srsran-5g.yml installs next to the programs, written from the
same [mobile.srsran] table, so a lab can run the same cell by hand or from
its own scripts. Option names are those of the projects' documented
examples: srsRAN Project's configs/gnb_zmq.yaml (release 24.10's layout,
`cu_cp.amf`), the SMEC fork's configs/*-smec.yml (`low_latency_policy`),
and srsUE 23.11's program options (`srsue --help`), which the tests check
where srsUE is installed.

NR-ARFCN arithmetic follows 3GPP TS 38.104 (5.4.2.1) and the bands' tables
(5.2-1, 5.4.2.3-1)."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from srsran_integration import lte

# band: (duplex, DL NR-ARFCN first, last, UL minus DL in MHz (FDD), SCS kHz srsRAN uses there)
BANDS = {
    3: ("FDD", 361000, 376000, -95.0, 15),
    7: ("FDD", 524000, 538000, -120.0, 15),
    78: ("TDD", 620000, 653333, 0.0, 30),
}
# PRBs per channel bandwidth and SCS (TS 38.101-1, table 5.3.2-1)
PRBS = {15: {5: 25, 10: 52, 15: 79, 20: 106, 40: 216, 50: 270},
        30: {10: 24, 15: 38, 20: 51, 40: 106, 50: 133, 80: 217, 100: 273}}
SAMPLE_RATE_MHZ = {15: {5: 7.68, 10: 11.52, 15: 23.04, 20: 23.04, 40: 46.08, 50: 61.44},
                   30: {10: 15.36, 15: 23.04, 20: 23.04, 40: 46.08, 50: 61.44, 80: 92.16, 100: 122.88}}
AMF_ADDR, GNB_BIND = "127.0.0.5", "127.0.0.1"  # Open5GS's AMF listens on 127.0.0.5 by default
# SMEC's fork: the pf scheduler's low-latency policy (its configs/*-smec.yml, *-tutti.yml, *-arma.yml)
POLICIES = ("pf", "smec", "tutti", "arma")


@dataclass(frozen=True)
class NrCell:
    band: int = 3
    arfcn: int = 368500  # 1842.5 MHz down
    bandwidth_mhz: int = 10
    radio: str = "zmq"  # zmq | usrp
    device_args: str = ""
    tx_gain: float = 75.0
    rx_gain: float = 75.0
    ue: str = "srsue"  # srsue | cots
    policy: str = "pf"  # pf: upstream's; smec, tutti, arma: SMEC's fork
    zmq_port: int = 2000

    @property
    def scs_khz(self) -> int:
        return BANDS[self.band][4] if self.band in BANDS else 15

    @property
    def prb(self) -> int | None:
        return PRBS.get(self.scs_khz, {}).get(self.bandwidth_mhz)


def frequency_mhz(arfcn: int) -> float:
    """An NR-ARFCN's frequency (TS 38.104, 5.4.2.1)."""
    if 0 <= arfcn < 600000:
        return round(0.005 * arfcn, 3)
    if 600000 <= arfcn < 2016667:
        return round(3000 + 0.015 * (arfcn - 600000), 3)
    raise ValueError(f"NR-ARFCN {arfcn} is above FR1 (0..2016666)")


def sample_rate_mhz(cell: NrCell) -> float:
    """The radio's sample rate, as srsRAN's examples set it per width and SCS
    (23.04 MHz for 20 MHz, 11.52 for a B210's 10 MHz at 15 kHz, 92.16 for an X310's 80 MHz at 30 kHz)."""
    return SAMPLE_RATE_MHZ[cell.scs_khz][cell.bandwidth_mhz]


def problems(cell: NrCell) -> list[tuple[str, str]]:
    """(key under [mobile.srsran], what is wrong and what would be valid)."""
    out = []
    if cell.band not in BANDS:
        out.append(("band", f"band n{cell.band} is not one these files are written for; valid: "
                            + ", ".join(f"n{b} ({d})" for b, (d, *_rest) in BANDS.items())))
        return out
    duplex, lo, hi, _, scs = BANDS[cell.band]
    if not lo <= cell.arfcn <= hi:
        out.append(("arfcn", f"NR-ARFCN {cell.arfcn} is outside band n{cell.band}'s downlink ({lo}-{hi}, "
                             f"{frequency_mhz(lo):g}-{frequency_mhz(hi):g} MHz)"))
    if cell.prb is None:
        valid = ", ".join(str(b) for b in PRBS[scs])
        out.append(("bandwidth_mhz", f"{cell.bandwidth_mhz} MHz is not an NR channel at {scs} kHz; valid: {valid}"))
    if cell.radio == "zmq" and cell.ue != "srsue":
        out.append(("ue", "the ZMQ radio is a socket: only srsUE can be at its other end (ue = \"srsue\")"))
    if cell.radio == "zmq" and (duplex != "FDD" or cell.scs_khz != 15 or cell.bandwidth_mhz > 20):
        out.append(("band", "srsUE's 5G SA over ZMQ runs FDD cells at 15 kHz up to 20 MHz (band n3 or n7)"))
    if cell.policy not in POLICIES:
        out.append(("policy", f"{cell.policy!r}; valid: {', '.join(POLICIES)} (all but pf need SMEC's fork)"))
    return out


def gnb_yaml(cell: NrCell, logs: str, mcc: str = lte.MCC, mnc: str = lte.MNC, tac: int = lte.TAC) -> str:
    """srsRAN Project's gnb configuration for the cell (gnb -c FILE)."""
    plmn = f"{mcc}{mnc}"
    radio = ({"device_driver": "zmq",
              "device_args": f"tx_port=tcp://127.0.0.1:{cell.zmq_port},rx_port=tcp://127.0.0.1:{cell.zmq_port + 1},"
                             f"base_srate={sample_rate_mhz(cell):g}e6"}
             if cell.radio == "zmq" else {"device_driver": "uhd", "device_args": cell.device_args or "type=b200"})
    cfg: dict = {
        "cu_cp": {"amf": {"addr": AMF_ADDR, "port": 38412, "bind_addr": GNB_BIND,
                          "supported_tracking_areas": [{"tac": tac, "plmn_list": [{"plmn": plmn, "tai_slice_support_list": [{"sst": 1}]}]}]}},
        "ru_sdr": {**radio, "srate": sample_rate_mhz(cell), "tx_gain": cell.tx_gain, "rx_gain": cell.rx_gain},
        "cell_cfg": {"dl_arfcn": cell.arfcn, "band": cell.band, "channel_bandwidth_MHz": cell.bandwidth_mhz,
                     "common_scs": cell.scs_khz, "plmn": plmn, "tac": tac, "pci": 1},
        "log": {"filename": f"{logs}/gnb.log", "all_level": "warning"},
        "pcap": {"mac_enable": False, "ngap_enable": False},
    }
    if cell.ue == "srsue":  # what srsUE can decode (the projects' srsUE examples)
        cfg["cell_cfg"].update({
            "pdcch": {"common": {"ss0_index": 0, "coreset0_index": 12 if cell.bandwidth_mhz >= 20 else 6},
                      "dedicated": {"ss2_type": "common", "dci_format_0_1_and_1_1": False}},
            "prach": {"prach_config_index": 1},
            "pdsch": {"mcs_table": "qam64"}, "pusch": {"mcs_table": "qam64"}})
    if cell.policy != "pf":  # SMEC's fork: the low-latency policy inside its proportional-fair scheduler
        cfg["cell_cfg"]["sched_expert_cfg"] = {"policy_sched_cfg": {"pf_sched": {"low_latency_policy": cell.policy}}}
    return yaml.safe_dump(cfg, sort_keys=False)


def srsue_conf(cell: NrCell, netns: str, logs: str) -> str:
    """srsUE in 5G SA mode over ZMQ (no LTE carrier), the same subscriber as the 4G files."""
    rate = sample_rate_mhz(cell) * 1e6
    sections: dict[str, dict[str, object]] = {
        "rf": {"freq_offset": 0, "tx_gain": f"{cell.tx_gain:g}", "rx_gain": f"{cell.rx_gain:g}", "srate": f"{rate:.0f}",
               "nof_antennas": 1, "device_name": "zmq",
               "device_args": f"tx_port=tcp://127.0.0.1:{cell.zmq_port + 1},rx_port=tcp://127.0.0.1:{cell.zmq_port},"
                              f"base_srate={rate:.0f}"},
        "rat.eutra": {"nof_carriers": 0},
        "rat.nr": {"bands": cell.band, "nof_carriers": 1, "max_nof_prb": cell.prb, "nof_prb": cell.prb},
        "rrc": {"release": 15, "ue_category": 4},
        "nas": {"apn": lte.APN, "apn_protocol": "ipv4"},
        "usim": {"mode": "soft", "algo": "milenage", "opc": lte.OPC, "k": lte.KEY, "imsi": lte.IMSI, "imei": lte.IMEI},
        "gw": {"netns": netns, "ip_devname": lte.UE_TUN, "ip_netmask": "255.255.255.0"},
        "log": {"all_level": "warning", "filename": f"{logs}/srsue-nr.log"},
        "gui": {"enable": "false"},
    }
    lines = ["# written by continuum (srsran-integration/srsran_integration/nr.py): srsUE in 5G SA mode"]
    for name, values in sections.items():
        lines.append(f"\n[{name}]")
        lines += [f"{k} = {v}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def open5gs_subscriber() -> list[str]:
    """The subscriber, as Open5GS's own tool adds it (misc/db/open5gs-dbctl: add IMSI KEY OPC)."""
    return ["open5gs-dbctl", "add", lte.IMSI, lte.KEY, lte.OPC]
