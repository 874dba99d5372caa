"""Named presets an experiment file may use instead of numbers and paths.

Core-network presets are one-way delays (RTT/2 of the RTTs measured in the
reference thesis: base-station edge ~1 ms, AWS eu-central-1 ~10 ms, eu-west-3
~20 ms, us-east-1 ~80 ms). Mobile presets name an uplink and a downlink trace
(archive names, resolved by `traces.py`)."""

from __future__ import annotations

CORE_ONE_WAY_MS = {
    "base_edge": 0.5,
    "eu_central_1": 5.0,
    "eu_west_3": 10.0,
    "us_east_1": 40.0,
}

MOBILE = {
    "const_12_48": ("const-12mbps", "const-48mbps"),
    "4g_us_verizon_mahimahi": ("Verizon-LTE-short.up", "Verizon-LTE-short.down"),
    "lte_us_tmobile_mahimahi": ("TMobile-LTE-short.up", "TMobile-LTE-short.down"),
    "lte_us_att_driving_mahimahi": ("ATT-LTE-driving.up", "ATT-LTE-driving.down"),
    "evdo_us_verizon_driving_mahimahi": ("Verizon-EVDO-driving.up", "Verizon-EVDO-driving.down"),
}

# Named in the thesis but recorded on a private network: we can say so instead
# of "unknown preset".
NOT_PUBLIC = {
    "lte_nl_kpn_mahimahi": "KPN LTE traces were never published",
    "5g_nl_kpn_mahimahi": "KPN 5G traces were never published",
    "5g_obstacled_nl_kpn_mahimahi": "KPN 5G (behind obstacle) traces were never published",
}
