"""SMEC's edge manager on a live run (issue #19): W1 offered at 1.3 times
what an edge server of 0.5 CPU can serve (calibrated on the node, issue
#36: a rate in requests/s overloaded it on one machine and not on the
next), so the starting quota cannot keep up; SMEC's manager sees the
budgets shrink, raises the quota within its cool-down, and gives it back
when the server uses less than 60% of it. The suite's run is the idle
variant; with CONTINUUM_TEST_STRESS=hog the same run beside a CPU hog on
one core (calibrated under the hog), with CONTINUUM_TEST_STRESS=half-speed
the edge's cores emulated at half speed (tests/stress.py: ~95 s each,
more than the test command's 20-minute budget carries three times). (The same load under Linux's
scheduler alone, side by side with SMEC, is tests/smec_edge/test_mix_live.py
for a mix and experiments/smec at length.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from premise import premise

from stress import STRESS

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")
SLO_MS, URGENT_MS = 150, 50

CONFIG = """
[experiment]
name = "{name}"
duration_s = 9
warmup_s = 2
output = "{out}"

[nodes.edge]
cpus = {cpus}
{node}

[mobile]
uplink = "const-48mbps"
downlink = "const-48mbps"

[workload]
app = "image_classification"
utilisation = {utilisation}
timeout_s = 30

[workload.payload]
min_bytes = 10000
max_bytes = 30000

[workload.params]
bank_size = 8
"""
SMEC = """
[edge.manager]
kind = "smec"
slo_ms = {slo}
urgency_ms = {urgent}
max_cpus = 2.0
"""


OFFERED = 1.3  # x what the starting quota serves
# (the edge's CPUs, more of its keys): at half speed the node has twice the CPUs, so the kernel's quota
# (0.5 CPU) and with it the model's load time stay those of the other variants. (At 0.25 CPU the model
# loaded in 28 s, twice: the calibration's and the server's.)
QUOTA = 0.5
VARIANTS = {"idle": (QUOTA, ""), "hog": (QUOTA, ""), "half-speed": (2 * QUOTA, "speed = 0.5")}
VARIANT = STRESS or "idle"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, continuum_run):
    variant = VARIANT
    tmp = tmp_path_factory.mktemp(f"manager-{variant}")
    name = f"edge-smec-{variant}"
    cfg = tmp / f"{name}.toml"
    cpus, node = VARIANTS[variant]
    cfg.write_text(CONFIG.format(name=name, out=tmp / "runs", cpus=cpus, node=node, utilisation=OFFERED)
                   + SMEC.format(slo=SLO_MS, urgent=URGENT_MS))
    # under the session's hog (conftest.py), calibration measures what the busier machine serves
    run_dir = continuum_run(cfg, tmp, name, *(["--recalibrate"] if variant == "hog" else []))
    return {"smec": run_dir}


def _slo_met(run_dir: Path) -> float:
    df = pd.read_csv(run_dir / "requests.csv")
    m = df[df["phase"] == "measure"]
    return float(((m["status"] == "ok") & (m["e2e_ms"] <= SLO_MS)).mean())


def test_smec_keeps_the_slo_of_a_load_the_starting_quota_cannot_carry(runs):
    man = json.loads((runs["smec"] / "manifest.json").read_text())
    c = man["calibration"]["apps"]["image_classification"]
    # the premise, from the calibration made in this run's conditions: the load is past what the quota serves
    assert c["utilisation"] == pytest.approx(OFFERED, rel=1e-3) and c["limits"]["cpus"] * c["limits"]["speed"] == QUOTA, c
    load = json.loads((runs["smec"] / "summary.json").read_text())["load"]["image_classification"]
    premise("served / the starting quota's calibrated capacity", load["served_rps"] / c["capacity_rps"], 1.05,
            detail=f"the server never got past the starting quota's capacity: {load}")
    assert _slo_met(runs["smec"]) >= 0.9, _slo_met(runs["smec"])


def test_the_manager_raises_the_quota_on_urgency_and_returns_it_when_idle(runs):
    run_dir = runs["smec"]
    dec = pd.read_csv(run_dir / "raw" / "smec-decisions.csv").dropna(subset=["cpus"])  # not the server's hello
    urgent, idle = dec[dec["why"].str.startswith("urgent")], dec[dec["why"].str.startswith("idle")]
    assert len(urgent) >= 1 and len(idle) >= 1, dec
    node = json.loads((run_dir / "manifest.json").read_text())["nodes"]["edge0"]
    # one 0.25-CPU unit at least, max_cpus at most; the manager's log is in the kernel's CPUs (x speed)
    assert dec["cpus"].between(0.25 * node["speed"], 2.0 * node["speed"]).all(), (node, dec["cpus"])
    assert (dec["t_ns"].diff().dropna().iloc[1:] >= 100e6).all(), "a change waits out the 100 ms cool-down"
    # the first urgent budget the server reported moved the quota at once
    df = pd.read_csv(run_dir / "requests.csv").dropna(subset=["budget_ms"])
    first = df[df["budget_ms"] < URGENT_MS]["t_server_start"].min()
    assert 0 <= urgent["t_ns"].iloc[0] - first <= 100e6, (first, urgent["t_ns"].iloc[0])
    assert (run_dir / "plots" / "smec_manager.png").stat().st_size > 10_000
    assert not (run_dir / "raw" / "smec-manager.sock").exists()  # torn down
