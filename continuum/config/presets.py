"""Named presets an experiment file may use instead of numbers and paths.

Core-network presets are one-way delays (RTT/2 of the RTTs measured in the
reference thesis: base-station edge ~1 ms, AWS eu-central-1 ~10 ms, eu-west-3
~20 ms, us-east-1 ~80 ms). Mobile presets name an uplink and a downlink trace
(archive names, resolved by `traces.py`)."""

from __future__ import annotations

from dataclasses import dataclass

CORE_ONE_WAY_MS = {
    "base_edge": 0.5,
    "eu_central_1": 5.0,
    "eu_west_3": 10.0,
    "us_east_1": 40.0,
}

MOBILE = {
    "const_12_48": ("const-12mbps", "const-48mbps"),
    "4g_us_verizon_mahimahi": ("mahimahi-verizon-lte-short", "mahimahi-verizon-lte-short"),
    "lte_us_tmobile_mahimahi": ("mahimahi-tmobile-lte-short", "mahimahi-tmobile-lte-short"),
    "lte_us_att_driving_mahimahi": ("mahimahi-att-lte-driving", "mahimahi-att-lte-driving"),
    "evdo_us_verizon_driving_mahimahi": ("mahimahi-verizon-evdo-driving", "mahimahi-verizon-evdo-driving"),
    "5g_ie_static_download": ("irish-5g-static-download", "irish-5g-static-download"),
    "5g_ie_driving_download": ("irish-5g-driving-download", "irish-5g-driving-download"),
}

# Named in the thesis but recorded on a private network: we can say so instead
# of "unknown preset".
NOT_PUBLIC = {
    "lte_nl_kpn_mahimahi": "KPN LTE traces were never published",
    "5g_nl_kpn_mahimahi": "KPN 5G traces were never published",
    "5g_obstacled_nl_kpn_mahimahi": "KPN 5G (behind obstacle) traces were never published",
}


# [mobile] access: the uplink access procedure of a real cell on a private link (docs/link-replay.md,
# "The access procedure"), as a one-UE cell per endpoint with TS 36.321/38.321 uplink signalling
# (src/cell.rs: SR opportunities, the small grant that answers an SR, BSRs, grants used k2 slots later).
# Each value's source is given; TDD patterns, HARQ and the downlink's scheduling delay are not modelled yet.
@dataclass(frozen=True)
class AccessPreset:
    what: str
    slot_us: int
    blocks: int
    sr_period_ms: float
    periodic_bsr_ms: float
    k2_slots: int
    sr_grant_blocks: int


ACCESS = {
    "lte-fdd-srsran": AccessPreset(
        what="LTE FDD as srsRAN 4G (release 23.11) runs it, a 5 MHz cell",
        slot_us=1000,          # LTE: 1-ms TTIs
        blocks=25,             # 5 MHz: 25 PRBs (srsran-zmq.toml's cell)
        sr_period_ms=20,       # srsENB rr.conf: sched_request_cnfg.period = 20
        periodic_bsr_ms=20,    # srsENB rr.conf: ulsch_cnfg.periodic_bsr_timer = 20
        k2_slots=4,            # LTE FDD: a grant in subframe n is used in n + 4 (TS 36.213 8.0)
        sr_grant_blocks=15,    # srsENB sched_ue.cc: an SR with no BSR is granted 512 bytes, ~15 of 25 PRBs at the
                               # ~35 bytes a PRB per ms of the recorded 7 Mbit/s uplink (MCS ~23)
    ),
}
