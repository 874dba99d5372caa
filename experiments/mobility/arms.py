"""The experiment's arms: configs/mobility-drive.toml with only the offload
and the edge manager changed, written to stdout:
    arms.py CONFIG ARM OUTPUT_FOLDER
    (ARM: edge, edge-no-outage, cloud, edge-smec, stay or follow)

stay and follow add a geography (modelled, not measured): every serving cell
of the drive has an edge site beside it, one edge node per cell (the first
cell's is edge0, the next new one's edge1, ...; the drive's first 270 s
hand over between two cells, 11 and 12), NEAR_MS one-way from a UE in that
cell; every other site is FAR_MS away (across the metro network). At each
recorded handover the old cell's site becomes far and the new one's near.
stay: the service stays on edge0. follow: at each handover it moves to the
new cell's site, stop-and-copy with STATE_BYTES of state across the core."""

from __future__ import annotations

import sys
from pathlib import Path

SLO_MS = 100  # W1's SLO in every arm (what "SLO share" counts): SMEC's manager schedules by it
DRIVE = "irish-5g-driving-ul-proxy"  # the entry configs/mobility-drive.toml replays
NEAR_MS, FAR_MS = 0.5, 3.0  # one-way core delay to the serving cell's site (base_edge) and to another site
STATE_BYTES, CORE_RATE_MBPS = 10_000_000, 1000  # the service's state (follow), at the core's rate
TOTAL_S = 270  # warm-up (5 s) + the arms' duration

ARMS = {
    "edge": "",
    "edge-no-outage": "",  # the control: the same drive's rates, its handovers without their 50-ms outages
    "cloud": "",
    "edge-smec": f'\n[edge.manager]\nkind = "smec"\nmode = "quota"\nunit_cpus = 0.25\nmax_cpus = 1.0\nslo_ms = {SLO_MS}\n',
    "stay": "",  # two edge sites, the service stays on edge0 (geography: geography())
    "follow": "",  # ... and follows the UE to the new cell's site at each handover
    # the same two under SMEC's timing and early drops (mode off: its manager daemon, which moves CPU
    # quota on the offload node, does not move with a service)
    "stay-smec": f'\n[edge.manager]\nkind = "smec"\nmode = "off"\nslo_ms = {SLO_MS}\n',
    "follow-smec": f'\n[edge.manager]\nkind = "smec"\nmode = "off"\nslo_ms = {SLO_MS}\n',
}


def handovers() -> list[tuple[float, str, str]]:
    """The drive's recorded handovers in the arms' window: (t_s, from cell, to cell)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from continuum.tracearchive import drive, index

    d = drive.of_entry(index.find(DRIVE)[0])
    return [(float(h.t_s), str(h.source), str(h.target)) for h in d.handovers if h.t_s < TOTAL_S]


def sites() -> list[str]:
    """The drive's cells in the window, in the order the UE first meets them (edge0's first)."""
    hs = handovers()
    return list(dict.fromkeys([hs[0][1], *(h[2] for h in hs)])) if hs else []


def geography(follow: bool) -> str:
    """The [[timeline]] entries of stay (follow = False) or follow: the sites' core delays stepped at
    each handover (all but the first cell's far from the start), with follow's moves."""
    node = {cell: f"edge{i}" for i, cell in enumerate(sites())}
    out = [f'\n[[timeline]]\nt_s = 0\nnode = "{n}"\ncore_delay_ms = {FAR_MS:g}  # cell {c}\'s site, far from the first cell\n'
           for c, n in node.items() if n != "edge0"]
    for t, source, target in handovers():
        out.append(f"\n# handover {source} -> {target}: {node[target]} the near site")
        out += [f'[[timeline]]\nt_s = {t:g}\nnode = "{n}"\ncore_delay_ms = {ms:g}\n'
                for n, ms in ((node[source], FAR_MS), (node[target], NEAR_MS))]
        if follow:
            out.append(f'[[timeline]]\nt_s = {t:g}\nrelocate = "{node[target]}"\nstate_bytes = {STATE_BYTES}\n'
                       f'core_rate_mbps = {CORE_RATE_MBPS}\n')
    return "\n".join(out)


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
    if name.startswith(("stay", "follow")):
        text = text.replace("[nodes.edge]\ncpus = 1.0", f"[nodes.edge]\ncount = {len(sites())}  # one per cell\ncpus = 1.0", 1)
        text = text.replace('edge = "base_edge"', 'edge = %g  # base_edge: the serving cell\'s site' % NEAR_MS, 1)
        text += geography(name.startswith("follow"))
    return text + ARMS[name]


if __name__ == "__main__":
    config, name, output = sys.argv[1:4]
    print(arm(open(config).read(), name, output), end="")
