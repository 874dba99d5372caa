"""The A/B's requests part as one campaign (docs/campaigns.md):
configs/quickstart.toml, three repetitions of 20 s, with a [sweep] of the
scenario's traces (uplink and downlink zipped: quickstart, lte, g1200) and
the emulator (mahimahi-link, upstream mm-link with mahimahi-patches/):
    campaign.py RESULTS_FOLDER     # writes RESULTS_FOLDER/runs.toml, prints its path
`check()`: each point is the quickstart but for the run's name, folder,
window, repetitions, the scenario's traces and the emulator."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import tomli_w

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE.parent))
from points import flat, set_timing, write_campaign  # noqa: E402

BASE = REPO / "configs" / "quickstart.toml"
TRACES = {  # scenario -> (uplink, downlink): archive names
    "quickstart": ("const-12mbps", "const-48mbps"),
    "lte": ("mahimahi-verizon-lte-short", "mahimahi-verizon-lte-short"),
    "g1200": ("const-1200mbps", "const-1200mbps"),
}
EMULATORS = ("mahimahi-link", "mahimahi")
NAME = "mahimahi-ab"
SET = {"experiment.duration_s": 20, "experiment.repetitions": 3}


def text(out: Path) -> str:
    t = set_timing(BASE.read_text(), SET["experiment.duration_s"])
    t = t.replace('name = "quickstart"', f'name = "{NAME}"', 1).replace('output = "runs"', f'output = "{out / "runs"}"', 1)
    t = t.replace("repetitions = 1\n", f"repetitions = {SET['experiment.repetitions']}\n", 1)
    sweep = {"mobile.uplink": [u for u, _ in TRACES.values()], "mobile.downlink": [d for _, d in TRACES.values()],
             "zip": [["mobile.uplink", "mobile.downlink"]], "mobile.emulator": list(EMULATORS)}
    return t + "\n" + tomli_w.dumps({"sweep": sweep})


def check(path: Path) -> None:
    """Every point is the quickstart but for what the campaign sets; the points are the scenarios x emulators."""
    from continuum.campaign import sweep

    shipped = flat(tomllib.loads(BASE.read_text()))
    allowed = {"experiment.name", "experiment.output", *SET, "experiment.seed", "mobile.uplink", "mobile.downlink", "mobile.emulator"}
    got = []
    for p in sweep.points(path):
        point = flat(tomllib.loads(p.text))
        diff = {k for k in set(shipped) | set(point) if shipped.get(k) != point.get(k)}
        assert diff <= allowed, f"{path} point {p.index} changes {sorted(diff - allowed)} of configs/quickstart.toml"
        assert all(point[k] == v for k, v in SET.items()), p.label()
        got.append((scenario(p.values), p.values["mobile.emulator"]))
    assert got == [(s, e) for s in TRACES for e in EMULATORS], got


def scenario(values: dict) -> str:
    """The scenario whose traces a point's values are."""
    return next(s for s, t in TRACES.items() if t == (values["mobile.uplink"], values["mobile.downlink"]))


def group(s: str, emulator: str) -> str:
    """`continuum compare --campaign`'s name for the scenario's runs on one emulator."""
    up, down = TRACES[s]
    return f"mobile.uplink={up},mobile.downlink={down},mobile.emulator={emulator}"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--group":  # the compare groups of a scenario, one per line
        print("\n".join(group(sys.argv[2], e) for e in EMULATORS))
        raise SystemExit(0)
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = Path(sys.argv[1]).resolve()
    write_campaign(out / "runs.toml", text(out), check)
