"""The response-caching arms (the paper's Fig. 14) as one campaign
(docs/campaigns.md): configs/mecanic-cache.toml with a [sweep] of named
arms, only the cache and the host's load changed:
    campaign.py RESULTS_FOLDER      # writes RESULTS_FOLDER/cache.toml, prints its path

host: no cache (the arm unsets [edge.nic.cache]), every download served by
edge0's file store. nic: the cache on edge0's NIC. -stress: edge0 also
serves other clients' downloads (2 endpoints x 3/s of the same 4 MB files
through edge0's broker, from a bank of 64), the paper's proxy stress in our
terms: the host is busy, the NIC is not; the cache then holds only the
measured download's answers (apps = ["dl"]). The stress arms turn the file's
one [workload] into two apps ([workload.apps.dl], [workload.apps.stress]),
so they unset the single app's keys. `check()` holds the arms to this: a
point differs from the shipped file only in those keys."""

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

BASE = REPO / "configs" / "mecanic-cache.toml"
STRESS_ENDPOINTS, STRESS_RATE = 2, 3.0  # other clients' downloads through edge0's broker: 2 x 3/s of 4 MB


def _stress(base: dict) -> dict:
    """The single download app as the mix's "dl", beside the stress app; the single app's keys unset."""
    w = base["workload"]
    dl = {"app": w["app"], "endpoints": base["nodes"]["endpoint"]["count"], "rate": w["rate"], "best_effort": True,
          "params": dict(w["params"])}
    stress = {"app": w["app"], "endpoints": STRESS_ENDPOINTS, "rate": STRESS_RATE, "best_effort": True,
              "params": {"bank_size": 64, "file_bytes": w["params"]["file_bytes"]}}
    return {"workload": {"apps": {"dl": dl, "stress": stress}},
            "unset": ["workload.app", "workload.offload", "workload.rate", "workload.timeout_s", "workload.params",
                      "nodes.endpoint.count"]}


def arms() -> dict[str, dict]:
    base = tomllib.loads(BASE.read_text())
    stress = _stress(base)
    return {
        "host": {"unset": ["edge.nic.cache"]},
        "nic": {"edge.nic.cache.capacity_mb": base["edge"]["nic"]["cache"]["capacity_mb"]},
        "host-stress": {**stress, "unset": [*stress["unset"], "edge.nic.cache"]},
        "nic-stress": {**stress, "edge.nic.cache.apps": ["dl"]},
    }


ARMS = ("host", "nic", "host-stress", "nic-stress")


def text(out: Path) -> str:
    """The campaign file, its runs under OUT/runs (campaign folder OUT/runs/campaign-mecanic-cache)."""
    base = BASE.read_text().replace('name = "mecanic-cache"', f'name = "mecanic-cache"\noutput = "{out / "runs"}"', 1)
    return base + "\n" + tomli_w.dumps({"sweep": {"arms": arms()}})


# what each arm may change of the shipped file (flattened keys, prefixes for tables)
CHANGES = {"host": ("edge.nic.cache.",), "nic": (),
           "host-stress": ("edge.nic.cache.", "workload.", "nodes.endpoint.count"),
           "nic-stress": ("edge.nic.cache.apps", "workload.", "nodes.endpoint.count")}


def check(path: Path) -> None:
    """Every point is the shipped file but for the run's folder and what its arm changes."""
    seen = check_arm_changes(path, tomllib.loads(BASE.read_text()), CHANGES, "configs/mecanic-cache.toml", ignore=("experiment.output",))
    assert seen == list(ARMS), seen


def runs(folder: Path) -> dict[str, Path]:
    """The complete points of the campaign folder, by arm."""
    return {e["arm"]: e["dir"] for e in complete_points(folder)}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = Path(sys.argv[1]).resolve()
    write_campaign(out / "cache.toml", text(out), check)
