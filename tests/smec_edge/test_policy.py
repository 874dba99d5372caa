"""The edge manager's CPU policy and budgets as the spec states them."""

from __future__ import annotations

from smec_edge.budget import ProcessingTimes, budget_ns, drop
from smec_edge.policy import CpuPolicy

MS = 1_000_000


def test_an_urgent_app_gains_a_unit_then_waits_the_cooldown():
    p = CpuPolicy({"ss": (1, 20 * MS), "ar": (1, 20 * MS)}, total=4)
    assert not p.request_budget("ss", 30 * MS, 0)  # not urgent
    assert p.request_budget("ss", 10 * MS, 0) and p.units()["ss"] == 2
    assert not p.request_budget("ss", 1 * MS, 50 * MS)  # within the 100 ms cool-down
    assert p.request_budget("ss", 1 * MS, 100 * MS) and p.units() == {"ss": 3, "ar": 1}
    assert not p.request_budget("ar", 1 * MS, 100 * MS)  # nothing free: never taken from another app


def test_units_come_back_only_below_60_percent_use_and_never_below_the_minimum():
    p = CpuPolicy({"ss": (3, 20 * MS)}, total=4)
    assert not p.utilisation("ss", 0.75, 0)
    assert p.utilisation("ss", 0.4, 0) and p.units()["ss"] == 2
    assert not p.utilisation("ss", 0.1, 50 * MS)  # cool-down
    assert p.utilisation("ss", 0.1, 200 * MS) and p.units()["ss"] == 1
    assert not p.utilisation("ss", 0.0, 10**9)  # its minimum
    assert [why for _, _, why in p.apps["ss"].decisions] == ["idle (40% used)", "idle (10% used)"]


def test_budget_and_early_drop():
    h = ProcessingTimes()
    assert h.median_ns("ar") == 0
    for ms in (30, 10, 20, 1000, 25, 15, 22, 18, 21, 19, 23):  # 11 values: the first falls out
        h.add("ar", ms * MS)
    assert h.median_ns("ar") == 20.5 * MS  # median of the last 10 (the 1000 ms outlier does not move it)
    b = budget_ns(100 * MS, network_ns=40 * MS, wait_ns=30 * MS, process_ns=h.median_ns("ar"))
    assert b == 9.5 * MS and not drop(b)
    assert drop(budget_ns(100 * MS, 60 * MS, 19 * MS, 21 * MS))  # exactly spent: dropped


def test_an_app_urgent_within_the_last_second_keeps_its_units():
    p = CpuPolicy({"ss": (1, 20 * MS)}, total=4)
    assert p.request_budget("ss", -5 * MS, 0) and p.units()["ss"] == 2
    assert not p.utilisation("ss", 0.0, 500 * MS)  # idle because its requests were dropped, not because it needs less
    assert not p.request_budget("ss", 50 * MS, 900 * MS)  # a relaxed request does not renew the hold
    assert p.utilisation("ss", 0.0, 1001 * MS) and p.units()["ss"] == 1


def test_a_stale_processing_estimate_is_refreshed_not_trusted_forever():
    h = ProcessingTimes()
    h.add("ar", 700 * MS, now_ns=0)  # a cold start at a small CPU share
    assert not h.stale("ar", 900 * MS) and h.stale("ar", 1001 * MS)
    h.add("ar", 35 * MS, now_ns=1100 * MS, restart=True)  # the refresh request starts the history again
    assert h.median_ns("ar") == 35 * MS and not h.stale("ar", 1200 * MS)
    assert not ProcessingTimes().stale("vc", 10**12)  # nothing learnt yet: nothing to distrust
