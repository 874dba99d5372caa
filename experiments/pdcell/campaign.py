"""The pDCell experiment as two campaigns (docs/campaigns.md), each
configs/pdcell-mrfs.toml with a [sweep] of named arms:
    campaign.py PART RESULTS_FOLDER     # writes RESULTS_FOLDER/PART.toml, prints its path
PART fig9: the seven arms at the configs' load of 0.6 (the paper's Fig. 9
shape); PART load: pDCell-MRFS, TCP CUBIC and TCP BBR at loads 0.3 and 0.9
([workload.params] load). Each arm sets the keys in which its shipped
config (configs/pdcell-{mrfs,pfs,tcp,phost}.toml) differs from pdcell-mrfs;
`check()` holds them together: every arm's point must be its shipped
config, key for key, but for the run's name and folder (and the variations
the arm is: NewReno or BBR for TCP's CUBIC, the 3 MB buffer for pHost)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import tomli_w

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE.parent))
from points import complete_points, flat, write_campaign  # noqa: E402

BASE = REPO / "configs" / "pdcell-mrfs.toml"
TCP = {"cell.downlink": "pf", "transport.kind": "tcp", "mobile.downlink_queue": "droptail",
       "mobile.downlink_queue_args": "bytes=1400000", "unset": ["transport.buffer_kb"]}
ARMS: dict[str, dict] = {
    "mrfs": {"cell.downlink": "mrfs"},
    "pfs": {"cell.downlink": "pf"},
    "tcp": {**TCP, "transport.congestion_control": "cubic"},
    "tcp-reno": {**TCP, "transport.congestion_control": "reno"},
    "tcp-bbr": {**TCP, "transport.congestion_control": "bbr"},
    "phost-inf": {"cell.downlink": "pf", "transport.kind": "phost", "transport.buffer_kb": "inf"},
    "phost-3mb": {"cell.downlink": "pf", "transport.kind": "phost", "transport.buffer_kb": 3000},
}
# each arm's shipped config, and what the arm varies of it
SHIPPED = {"mrfs": ("pdcell-mrfs", {}), "pfs": ("pdcell-pfs", {}), "tcp": ("pdcell-tcp", {}),
           "tcp-reno": ("pdcell-tcp", {"transport.congestion_control": "reno"}),
           "tcp-bbr": ("pdcell-tcp", {"transport.congestion_control": "bbr"}),
           "phost-inf": ("pdcell-phost", {}), "phost-3mb": ("pdcell-phost", {"transport.buffer_kb": 3000})}
PARTS = {"fig9": (list(ARMS), []), "load": (["mrfs", "tcp", "tcp-bbr"], [0.3, 0.9])}
CONFIG_LOAD = 0.6  # [workload.params] load in the configs: fig9's


def text(part: str, out: Path) -> str:
    """The campaign file of PART, its runs under OUT/runs (campaign folder OUT/runs/campaign-pdcell-PART)."""
    arms, loads = PARTS[part]
    base = BASE.read_text().replace('name = "pdcell-mrfs"', f'name = "pdcell-{part}"\noutput = "{out / "runs"}"', 1)
    assert f'name = "pdcell-{part}"' in base
    sweep: dict = {"arms": {a: ARMS[a] for a in arms}}
    if loads:
        sweep["workload.params.load"] = loads
    return base + "\n" + tomli_w.dumps({"sweep": sweep})


def check(part: str, path: Path) -> None:
    """Every point of the campaign is its arm's shipped config, key for key, but for the run's name and folder."""
    from continuum.campaign import sweep

    ignore = {"experiment.name", "experiment.output"}
    for p in sweep.points(path):
        name, varied = SHIPPED[p.arm or ""]
        want = {**flat(tomllib.loads((REPO / "configs" / f"{name}.toml").read_text())), **varied, **p.values}
        got = flat(tomllib.loads(p.text))
        diff = {k for k in set(want) | set(got) if k not in ignore and want.get(k) != got.get(k)}
        assert not diff, f"{path} point {p.index} ({p.label()}) differs from configs/{name}.toml in {sorted(diff)}"
        load = got["workload.params.load"]
        assert p.values or load == CONFIG_LOAD, f"{name}.toml lost its load of {CONFIG_LOAD}"


def points(folder: Path) -> list[dict]:
    """The complete points of a campaign folder: arm, load and run folder."""
    return [{"arm": e["arm"], "load": float(e["values"].get("workload.params.load", CONFIG_LOAD)), "dir": e["dir"]}
            for e in complete_points(folder)]


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in PARTS:
        raise SystemExit(__doc__)
    part, out = sys.argv[1], Path(sys.argv[2]).resolve()
    write_campaign(out / f"{part}.toml", text(part, out), lambda path: check(part, path))
