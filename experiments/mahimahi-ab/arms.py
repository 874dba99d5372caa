"""One experiment file per scenario and emulator: configs/quickstart.toml with its
traces set for the scenario, three repetitions of 20 s, and only [mobile] emulator
differing between the two emulators' files.

    arms.py SCENARIO EMULATOR OUTPUT > file.toml    (SCENARIO: quickstart, lte, g1200)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRACES = {  # scenario -> (uplink, downlink): archive names
    "quickstart": ("const-12mbps", "const-48mbps"),
    "lte": ("mahimahi-verizon-lte-short", "mahimahi-verizon-lte-short"),
    "g1200": ("const-1200mbps", "const-1200mbps"),
}
EMULATORS = ("mahimahi-link", "mahimahi")


def text(scenario: str, emulator: str, output: str) -> str:
    if scenario not in TRACES or emulator not in EMULATORS:
        raise SystemExit(f"arms.py: scenario one of {', '.join(TRACES)}, emulator one of {', '.join(EMULATORS)}")
    up, down = TRACES[scenario]
    t = (REPO / "configs" / "quickstart.toml").read_text()
    t = re.sub(r'^name = ".*"$', f'name = "mahimahi-ab-{scenario}"', t, count=1, flags=re.M)
    t = re.sub(r"^duration_s = \d+$", "duration_s = 20", t, count=1, flags=re.M)
    t = re.sub(r"^repetitions = \d+$", "repetitions = 3", t, count=1, flags=re.M)
    t = re.sub(r'^output = ".*"$', f'output = "{output}"', t, count=1, flags=re.M)
    t = re.sub(r'^uplink = ".*"$', f'uplink = "{up}"', t, count=1, flags=re.M)
    t = re.sub(r'^downlink = ".*"$', f'downlink = "{down}"', t, count=1, flags=re.M)
    t = t.replace('uplink_queue_args = "packets=500"', f'uplink_queue_args = "packets=500"\nemulator = "{emulator}"', 1)
    return t


if __name__ == "__main__":
    print(text(*sys.argv[1:4]), end="")
