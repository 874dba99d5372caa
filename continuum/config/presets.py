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


# [mobile] access: the access procedure of a real cell on a private link (docs/link-replay.md, "The access
# procedure"): the uplink as a one-UE cell per endpoint with TS 36.321/38.321 signalling (src/cell/uplink.rs: SR
# opportunities, the small grant that answers an SR, BSRs, grants used k2 slots later), then in both directions
# the radio's timing after the trace (src/radio.rs: a TDD pattern, the pipeline delay, HARQ per transport block,
# in-order delivery). Each value's source is given beside it and in the docs' table.
@dataclass(frozen=True)
class AccessPreset:
    what: str
    slot_us: int
    blocks: int
    sr_period_ms: float
    periodic_bsr_ms: float
    k2_slots: int
    sr_grant_blocks: int
    tdd: str | None = None          # None: FDD
    ul_delay_ms: float = 0.0        # pipeline delay every packet sees, per direction
    dl_delay_ms: float = 0.0
    bler: float = 0.0               # a transport block's error probability per transmission
    harq_rtt_slots: int = 8
    max_tx: int = 4                 # transmissions before a block is given up

    def radio(self, uplink: bool) -> str:
        """mahimahi-link's --uplink-radio / --downlink-radio value."""
        delay = self.ul_delay_ms if uplink else self.dl_delay_ms
        out = f"slot-us={self.slot_us},delay-ms={delay:g},bler={self.bler:g},harq-rtt-slots={self.harq_rtt_slots},max-tx={self.max_tx}"
        return out + (f",tdd={self.tdd}" if self.tdd else "")

    def summary(self) -> str:
        """One line for --dry-run."""
        duplex = f"TDD {self.tdd}" if self.tdd else "FDD"
        return (f"{duplex}, pipeline {self.ul_delay_ms:g}/{self.dl_delay_ms:g} ms up/down, BLER {self.bler:g} "
                f"(a retransmission {self.harq_rtt_slots} slots on, {self.max_tx} tries)")


ACCESS = {
    "lte-fdd-srsran": AccessPreset(
        what="LTE FDD as srsRAN 4G (release 23.11) runs it, a 5 MHz cell over its ZMQ radio",
        slot_us=1000,          # LTE: 1-ms TTIs
        blocks=25,             # 5 MHz: 25 PRBs (srsran-zmq.toml's cell)
        sr_period_ms=20,       # srsENB rr.conf: sched_request_cnfg.period = 20
        periodic_bsr_ms=20,    # srsENB rr.conf: ulsch_cnfg.periodic_bsr_timer = 20
        k2_slots=8,            # from the subframe carrying an SR or BSR to the grant's use: srsENB works on subframe
                               # n's uplink while transmitting n + 4 (srsran/common.h: TTI_TX = tti + FDD_HARQ_DELAY_DL_MS,
                               # 4), and the grant it sends then is used 4 later (TS 36.213 8.0)
        sr_grant_blocks=9,     # srsENB sched_ue.cc: an SR with no BSR is granted 512 bytes; the cell sizes a grant on the
                               # trace's slot, one 1504-byte opportunity in a busy ms of the recorded uplink: 9 of 25 PRBs
        # Pipeline delays fitted on the stack's light recording (archive entry srsran4g-zmq-5mhz), not on the
        # workload runs they are checked with; experiments/srsran-vs-trace/fit_access.py prints the fit. Uplink:
        # the median over 16 packet sizes of the stack's lone-packet one-way delay less the one-UE cell's for the
        # same packet (-4..+6 ms by size, median 1.9); downlink: the median base delay, 9 ms, less the half TTI
        # of the slot's end.
        ul_delay_ms=2.0,
        dl_delay_ms=8.5,
        bler=0.0,              # ZMQ's radio has no channel: srsENB's own reports show BLER 0.0% both ways
        harq_rtt_slots=8,      # LTE FDD HARQ: a retransmission 8 TTIs after the first (TS 36.213 8.0, 10.1)
        max_tx=4,              # srsENB rr.conf: mac_cnfg.ulsch_cnfg.max_harq_tx = 4
    ),
    "nr-fdd": AccessPreset(
        what="NR FDD at 15 kHz, a 10 MHz cell (srsRAN Project gNB's defaults where it has one)",
        slot_us=1000,          # 15 kHz subcarriers: 1-ms slots (TS 38.211 4.3.2)
        blocks=52,             # 10 MHz at 15 kHz: 52 PRBs (TS 38.101-1 Table 5.3.2-1)
        sr_period_ms=20,       # srsRAN Project, DU-high unit config defaults: sr_period_msec = 20
        periodic_bsr_ms=20,    # assumed as the LTE preset (not checked against srsRAN Project)
        k2_slots=4,            # srsRAN Project, DU-high unit config defaults: pusch min_k2 = 4
        sr_grant_blocks=8,     # assumed: a small grant, room for a BSR and a short packet
        bler=0.1,              # link adaptation's target for a first transmission (TS 38.214 5.2.2.1: CQI at 10% BLER)
        harq_rtt_slots=8,      # assumed: HARQ feedback at srsRAN Project's min_k1 = 4 slots, the retransmission 4 after it
        max_tx=5,              # srsRAN Project: max_nof_harq_retxs = 4, i.e. 5 transmissions
    ),
    "nr-tdd-dddsu": AccessPreset(
        what="NR TDD at 30 kHz, DDDSU (2.5-ms period), a 20 MHz cell",
        slot_us=500,           # 30 kHz subcarriers: 0.5-ms slots (TS 38.211 4.3.2)
        blocks=51,             # 20 MHz at 30 kHz: 51 PRBs (TS 38.101-1 Table 5.3.2-1)
        sr_period_ms=20,       # srsRAN Project, DU-high unit config defaults: sr_period_msec = 20
        periodic_bsr_ms=20,    # assumed as the LTE preset
        k2_slots=4,            # srsRAN Project: pusch min_k2 = 4
        sr_grant_blocks=8,     # assumed, as nr-fdd
        tdd="DDDSU",           # a common FR1 pattern: three downlink slots, a special one, one uplink
        bler=0.1,              # TS 38.214 5.2.2.1's 10% target
        harq_rtt_slots=10,     # assumed: feedback in the next period, the retransmission in the one after (2 x 5 slots)
        max_tx=5,              # srsRAN Project: max_nof_harq_retxs = 4
    ),
}
