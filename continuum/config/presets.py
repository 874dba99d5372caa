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
