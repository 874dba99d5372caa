"""Load in capacity units, without a node: the experiment file's utilisation,
speed and period keys (each mistake named by its key), utilisation turned
into rates from a calibration, the cache key, and the bursty arrivals'
schedule (the stated rate stays the long-run mean; every endpoint bursts at
once). The measuring itself is tests/orchestrator/test_calibration_live.py."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from continuum import calibration
from continuum import experiment
from continuum.errors import ConfigError
from workloads.arrivals import OnOff

BASE = """
[experiment]
name = "cal"
duration_s = 5

[nodes.edge]
cpus = {cpus}
{node}

[mobile]
uplink = "const-48mbps"
downlink = "const-48mbps"

[workload]
app = "{app}"
{workload}
"""


def load(tmp_path: Path, cpus: float = 1.0, node: str = "", app: str = "image_classification", workload: str = "", extra: str = ""):
    f = tmp_path / "e.toml"
    f.write_text(BASE.format(cpus=cpus, node=node, app=app, workload=workload) + extra)
    return experiment.load(f)


def problems(tmp_path: Path, **kw) -> str:
    with pytest.raises(ConfigError) as e:
        load(tmp_path, **kw)
    return str(e.value)


def test_utilisation_and_rate_exclude_each_other_by_key(tmp_path):
    msg = problems(tmp_path, workload="rate = 5\nutilisation = 0.9")
    assert "workload.utilisation" in msg and "not both" in msg
    mix = """
[workload.apps.a]
app = "augmented_reality"
rate = 3
utilisation = 0.5
"""
    msg = problems(tmp_path, extra=mix)
    assert "workload.apps.a.utilisation" in msg
    msg = problems(tmp_path, app="custom", workload="utilisation = 0.5\n[workload.custom]\nendpoint_command = ['x']\nserver_command = ['y']")
    assert "workload.utilisation" in msg and "give rate instead" in msg
    assert "workload.onoff" in problems(tmp_path, workload="[workload.onoff]\non_s = 2")


def test_a_group_states_its_own_load_or_takes_the_files(tmp_path):
    mix = """
[workload.apps.a]
app = "augmented_reality"
rate = 3

[workload.apps.b]
app = "video_conferencing"
"""
    spec = load(tmp_path, workload="utilisation = 0.7", extra=mix)
    a, b = spec.apps
    assert (a.workload.rate, a.workload.utilisation) == (3, None)
    assert b.workload.utilisation == 0.7


def test_speed_gets_a_short_period_and_a_period_too_short_for_the_quota_is_named(tmp_path):
    spec = load(tmp_path, cpus=1.0, node="speed = 0.5")
    edge = spec.offload_node
    assert (edge.period_us, edge.speed, edge.quota_us) == (10_000, 0.5, 5_000)
    plain = load(tmp_path, cpus=0.25).offload_node
    assert (plain.period_us, plain.quota_us) == (100_000, 25_000)
    tiny = load(tmp_path, cpus=0.05, node="speed = 0.5").offload_node  # 10 ms would give 0.25 ms of quota
    assert tiny.quota_us >= 1000 and tiny.period_us == 40_000
    msg = problems(tmp_path, cpus=0.25, node="cpu_period_us = 2000")
    assert "nodes.edge.cpu_period_us" in msg and "4000" in msg


def _calibrated(capacity: float, app: str = "image_classification", name: str = "image_classification"):
    return calibration.Calibration(app=name, workload=app, node="edge0", source="fresh", made="now", key="k", cpu_model="cpu",
                                   limits={}, concurrency=1, requests=4, window_s=1.0, capacity_rps=capacity,
                                   service_ms=(10.0, 10.0, 20.0, 40.0), cpu_ms_per_request=10.0, model_load_s=1.0)


def test_utilisation_becomes_a_rate_per_endpoint_and_a_rate_an_offered_utilisation(tmp_path):
    spec = load(tmp_path, workload="utilisation = 0.9", node="", extra="")
    spec = dataclasses.replace(spec, apps=tuple(dataclasses.replace(a, endpoints=("endpoint0", "endpoint1")) for a in spec.apps))
    found = {"image_classification": _calibrated(20.0)}
    done = calibration.apply(spec, found)
    assert done.apps[0].workload.rate == pytest.approx(9.0)  # 0.9 x 20/s over two endpoints
    assert done.workload.rate == pytest.approx(9.0)
    assert calibration.offered(done.apps[0], found["image_classification"]) == pytest.approx(0.9)
    c = found["image_classification"]
    assert c.summary["median"] == 15.0 and c.summary["p99"] == 40.0 and c.summary["mean"] == 20.0
    with pytest.raises(Exception, match="not calibrated"):
        calibration.apply(spec, {})
    lines = calibration.describe(done, found)
    assert "load (utilisation) 0.90" in lines[0] and "18.00/s" in lines[0]


def test_the_cache_key_follows_what_decides_the_service_time(tmp_path):
    spec = load(tmp_path, workload="utilisation = 0.9")
    app, node = spec.apps[0], spec.offload_node
    k = calibration.key(spec, app, node, "cpu A")
    assert k == calibration.key(spec, app, node, "cpu A")
    assert k != calibration.key(spec, app, node, "cpu B")
    assert k != calibration.key(spec, app, dataclasses.replace(node, cpus=0.5), "cpu A")
    assert k != calibration.key(spec, app, dataclasses.replace(node, speed=0.5), "cpu A")
    other = load(tmp_path, workload="utilisation = 0.9\n[workload.params]\nbank_size = 3")
    assert k != calibration.key(other, other.apps[0], other.offload_node, "cpu A")
    same_load = load(tmp_path, workload="utilisation = 0.5")  # the load is not what is measured
    assert k == calibration.key(same_load, same_load.apps[0], same_load.offload_node, "cpu A")


def _counts(o: OnOff, rate: float, seconds: float, seed: int) -> list[float]:
    """Arrival times (s after the epoch) of a Poisson process at `rate` in o's operational time."""
    rng = random.Random(seed)
    t, out = float(o.epoch_ns), []
    while True:
        t = o.after(t, rng.expovariate(1.0) / rate)
        if t >= o.epoch_ns + seconds * 1e9:
            return out
        out.append((t - o.epoch_ns) / 1e9)


def test_bursty_arrivals_keep_the_mean_rate_and_burst_at_the_same_times_everywhere():
    o = OnOff(on_s=5, off_s=15, ratio=8, jitter=0.2, seed=3, epoch_ns=10**18)
    assert o.calm * 15 + o.burst * 5 == pytest.approx(20)  # the intensity's mean is the stated rate
    arrivals = _counts(o, 10.0, 2000.0, seed=1)
    assert len(arrivals) / 2000.0 == pytest.approx(10.0, rel=0.05)
    in_burst = [a for a in arrivals if o.intensity(int(o.epoch_ns + a * 1e9)) == o.burst]
    burst_time = sum(min(end, 2000.0) - start for start, end, level in (o._period(i) for i in range(200))
                     if level == o.burst and start < 2000.0)
    calm_rate = (len(arrivals) - len(in_burst)) / (2000.0 - burst_time)
    assert len(in_burst) / burst_time / calm_rate == pytest.approx(8, rel=0.15)
    twin = OnOff(on_s=5, off_s=15, ratio=8, jitter=0.2, seed=3, epoch_ns=10**18)  # another endpoint, its own gaps
    assert [twin._period(i) for i in range(20)] == [o._period(i) for i in range(20)]
    other = OnOff(on_s=5, off_s=15, ratio=8, jitter=0.2, seed=4, epoch_ns=10**18)
    assert [other._period(i) for i in range(20)] != [o._period(i) for i in range(20)]
    # after() is additive: two steps land where one step of their sum does
    t1 = o.after(o.after(o.epoch_ns + 3e9, 4.0), 9.0)
    assert t1 == pytest.approx(o.after(o.epoch_ns + 3e9, 13.0), abs=1e3)
