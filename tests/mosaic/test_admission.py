"""MOSAIC's decisions against hand-computed cases from SPEC-mosaic.md's
formulas: urgency, the starvation guard, confidence and safety margin, the
four admission rules in their order, the matrix's learning and persistence,
the fingerprints, and the baselines' orders. Pure functions on one clock:
no processes, no timing."""

from __future__ import annotations

import math

import pytest

from mosaic import policies
from mosaic.classes import CLASSES, Task
from mosaic.fingerprint import Fingerprints
from mosaic.interference import Interference, confidence, safety
from mosaic.urgency import starving, urgency

MS = 1_000_000
NAMES = [c.name for c in CLASSES]


def task(id_: str, cls: str, arrival_ms: float = 0, deadline_ms: float = 1000, expected_ms: float = 100, priority: int = 2) -> Task:
    return Task(id_, cls, int(arrival_ms * MS), deadline_ms, expected_ms, priority)


def test_the_classes_are_the_papers():
    assert sum(c.share for c in CLASSES) == pytest.approx(1.0)
    assert [(c.tier, c.weight) for c in CLASSES] == [(1, 4.0), (2, 3.0), (2, 3.0), (3, 1.5), (3, 1.5), (4, 0.5)]


def test_urgency_is_weight_over_the_share_of_the_deadline_left():
    t = task("a", "inference_critical", deadline_ms=1000)
    assert urgency(t, 500 * MS) == pytest.approx(4.0 * 1.0 / 0.5)  # half the deadline left: 8
    d = task("b", "dispatch_api", deadline_ms=100, priority=1)
    assert urgency(d, 90 * MS) == pytest.approx(3.0 * 1.5 / 0.1)  # 45
    assert urgency(t, int(999.95 * MS)) == pytest.approx(4.0 / 1e-4)  # r/d = 5e-5 < eps
    assert urgency(t, 1000 * MS) == math.inf and urgency(t, 2000 * MS) == math.inf  # at or past the deadline
    assert urgency(task("c", "log_archive", deadline_ms=1000), 500 * MS) < urgency(t, 500 * MS)  # tier weights order them


def test_the_starvation_guard_fires_after_three_deadlines_of_waiting():
    t = task("a", "log_archive", deadline_ms=30_000)
    assert not starving(t, 89_999 * MS) and starving(t, 90_001 * MS)
    t.started_ns = 10 * MS
    assert not starving(t, 90_001 * MS)  # a started task does not starve


def test_confidence_and_margin():
    assert confidence(0) == 0 and safety(0) == 1.5
    assert confidence(10) == pytest.approx(1 - math.exp(-1))
    assert safety(10) == pytest.approx(1 + math.exp(-1) * 0.5)  # 1.184
    assert safety(1000) == pytest.approx(1.0)


def matrix(values: dict[tuple[str, str], tuple[float, int]], prior: float = 0.0) -> Interference:
    m = Interference(NAMES, prior=prior)
    for k, (x, n) in values.items():
        m.m[k], m.n[k] = x, n
    return m


def test_rule_1_caps_concurrency():
    p = policies.Mosaic(matrix({}), n_max=2)
    running = [task("r1", "analytics_batch"), task("r2", "log_archive")]
    d = p.check(task("c", "dispatch_api"), running, 0)
    assert (d.admit, d.rule) == (False, "concurrency")
    assert p.check(task("c", "dispatch_api"), running[:1], 0).admit


def test_rule_2_the_candidate_must_not_slow_a_running_task_past_tau():
    running = [task("r", "dispatch_api", expected_ms=10, deadline_ms=100_000)]
    d = policies.Mosaic(matrix({("model_update", "dispatch_api"): (0.40, 50)})).check(task("c", "model_update"), running, 0)
    assert (d.admit, d.rule) == (False, "ipc")
    assert policies.Mosaic(matrix({("model_update", "dispatch_api"): (0.30, 50)})).check(task("c", "model_update"), running, 0).admit
    # the other direction (the running task slowing the candidate) is not rule 2's business
    ok = policies.Mosaic(matrix({("dispatch_api", "model_update"): (0.9, 50)})).check(task("c", "model_update", deadline_ms=1e6), running, 0)
    assert ok.admit


def test_rule_3_no_squeeze_of_a_running_tasks_remaining_time():
    m = matrix({("analytics_batch", "inference_critical"): (0.30, 10)})
    # added = 0.30 * 1.184 (n = 10) * 200 ms = 71.0 ms; 40% of 150 ms left = 60 ms: queued
    r = task("r", "inference_critical", arrival_ms=0, deadline_ms=150, expected_ms=200)
    d = policies.Mosaic(m).check(task("c", "analytics_batch"), [r], 0)
    assert (d.admit, d.rule) == (False, "squeeze") and "71 ms" in d.detail
    r.deadline_ms = 200  # 40% of 200 ms = 80 ms > 71 ms: admitted
    assert policies.Mosaic(m).check(task("c", "analytics_batch"), [r], 0).admit
    # a running task with under 50 ms left (here: 10 ms past its deadline) is passed over, as in MOSAIC's code
    late = task("r", "inference_critical", arrival_ms=0, deadline_ms=150, expected_ms=200)
    assert policies.Mosaic(m).check(task("c", "analytics_batch"), [late], 160 * 1_000_000).admit
    # rule 2 comes first: a pair over tau reports "ipc", not "squeeze"
    m2 = matrix({("analytics_batch", "inference_critical"): (0.5, 10)})
    assert policies.Mosaic(m2).check(task("c", "analytics_batch"), [task("r", "inference_critical", deadline_ms=10)], 0).rule == "ipc"


def test_rule_4_the_running_tasks_must_leave_the_candidate_its_deadline():
    # two running classes each slow the candidate by 0.3, never observed (margin 1.5):
    # 0.9 * 100 ms = 90 ms added; 60% of a 140-ms deadline is 84 ms: queued; of 160 ms, 96 ms: admitted
    m = matrix({("analytics_batch", "sensor_fusion"): (0.3, 0), ("log_archive", "sensor_fusion"): (0.3, 0)})
    running = [task("r1", "analytics_batch", deadline_ms=1e6), task("r2", "log_archive", deadline_ms=1e6)]
    d = policies.Mosaic(m).check(task("c", "sensor_fusion", deadline_ms=140, expected_ms=100), running, 0)
    assert (d.admit, d.rule) == (False, "infeasible") and "90 ms" in d.detail
    assert policies.Mosaic(m).check(task("c", "sensor_fusion", deadline_ms=160, expected_ms=100), running, 0).admit


def test_without_the_matrix_only_concurrency_is_checked():
    m = matrix({("model_update", "dispatch_api"): (0.9, 50)})
    running = [task("r", "dispatch_api")]
    assert not policies.Mosaic(m).check(task("c", "model_update"), running, 0).admit
    assert policies.Mosaic(m, use_matrix=False).check(task("c", "model_update"), running, 0).admit


def test_mosaic_admits_by_urgency_and_a_starving_task_past_every_rule():
    p = policies.Mosaic(matrix({}), n_max=1)
    calm = task("calm", "log_archive", arrival_ms=0, deadline_ms=100_000)
    hurried = task("hurried", "dispatch_api", arrival_ms=0, deadline_ms=100)
    assert [t.id for t in p.start([calm, hurried], [], 50 * MS)] == ["hurried"]
    # one slot, taken: only a task past 3 x its deadline gets in
    busy = [task("r", "model_update", deadline_ms=1e7)]
    old = task("old", "sensor_fusion", arrival_ms=0, deadline_ms=100)
    assert p.start([old], busy, 299 * MS) == []
    assert [t.id for t in p.start([old], busy, 301 * MS)] == ["old"]
    assert p.decisions[-1].rule == "starving"


def test_no_task_waits_longer_than_three_deadlines_and_a_tick_under_sustained_overload():
    """A simulated clock: one slot, tasks that each hold it for 2 s, and a
    sensor_fusion task (d = 100..500 ms) every 50 ms: a queue that only grows."""
    p = policies.Mosaic(matrix({}), n_max=1)
    queue: list[Task] = []
    running: list[Task] = []
    waits = []
    now, k = 0, 0
    while now < 20_000 * MS:
        if now % (50 * MS) == 0:
            queue.append(task(f"t{k}", "sensor_fusion", arrival_ms=now / MS, deadline_ms=100 + (k % 5) * 100, expected_ms=2000))
            k += 1
        running = [r for r in running if now < r.started_ns + 2000 * MS]
        if now % (100 * MS) == 0:  # the tick
            for t in p.start(queue, running, now):
                t.started_ns = now
                queue.remove(t)
                running.append(t)
                waits.append((t.waited_ms(now), t.deadline_ms))
        now += 10 * MS
    assert len(waits) > 100
    assert all(w <= 3 * d + 100 for w, d in waits), max(w - 3 * d for w, d in waits)
    assert max(w - 3 * d for w, d in waits) > 0  # the guard, not luck, let them in


def test_the_matrix_learns_from_clean_observations_only(tmp_path):
    m = Interference(NAMES, prior=0.2)
    assert m.observe("dispatch_api", 60, {"model_update": 0.5}) == "no alone time yet"
    assert m.observe("dispatch_api", 50, {}) == "alone"
    assert m.observe("dispatch_api", 40, {"log_archive": 0.01}) == "alone"  # 1% beside another: alone
    assert m.alone_ms["dispatch_api"] == pytest.approx(0.85 * 50 + 0.15 * 40)  # 48.5
    assert m.observe("dispatch_api", 97, {"model_update": 0.9}) == "pair model_update"
    assert m.get("model_update", "dispatch_api") == pytest.approx(97 / 48.5 - 1)  # 1.0: the first observation
    m.observe("dispatch_api", 48.5, {"model_update": 1.0})  # no slowdown this time
    assert m.get("model_update", "dispatch_api") == pytest.approx(0.85 * 1.0)
    assert m.count("model_update", "dispatch_api") == 2
    assert m.observe("sensor_fusion", 20, {"dispatch_api": 0.5}) == "no alone time yet"
    # beside two classes, half its life each: slowdown 97/48.5 - 1 = 1.0 against a model of
    # 0.5 x 0.85 + 0.5 x 0.2 (the prior) = 0.525; the error 0.475 is spread by share (NLMS, step alpha)
    assert m.observe("dispatch_api", 97, {"model_update": 0.5, "log_archive": 0.5}) == "mixed (2 classes)"
    step = 0.15 * 0.5 * 0.475 / 0.5
    assert m.get("model_update", "dispatch_api") == pytest.approx(0.85 + step)
    assert m.get("log_archive", "dispatch_api") == pytest.approx(0.2 + step)
    assert m.count("log_archive", "dispatch_api") == 0.5
    assert m.get("analytics_batch", "dispatch_api") == 0.2 and m.margin("analytics_batch", "dispatch_api") == 1.5  # the prior
    db = tmp_path / "matrix.sqlite"
    m.save(db)
    m.save(db)  # again: replaced, not doubled
    back = Interference.load(db, NAMES, prior=0.2)
    assert back.m == m.m and back.n == m.n and back.alone_ms == m.alone_ms
    assert Interference.load(tmp_path / "none.sqlite", NAMES).m == {}


def test_fingerprints_move_by_alpha_and_classify_by_the_nearest_centroid():
    f = Fingerprints()
    f.update("dispatch_api", {"cpu": 0.2, "rss_mb": 30})
    f.update("analytics_batch", {"cpu": 1.0, "rss_mb": 800})
    f.update("dispatch_api", {"cpu": 0.4, "rss_mb": 30})
    assert f.centroid["dispatch_api"]["cpu"] == pytest.approx(0.85 * math.log1p(0.2) + 0.15 * math.log1p(0.4))
    assert f.confidence("dispatch_api") == pytest.approx(1 - math.exp(-0.2))
    assert f.classify({"cpu": 0.9, "rss_mb": 700})[0] == "analytics_batch"
    assert f.classify({"cpu": 0.3, "rss_mb": 25})[0] == "dispatch_api"
    assert Fingerprints().classify({"cpu": 1})[0] is None


def test_the_baselines_orders():
    a = task("a", "log_archive", arrival_ms=0, deadline_ms=60_000, expected_ms=900)
    b = task("b", "dispatch_api", arrival_ms=1, deadline_ms=100, expected_ms=20)
    c = task("c", "analytics_batch", arrival_ms=2, deadline_ms=50, expected_ms=0)  # never measured
    q = [c, b, a]

    def ids(name):
        return [t.id for t in policies.make(name, slots=3).start(q, [], 0)]

    assert ids("fcfs") == ["a", "b", "c"]
    assert ids("sjf") == ["b", "a", "c"]
    assert ids("priority") == ["b", "c", "a"]
    assert ids("edf") == ["c", "b", "a"]
    assert [t.id for t in policies.make("fcfs", slots=1).start(q, [], 0)] == ["a"]
    assert policies.make("fcfs", slots=1).start(q, [a], 0) == []
    rr = policies.make("rr", slots=2)
    assert isinstance(rr, policies.RoundRobin) and len(rr.start(q, [], 0)) == 3  # all admitted
    turns = [[t.id for t in rr.turn([a, b, c])] for _ in range(3)]
    assert turns == [["a", "b"], ["c", "a"], ["b", "c"]]
    with pytest.raises(ValueError, match="valid: fcfs"):
        policies.make("lottery", slots=1)
