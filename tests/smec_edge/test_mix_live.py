"""SMEC's edge manager with two applications on one edge node (issue #19),
on live runs: AR (latency-critical, SLO 100 ms) offered at 1.15 times what
the 1-CPU edge node serves of it (calibrated there, issue #36: 32 frames/s
overloaded one machine and not the next), beside a best-effort file
transfer. Under Linux's scheduler alone AR's queue only grows (median
seconds); with SMEC's manager (quota mode: CPU weight per app, and early
drop) AR's latency stays bounded and part of its requests meet the SLO,
and the file transfer still moves. Under a sustained overload, dropping
only what has spent its budget lets the queue grow until the answered
requests finish near their SLO, so the share met varies from run to run
(11% to 46% over four runs of this test and its 0.5-CPU first version;
Linux alone: 0% every time): the assertions are the direction, a margin
below the lowest, and the bound on latency. Both runs are the same
file but for [edge.manager]."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")

CONFIG = """
[experiment]
name = "{name}"
duration_s = 12
warmup_s = 2
output = "{out}"

[nodes.edge]
cpus = 1.0
memory = "2G"

[mobile]
uplink = "const-48mbps"
downlink = "const-48mbps"

[workload]
timeout_s = 20

[workload.apps.ar]
app = "augmented_reality"
endpoints = 1
utilisation = 1.15
slo_ms = 100

[workload.apps.ft]
app = "file_transfer"
endpoints = 1
rate = 2
best_effort = true
payload = {{ distribution = "fixed", mean_bytes = 200000, min_bytes = 200000, max_bytes = 200000 }}
"""
SMEC = """
[edge.manager]
kind = "smec"
unit_cpus = 0.125
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory, continuum_run):
    tmp = tmp_path_factory.mktemp("mix")
    out = {}
    for key, name, extra in (("default", "mix-default", ""), ("smec", "mix-smec", SMEC)):
        cfg = tmp / f"{name}.toml"
        cfg.write_text(CONFIG.format(name=name, out=tmp / "runs") + extra)
        out[key] = continuum_run(cfg, tmp, name)
    return out


def _measured(run_dir: Path) -> pd.DataFrame:
    df = pd.read_csv(run_dir / "requests.csv")
    return df[df["phase"] == "measure"]


def test_each_server_serves_only_its_own_app(runs):
    for run_dir in runs.values():
        for app, endpoint in (("ar", "endpoint0"), ("ft", "endpoint1")):
            served = pd.read_csv(run_dir / "raw" / f"server-edge0-{app}.csv")
            assert len(served) and set(served["endpoint"]) == {endpoint}
        assert set(_measured(run_dir).groupby("app")["endpoint"].first()) == {"endpoint0", "endpoint1"}


def test_the_load_overloads_the_edge_by_its_own_calibration(runs):
    for run_dir in runs.values():
        load = pd.read_json(run_dir / "summary.json", typ="series")["load"]["ar"]
        assert load["utilisation_offered"] == pytest.approx(1.15, rel=1e-3), load


def test_smec_keeps_part_of_the_slo_the_default_edge_misses(runs):
    ar = {k: pd.read_json(v / "summary.json", typ="series")["apps"]["ar"] for k, v in runs.items()}
    met = {k: float(a["slo_met"]) for k, a in ar.items()}
    assert met["smec"] >= met["default"] + 0.05, met
    assert ar["default"]["e2e_ms_p50"] >= 500, "Linux alone: the queue grows for the whole run"
    assert ar["smec"]["e2e_ms_p99"] <= 300, "SMEC: answered requests stay near their SLO"


def test_best_effort_work_still_progresses(runs):
    for key, run_dir in runs.items():
        ft = _measured(run_dir).query("app == 'ft'")
        assert (ft["status"] == "ok").mean() >= 0.5 and not (ft["status"] == "early_drop").any(), (key, ft["status"].value_counts())


def test_early_drop_fires_exactly_when_the_budget_is_spent_and_the_urgent_app_gains(runs):
    run_dir = runs["smec"]
    edge = pd.read_csv(run_dir / "raw" / "smec-edge0-ar.csv").dropna(subset=["budget_ns"])
    refresh = edge["drop_reason"].eq("refresh")
    assert ((edge["budget_ns"] <= 0) & ~refresh).eq(edge["dropped"] == 1).all()
    assert edge["dropped"].sum() > 0
    assert pd.read_csv(run_dir / "raw" / "smec-edge0-ft.csv")["budget_ns"].isna().all(), "best effort: no budgets"
    dec = pd.read_csv(run_dir / "raw" / "smec-decisions.csv").dropna(subset=["cpus"])
    ar = dec[dec["app"] == "ar"]
    assert ar["why"].str.startswith("urgent").any() and ar["units"].max() >= 2, ar
    assert not dec.query("app == 'ft'")["why"].str.startswith("urgent").any()

