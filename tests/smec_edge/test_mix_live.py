"""SMEC's edge manager with two applications on one edge node (issue #19),
on live runs: AR (latency-critical) offered at twice what the 1-CPU
edge node serves of it (calibrated there, issue #36: 32 frames/s
overloaded one machine and not the next; at 1.15 a run on this shared
VM, whose speed drifts by minutes, served AR 12% faster than its
calibration a minute before had; at 1.2 a fresh-clone run's served it
18% faster, at 1.3 runs served it 22-43% faster than calibrated: barely
overloaded, the queue did not grow; at 1.5 one served it 45% faster. Here the calibration's service time
came out longer than the run's more often than not (issue #36's note);
under the hog one SMEC run at 1.3 had its server 3.4x slower than
calibrated, the endpoint taking half of the one free core, and met 4%), beside a best-effort file
transfer. AR's SLO is four times its service time calibrated on the node
(100 ms where AR took 24 ms; a fixed 100 ms left a machine whose AR took
60 ms, or the same edge at half speed, no room to meet it at any load), so
the SLO leaves the same slack on any machine. Under Linux's scheduler alone AR's queue only grows (median
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

import math
import os
from pathlib import Path

import pandas as pd
import pytest
from premise import premise
from calibrate_first import calibrate_first
from stress import edge_config

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
timeout_s = 8

[workload.apps.ar]
app = "augmented_reality"
endpoints = 1
utilisation = {overload}
slo_ms = {slo}

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


# timeout_s = 8: Linux alone's queue reaches the timeout within the window (at 20 s, AR's last answers came
# 20 s after it, which the run waited out: 17 s of the test command), and a timed-out request counts as
# waiting longer than any answered one (test_smec_keeps_part_of_the_slo_the_default_edge_misses)
SLO_SERVICE_TIMES = 4  # AR's SLO in units of its calibrated median service time
# AR's load, x its calibrated capacity: at 1.5 a fresh-clone run served AR 1.45x as fast as its calibration
# (calibrated in one of this VM's slow phases: 58 ms a request, then 90-97 ms for two seconds, then 56), and
# offered only 1.03x what the server served there
OVERLOAD = 2.0


def ar_slo_ms(tmp: Path) -> float:
    """`continuum calibrate` of the file, as a user would; the runs then take AR's rate from that cache entry."""
    cfg = tmp / "calibrate.toml"
    cfg.write_text(edge_config(CONFIG.format(name="mix-calibrate", out=tmp / "runs", slo=100, overload=OVERLOAD)))
    found = calibrate_first(cfg)
    assert "ar" in found, found
    return float(math.ceil(SLO_SERVICE_TIMES * found["ar"].summary["median"]))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, continuum_run):
    tmp = tmp_path_factory.mktemp("mix")
    slo = ar_slo_ms(tmp)
    out = {}
    for key, name, extra in (("default", "mix-default", ""), ("smec", "mix-smec", SMEC)):
        cfg = tmp / f"{name}.toml"
        cfg.write_text(CONFIG.format(name=name, out=tmp / "runs", slo=slo, overload=OVERLOAD) + extra)
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
        assert load["utilisation_offered"] == pytest.approx(OVERLOAD, rel=1e-3), load
        # the premise in the run itself: what was offered against how fast the server ran there
        in_run = load["utilisation_offered"] * load["capacity_rps"] * load["run_mean_ms"] / 1000
        premise("AR offered / served in the run", in_run, 1.05,
                detail=(f"{run_dir.name}: it ran {load['calibrated_mean_ms'] / load['run_mean_ms']:.2f} x as fast as its "
                        f"calibration: not an overload, so this run shows nothing; {load}"))


def test_smec_keeps_part_of_the_slo_the_default_edge_misses(runs):
    ar = {k: pd.read_json(v / "summary.json", typ="series")["apps"]["ar"] for k, v in runs.items()}
    met = {k: float(a["slo_met"]) for k, a in ar.items()}
    slo = float(ar["smec"]["slo_ms"])
    assert met["smec"] >= met["default"] + 0.05, met
    # Linux alone: the queue grows for the whole run. The wait grows by (rho - 1) s each second whatever the
    # service time, but rho in the run is OVERLOAD times how fast the server ran there against its calibration
    # (a median over 500 ms held where it ran slower, and missed at 454 ms where it ran at its calibrated
    # speed), so the check is the growth itself: the last third's median at least 3x the first third's, or
    # (where the warm-up already left a long queue: 1172 ms, then 2590 ms, in one fresh-clone run) at least
    # twice the SLO (8 service times) above it; and at least twice the SLO. A request that timed out waited
    # longer than any answered one (under the hog the run served AR 2-3x slower than its calibration alone,
    # 5.6x overloaded, and the last third all timed out)
    ar_default = _measured(runs["default"]).query("app == 'ar'").sort_values("t_drawn")
    waited = ar_default["e2e_ms"].where(ar_default["status"] != "timeout", math.inf)
    third = len(ar_default) // 3
    early, late = waited.iloc[:third].median(), waited.iloc[-third:].median()
    grows = late >= 3 * early or late - early >= 2 * slo
    assert grows and late >= 2 * slo, ("Linux alone: the queue grows for the whole run", early, late, slo)
    assert ar["smec"]["e2e_ms_p99"] <= 3 * slo, ("SMEC: answered requests stay near their SLO", slo, ar["smec"]["e2e_ms_p99"])


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

