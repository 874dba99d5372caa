"""The response-caching arms (the paper's Fig. 14): configs/mecanic-cache.toml
with only the cache and the host's load changed, written to stdout:
    arms.py CONFIG ARM OUTPUT_FOLDER
    (ARM: host, nic, host-stress, nic-stress)

host: no cache, every download served by edge0's file store. nic: the cache
on edge0's NIC. -stress: edge0 also serves a second app, W1 image
classification from its own endpoint at 0.9 of what edge0 serves of it alone
(its calibrated service time), the paper's proxy stress in our terms: the host
is busy, the NIC is not. The cache holds only the download's answers."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ARMS = ("host", "nic", "host-stress", "nic-stress")
STRESS_ENDPOINTS, STRESS_RATE = 2, 3.0  # other clients' downloads through edge0's broker: 2 x 3/s of 4 MB

MIX = """[workload.apps.dl]
app = "file_download"
endpoints = 1
rate = {rate}
best_effort = true
params = {{ bank_size = {bank}, file_bytes = {size} }}

[workload.apps.stress]
app = "file_download"
endpoints = {stress_endpoints}
rate = {stress_rate}
best_effort = true
params = {{ bank_size = 64, file_bytes = {size} }}

"""


def arm(text: str, name: str, out: Path) -> str:
    if name not in ARMS:
        raise SystemExit(f"arms.py: no arm {name!r}; arms: {', '.join(ARMS)}")
    text = re.sub(r'(?m)^name = "mecanic-cache"$', f'name = "mecanic-cache-{name}"\noutput = "{out}"', text)
    if name.endswith("stress"):
        rate = re.search(r"(?m)^rate = (.+)$", text)
        bank = re.search(r"(?m)^bank_size = (\d+)$", text)
        size = re.search(r"(?m)^file_bytes = (\d+)$", text)
        assert rate and bank and size, "configs/mecanic-cache.toml lost its rate, bank_size or file_bytes"
        mix = MIX.format(rate=rate.group(1), bank=bank.group(1), size=size.group(1), stress_endpoints=STRESS_ENDPOINTS, stress_rate=STRESS_RATE)
        text = re.sub(r"(?ms)^\[workload\]\n.*?(?=^\[edge\.nic\]$)", mix, text)
        text = re.sub(r"(?m)^count = 1\ncpus = 1.0\nmemory = \"512M\"$", 'cpus = 1.0\nmemory = "512M"', text)
        text = text.replace("capacity_mb = 64", 'capacity_mb = 64\napps = ["dl"]')
    if name.startswith("host"):
        text = re.sub(r"(?ms)^\[edge\.nic\.cache\]\n.*?(?=^\[|\Z)", "", text)
    return text


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    sys.stdout.write(arm(Path(sys.argv[1]).read_text(), sys.argv[2], Path(sys.argv[3])))
