"""The experiment's arms as one campaign (docs/campaigns.md):
configs/mobility-drive.toml with a [sweep] of named arms, each changing only
its difference:
    campaign.py RESULTS_FOLDER [TOTAL_S]   # writes RESULTS_FOLDER/drive.toml, prints its path
    (TOTAL_S: a shorter drive than 270 s, its first handovers only: to try the pipeline)
(arms: edge, edge-no-outage, cloud, edge-smec, stay, follow, stay-smec, follow-smec)

Every arm replays the drive's first 270 s (duration 265 s after a 5-s
warm-up: 10 handovers) with Poisson arrivals, so requests fall at every
phase of the handovers; those two changes are the campaign's, in its base.

stay and follow add a geography (modelled, not measured): every serving cell
of the drive has an edge site beside it, one edge node per cell (the first
cell's is edge0, the next new one's edge1, ...; the drive's first 270 s
hand over between two cells, 11 and 12), NEAR_MS one-way from a UE in that
cell; every other site is FAR_MS away (across the metro network). At each
recorded handover the old cell's site becomes far and the new one's near.
stay: the service stays on edge0. follow: at each handover it moves to the
new cell's site, stop-and-copy with STATE_BYTES of state across the core.
Their arms set the whole [[timeline]]: the drive's handovers (the shipped
file's entry) and the geography's steps. `check()` holds each point to
this: it differs from the campaign's base only in its arm's keys."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import tomli_w

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE.parent))
from points import check_arm_changes, complete_points, write_campaign  # noqa: E402

BASE = REPO / "configs" / "mobility-drive.toml"
SLO_MS = 100  # W1's SLO in every arm (what "SLO share" counts): SMEC's manager schedules by it
DRIVE = "irish-5g-driving-ul-proxy"  # the entry configs/mobility-drive.toml replays
NEAR_MS, FAR_MS = 0.5, 3.0  # one-way core delay to the serving cell's site (base_edge) and to another site
STATE_BYTES, CORE_RATE_MBPS = 10_000_000, 1000  # the service's state (follow), at the core's rate
TOTAL_S = 270  # warm-up (5 s) + the arms' duration
DURATION_S = 265

ARMS = ("edge", "edge-no-outage", "cloud", "edge-smec", "stay", "follow", "stay-smec", "follow-smec")


def handovers(total_s: float = TOTAL_S) -> list[tuple[float, str, str]]:
    """The drive's recorded handovers in the arms' window: (t_s, from cell, to cell)."""
    from continuum.tracearchive import drive, index

    d = drive.of_entry(index.find(DRIVE)[0])
    return [(float(h.t_s), str(h.source), str(h.target)) for h in d.handovers if h.t_s < total_s]


def sites() -> list[str]:
    """The drive's cells in the window, in the order the UE first meets them (edge0's first)."""
    hs = handovers()
    return list(dict.fromkeys([hs[0][1], *(h[2] for h in hs)])) if hs else []


def geography(follow: bool, total_s: float = TOTAL_S) -> list[dict]:
    """The [[timeline]] entries of stay (follow = False) or follow: the sites' core delays stepped at
    each handover (all but the first cell's far from the start), with follow's moves."""
    node = {cell: f"edge{i}" for i, cell in enumerate(sites())}
    out = [{"t_s": 0, "node": n, "core_delay_ms": FAR_MS} for n in node.values() if n != "edge0"]
    for t, source, target in handovers(total_s):
        out += [{"t_s": t, "node": n, "core_delay_ms": ms} for n, ms in ((node[source], FAR_MS), (node[target], NEAR_MS))]
        if follow:
            out.append({"t_s": t, "relocate": node[target], "state_bytes": STATE_BYTES, "core_rate_mbps": CORE_RATE_MBPS})
    return out


def arms(base: dict, total_s: float = TOTAL_S) -> dict[str, dict]:
    smec_quota = {"kind": "smec", "mode": "quota", "unit_cpus": 0.25, "max_cpus": 1.0, "slo_ms": SLO_MS}
    # stay/follow under SMEC's timing and early drops (mode off: its manager daemon, which moves CPU
    # quota on the offload node, does not move with a service)
    smec_off = {"kind": "smec", "mode": "off", "slo_ms": SLO_MS}

    def sited(follow: bool) -> dict:
        return {"nodes": {"edge": {"count": len(sites())}}, "core": {"edge": NEAR_MS},
                "timeline": [*base["timeline"], *geography(follow, total_s)]}

    return {
        "edge": {},
        # the control: the same drive's rates, its handovers without their 50-ms outages
        "edge-no-outage": {"unset": ["timeline"]},
        "cloud": {"workload": {"offload": "cloud"},
                  "nodes": {"edge": {"count": 0}, "cloud": {"count": 1, "cpus": 1.0, "memory": "2G"}},
                  "core": {"cloud": "eu_central_1"}, "unset": ["nodes.edge.cpus", "nodes.edge.memory"]},
        "edge-smec": {"edge": {"manager": smec_quota}},
        "stay": {**sited(False)},
        "follow": {**sited(True)},
        "stay-smec": {**sited(False), "edge": {"manager": smec_off}},
        "follow-smec": {**sited(True), "edge": {"manager": smec_off}},
    }


def base_text(out: Path, total_s: float = TOTAL_S) -> str:
    """The shipped file with the campaign's own changes: its folder, the window (265 s after the 5-s warm-up), Poisson
    arrivals."""
    text = BASE.read_text().replace('name = "mobility-drive"', f'name = "mobility-drive"\noutput = "{out / "runs"}"', 1)
    text = text.replace("duration_s = 140", f"duration_s = {total_s - (TOTAL_S - DURATION_S):g}", 1)
    return text.replace("rate = 2.0", 'rate = 2.0\narrivals = "poisson"', 1)


def text(out: Path, total_s: float = TOTAL_S) -> str:
    """The campaign file, its runs under OUT/runs (campaign folder OUT/runs/campaign-mobility-drive); `total_s`: a
    shorter drive (its first handovers only), to try the pipeline."""
    base = base_text(out, total_s)
    return base + "\n" + tomli_w.dumps({"sweep": {"arms": arms(tomllib.loads(base), total_s)}})


# what each arm may change of the campaign's base (flattened keys, prefixes for tables)
CHANGES = {"edge": (), "edge-no-outage": ("timeline",),
           "cloud": ("workload.offload", "nodes.edge.", "nodes.cloud.", "core.cloud"),
           "edge-smec": ("edge.manager.",), "stay": ("nodes.edge.count", "core.edge", "timeline"),
           "follow": ("nodes.edge.count", "core.edge", "timeline")}
CHANGES["stay-smec"] = (*CHANGES["stay"], "edge.manager.")
CHANGES["follow-smec"] = (*CHANGES["follow"], "edge.manager.")


def check(path: Path, out: Path, total_s: float = TOTAL_S) -> None:
    """Every point is the campaign's base but for what its arm changes."""
    seen = check_arm_changes(path, tomllib.loads(base_text(out, total_s)), CHANGES,
                             "the campaign's base (configs/mobility-drive.toml)")
    assert seen == list(ARMS), seen


def runs(folder: Path) -> dict[str, Path]:
    """The complete points of the campaign folder, by arm."""
    return {e["arm"]: e["dir"] for e in complete_points(folder)}


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    out = Path(sys.argv[1]).resolve()
    total = float(sys.argv[2]) if len(sys.argv) == 3 else TOTAL_S
    write_campaign(out / "drive.toml", text(out, total), lambda path: check(path, out, total))
