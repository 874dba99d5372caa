"""The experiment's arms: configs/mobility-drive.toml with only the offload
and the edge manager changed, written to stdout:
    arms.py CONFIG ARM OUTPUT_FOLDER   (ARM: edge, edge-no-outage, cloud or edge-smec)"""

from __future__ import annotations

import sys

SLO_MS = 100  # W1's SLO in every arm (what "SLO share" counts): SMEC's manager schedules by it

ARMS = {
    "edge": "",
    "edge-no-outage": "",  # the control: the same drive's rates, its handovers without their 50-ms outages
    "cloud": "",
    "edge-smec": f'\n[edge.manager]\nkind = "smec"\nmode = "quota"\nunit_cpus = 0.25\nmax_cpus = 1.0\nslo_ms = {SLO_MS}\n',
}


def arm(text: str, name: str, output: str) -> str:
    if name not in ARMS:
        raise SystemExit(f"arms.py: unknown arm {name!r}; valid: {', '.join(ARMS)}")
    text = text.replace('name = "mobility-drive"', f'name = "mobility-{name}"\noutput = "{output}"', 1)
    # the drive's first 270 s: 10 handovers; Poisson arrivals, so requests fall at every phase of them
    text = text.replace("duration_s = 140", "duration_s = 265", 1).replace("rate = 2.0", 'rate = 2.0\narrivals = "poisson"', 1)
    if name == "cloud":
        text = text.replace('app = "image_classification"', 'app = "image_classification"\noffload = "cloud"', 1)
        text = text.replace("[nodes.edge]\ncpus = 1.0\nmemory = \"2G\"", "[nodes.edge]\ncount = 0\n\n[nodes.cloud]\n"
                            "count = 1\ncpus = 1.0\nmemory = \"2G\"", 1)
        text = text.replace('edge = "base_edge"', 'edge = "base_edge"\ncloud = "eu_central_1"', 1)
    if name == "edge-no-outage":
        text = text[:text.index("[[timeline]]")]
    return text + ARMS[name]


if __name__ == "__main__":
    config, name, output = sys.argv[1:4]
    print(arm(open(config).read(), name, output), end="")
