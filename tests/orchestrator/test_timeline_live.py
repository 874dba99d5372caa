"""[[timeline]] live: one netns run whose link changes while requests flow
(file transfer, 5 a second): a core-delay step, an outage that keeps the
queue, then an uplink trace switch, then a load step. Each change is checked where it acts:
the requests' uplink and downlink times rise by the step, the link logs
hold no delivery and no opportunity during the outage and deliveries after
it, the switched trace's opportunities per second follow the new trace from
the switch on; the result folder names every change, when it applied and
the interruption it caused."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

import hoststate
from test_run import run

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")

STEP_S, OUTAGE_S, OUTAGE_LEN_S, SWITCH_S, LOAD_S = 3.0, 6.0, 1.5, 9.0, 10.5
DELAY_BEFORE_MS, DELAY_AFTER_MS = 5.0, 30.0

EXPERIMENT = f"""
[experiment]
name = "timeline"
seed = 2
duration_s = 12
warmup_s = 1
output = "{{out}}"

[nodes.endpoint]
cpus = 1.0
memory = "256M"

[nodes.edge]
cpus = 1.0
memory = "256M"

[mobile]
uplink = "const-12mbps"
downlink = "const-48mbps"

[core]
edge = {DELAY_BEFORE_MS}

[workload]
app = "file_transfer"
rate = 5.0              # 200 ms apart, more than the round trip after the step: no request waits on
timeout_s = 5           # the last one's ACK (Nagle), so each direction shows the step once

[workload.payload]
min_bytes = 2000
max_bytes = 4000         # a few segments: the step adds one one-way delay to each direction, not RTTs of a window

[[timeline]]
t_s = {STEP_S}
core_delay_ms = {DELAY_AFTER_MS}

[[timeline]]
t_s = {OUTAGE_S}
outage_s = {OUTAGE_LEN_S}
queue = "keep"

[[timeline]]
t_s = {SWITCH_S}
ue = "endpoint0"
uplink = "every6ms.trace"

[[timeline]]
t_s = {LOAD_S}
rate = 10
"""


@pytest.fixture(scope="module")
def timeline_run(tmp_path_factory, root_netns):
    d = tmp_path_factory.mktemp("timeline")
    (d / "every6ms.trace").write_text("6\n")  # one opportunity every 6 ms: 2 Mbit/s
    cfg = d / "timeline.toml"
    cfg.write_text(EXPERIMENT.format(out=d / "runs"))
    before = hoststate.snapshot()
    p, run_dir = run(cfg, d)
    return {"run": run_dir, "stdout": p.stdout, "before": before, "after": hoststate.snapshot()}


def _applied(run_dir) -> pd.DataFrame:
    rows = [line.split(maxsplit=4) for line in (run_dir / "links" / "timeline.log").read_text().splitlines()]
    return pd.DataFrame(rows, columns=["unix_ns", "t_ms", "late_us", "link", "change"]).astype({"unix_ns": "int64", "t_ms": float})


def _log(run_dir, direction: str) -> pd.DataFrame:
    """The link's log, each event at its Unix time (ns)."""
    path = run_dir / "links" / f"endpoint0.{direction}.log"
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    init_ms = int(next(h for h in header if h.startswith("# init timestamp:")).split(":")[1])
    ev = pd.read_csv(path, sep=" ", skiprows=len(header), header=None, names=["t", "ev", "a", "b"], dtype={"ev": str})
    ev["unix_ns"] = (init_ms + ev["t"]) * 1_000_000
    return ev


def test_every_change_applied_on_time_and_the_results_name_it(timeline_run):
    run_dir = timeline_run["run"]
    a = _applied(run_dir)
    assert list(a["t_ms"]) == [STEP_S * 1000, OUTAGE_S * 1000, SWITCH_S * 1000], a
    assert a["change"].tolist()[1] == f"outage {OUTAGE_LEN_S * 1000:.3f} keep"
    # on the link's clock: exactly the planned offsets apart
    assert np.allclose(np.diff(a["unix_ns"]) / 1e9, [OUTAGE_S - STEP_S, SWITCH_S - OUTAGE_S], atol=1e-6), a
    m = json.loads((run_dir / "manifest.json").read_text())
    assert [e["kind"] for e in m["timeline"]] == ["core_delay", "outage", "trace", "load"]
    s = json.loads((run_dir / "summary.json").read_text())["timeline"]
    assert [e["applied"] for e in s] == [1, 1, 1, 1], s
    # nothing answers during the outage: the first answer after it comes when it is over
    assert s[1]["interruption_ms_median"] >= OUTAGE_LEN_S * 1000, s[1]
    assert s[1]["across"] >= 0.5 * 5 * OUTAGE_LEN_S and s[1]["answered"] >= 0.8 * s[1]["across"], s[1]  # kept, then sent
    rows = pd.read_csv(run_dir / "timeline.csv")
    assert len(rows) == 4 and set(rows["endpoint"]) == {"endpoint0"}
    assert "timeline (each change" in timeline_run["stdout"] and "outage 1.5 s (queue kept)" in timeline_run["stdout"]
    for plot in ("latency_over_time.png", "link_endpoint0.png"):
        assert (run_dir / "plots" / plot).stat().st_size > 0


def test_the_core_delay_step_shows_in_both_directions_of_the_requests(timeline_run):
    run_dir = timeline_run["run"]
    t0 = json.loads((run_dir / "manifest.json").read_text())["trace_restarts_unix_ns"][0]
    step = int(_applied(run_dir)["unix_ns"].iloc[0])
    df = pd.read_csv(run_dir / "requests.csv")
    ok = df[df["status"] == "ok"]
    before = ok[(ok["t_drawn"] < step - 0.2e9) & (ok["t_drawn"] > t0)]
    after = ok[(ok["t_published"] > step + 0.1e9) & (ok["t_drawn"] < step + (OUTAGE_S - STEP_S - 0.5) * 1e9)]
    assert len(before) >= 5 and len(after) >= 5, (len(before), len(after))
    added = DELAY_AFTER_MS - DELAY_BEFORE_MS
    for metric in ("uplink_ms", "downlink_ms"):
        rise = after[metric].median() - before[metric].median()
        assert 0.8 * added <= rise <= 1.2 * added, (metric, rise, before[metric].median(), after[metric].median())


def test_the_outage_delivers_nothing_then_the_kept_queue_goes(timeline_run):
    run_dir = timeline_run["run"]
    at = int(_applied(run_dir)["unix_ns"].iloc[1])
    end = at + int(OUTAGE_LEN_S * 1e9)
    for direction in ("uplink", "downlink"):
        ev = _log(run_dir, direction)
        # (2 ms inside each end: the log's times are whole milliseconds since a start in whole milliseconds)
        inside = ev[(ev["unix_ns"] >= at + 2_000_000) & (ev["unix_ns"] < end - 2_000_000)]
        assert not (inside["ev"].isin(["-", "#"])).any(), (direction, inside[inside["ev"].isin(["-", "#"])].head())
        assert (inside["ev"] == "+").any() or direction == "downlink", "requests kept arriving at the uplink"
    up = _log(run_dir, "uplink")
    gone = up[(up["ev"] == "-") & (up["unix_ns"] >= end)]
    assert len(gone) and gone["unix_ns"].iloc[0] < end + 20_000_000, "the kept queue leaves once the outage ends"
    # what waited left after the outage: some departures queued for most of it
    assert gone["b"].astype(float).max() >= 0.8 * OUTAGE_LEN_S * 1000, gone["b"].max()


def test_the_switched_trace_serves_from_the_switch_on(timeline_run):
    run_dir = timeline_run["run"]
    at = int(_applied(run_dir)["unix_ns"].iloc[2])
    up = _log(run_dir, "uplink")
    opp = up[up["ev"] == "#"]
    before = opp[(opp["unix_ns"] >= at - 1e9) & (opp["unix_ns"] < at)]
    after = opp[(opp["unix_ns"] >= at + 0.5e9) & (opp["unix_ns"] < at + 1.5e9)]
    # the log has every opportunity, used or not: the 12-Mbit/s trace's one per ms, then the new one's every 6 ms
    # 1/ms; 1000/6 (a few at each edge: the log's times are whole milliseconds)
    assert len(before) in range(997, 1004) and len(after) in range(164, 170), (len(before), len(after))


def test_the_load_step_doubles_the_requests_from_its_instant(timeline_run):
    """Constant arrivals: 5 a second before the step, 10 after it, counted where they were drawn."""
    run_dir = timeline_run["run"]
    start = json.loads((run_dir / "manifest.json").read_text())["trace_restarts_unix_ns"][0]
    at = start + LOAD_S * 1e9
    drawn = pd.read_csv(run_dir / "requests.csv")["t_drawn"]
    before = ((drawn >= at - 2e9) & (drawn < at)).sum()
    after = ((drawn >= at + 0.05e9) & (drawn < at + 2.05e9)).sum()
    assert before in (9, 10, 11) and after in (19, 20, 21), (before, after)
    rates = pd.read_csv(run_dir / "requests.csv").set_index("t_drawn")["send_rate"]
    assert set(rates[rates.index > at]) == {10.0} and set(rates[rates.index < at - 0.3e9]) == {5.0}


def test_nothing_of_the_run_is_left(timeline_run):
    b, a = timeline_run["before"], timeline_run["after"]
    assert a["namespaces"] == b["namespaces"] and a["cgroups"] == b["cgroups"]
    assert not hoststate.processes(str(timeline_run["run"]))



RELOCATION = """
[experiment]
name = "relocation"
seed = 2
duration_s = 12
warmup_s = 1
output = "{out}"

[nodes.endpoint]
cpus = 1.0
memory = "256M"

[nodes.edge]
count = 2
cpus = 1.0
memory = "256M"

[nodes.cloud]
count = 1
cpus = 1.0
memory = "256M"

[mobile]
uplink = "const-12mbps"
downlink = "const-48mbps"

[core]
edge = 1.0
cloud = 10.0

[workload]
app = "file_transfer"
rate = 10.0             # 100 ms apart, more than the cloud's 20-ms round trip (no request waits on an ACK)
timeout_s = 5

[workload.payload]
min_bytes = 2000
max_bytes = 4000

[edge.manager]          # SMEC's timing and early drops in each server: they follow the service
kind = "smec"
mode = "off"
slo_ms = 2000

[[timeline]]
t_s = 2
node = "edge1"          # edge1 alone farther than its tier: 4 ms one-way
core_delay_ms = 4

[[timeline]]
t_s = 4
relocate = "cloud0"
state_bytes = 2500000   # at 100 Mbit/s: 200 ms, plus 1 + 10 ms across the core
core_rate_mbps = 100

[[timeline]]
t_s = 8
relocate = "edge1"
state_bytes = 500000    # 40 ms, plus 10 + 4 ms
core_rate_mbps = 100
"""
MOVE_S = (1.0 + 10.0) / 1000 + 2_500_000 * 8 / 100e6
MOVE2_S = (10.0 + 4.0) / 1000 + 500_000 * 8 / 100e6


@pytest.fixture(scope="module")
def relocation_run(tmp_path_factory, root_netns):
    d = tmp_path_factory.mktemp("relocation")
    cfg = d / "relocation.toml"
    cfg.write_text(RELOCATION.format(out=d / "runs"))
    before = hoststate.snapshot()
    p, run_dir = run(cfg, d)
    return {"run": run_dir, "before": before, "after": hoststate.snapshot()}


def test_a_relocation_holds_the_requests_of_the_move_then_the_new_node_serves(relocation_run):
    """Stop-and-copy: requests drawn before the move are the edge's, those drawn during it wait at
    the endpoint until its (modelled) end and go to the cloud with every later one; the uplink
    time rises by the cloud's extra one-way core delay (9 ms). A second move, to edge1 (stepped to
    4 ms one-way on its own while edge0 stays at its tier's 1 ms), brings the uplink down by 6 ms."""
    run_dir = relocation_run["run"]
    start = json.loads((run_dir / "manifest.json").read_text())["trace_restarts_unix_ns"][0]
    at, end = start + 4e9, start + (4 + MOVE_S) * 1e9
    at2, end2 = start + 8e9, start + (8 + MOVE2_S) * 1e9
    df = pd.read_csv(run_dir / "requests.csv")
    served = {n: set(pd.read_csv(run_dir / "raw" / f"server-{n}.csv")["request_id"]) for n in ("edge0", "cloud0", "edge1")}
    drawn = df["t_drawn"]
    before, during, mid = df[drawn < at], df[(drawn >= at) & (drawn < end)], df[(drawn >= end) & (drawn < at2)]
    during2, after = df[(drawn >= at2) & (drawn < end2)], df[drawn >= end2]
    assert len(before) >= 30 and len(during) >= 1 and len(mid) >= 30 and len(after) >= 30, \
        (len(before), len(during), len(mid), len(after))
    assert set(before["request_id"]) <= served["edge0"] and set(during["request_id"]) | set(mid["request_id"]) <= served["cloud0"]
    assert set(during2["request_id"]) | set(after["request_id"]) <= served["edge1"]
    assert (df["status"] == "ok").all()
    # held until the move's end, then published at once (20 ms: the endpoint's loop and a busy machine)
    for held, until in ((during, end), (during2, end2)):
        assert ((held["t_published"] >= until) & (held["t_published"] < until + 20e6)).all(), (held["t_published"] - until) / 1e6
    rise = mid["uplink_ms"].median() - before["uplink_ms"].median()
    assert 0.8 * 9.0 <= rise <= 1.2 * 9.0 + 1.0, rise
    fall = mid["uplink_ms"].median() - after["uplink_ms"].median()  # 10 ms to the cloud against edge1's own 4 ms
    assert 0.8 * 6.0 <= fall <= 1.2 * 6.0 + 1.0, fall
    rows = pd.read_csv(run_dir / "timeline.csv")
    assert rows["change"].tolist() == ["edge1 core 4 ms", "to cloud0", "to edge1"] and rows["across"].iloc[1] >= len(during)
    # SMEC's timing followed the service: each node's server estimated the network time of the requests
    # it served (from the endpoint's timing client for that node), and the cloud's estimate is higher
    # by about what the uplink and downlink measured
    for n in ("edge0", "cloud0", "edge1"):
        assert len(pd.read_csv(run_dir / "raw" / f"smec-{n}.csv")) > 0, n
    measured = df[df["phase"] == "measure"]
    for part in (before, mid, after):
        got = measured[measured["request_id"].isin(part["request_id"])]["network_est_ms"]
        assert got.notna().mean() >= 0.9, got.describe()
    est = [measured[measured["request_id"].isin(p["request_id"])]["network_est_ms"].median() for p in (before, mid)]
    true = [measured[measured["request_id"].isin(p["request_id"])]["network_true_ms"].median() for p in (before, mid)]
    assert 0.7 * (true[1] - true[0]) <= est[1] - est[0] <= 1.3 * (true[1] - true[0]) + 1.0, (est, true)
    b, a = relocation_run["before"], relocation_run["after"]
    assert a["namespaces"] == b["namespaces"] and a["cgroups"] == b["cgroups"]
