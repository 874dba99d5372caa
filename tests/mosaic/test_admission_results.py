"""Admission control's results (continuum/edge/mosaic/results.py) against
hand-counted cases: what counts as a hit, as starved and as mission-critical
finished; only the measured requests' tasks count; a request that never
reached the edge counts as missed; the guard's bypasses are not decisions.
The live run's summary is checked in test_edge_tasks_live.py."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from continuum.edge.mosaic import results as admission

COLS = ["id", "cls", "tier", "deadline_ms", "t_arrival_ns", "wait_ms", "service_ms", "cpu_ms", "response_ms", "hit", "ok"]
ROWS = [  # id, cls, tier, deadline, arrival, wait, service, cpu, response, hit, ok
    ("e-1-0", "dispatch_api", 2, 100.0, 1_000, 5.0, 10.0, 9.0, 15.0, 1, 1),         # in time
    ("e-1-1", "dispatch_api", 2, 100.0, 2_000, 350.0, 10.0, 9.0, 360.0, 0, 1),      # late, and waited > 3 x 100 ms: starved
    ("e-1-2", "inference_critical", 1, 1000.0, 3_000, 100.0, 200.0, 190.0, 300.0, 1, 1),
    ("e-1-3", "log_archive", 4, 60000.0, 4_000, None, None, None, None, 0, 0),      # never started: starved, missed
    ("e-1-4", "sensor_fusion", 2, 200.0, 5_000, 20.0, None, None, None, 0, 0),      # started, stopped at the end: missed
]


def tasks() -> pd.DataFrame:
    return pd.DataFrame(ROWS, columns=COLS)


def test_task_metrics_by_hand():
    m = admission.task_metrics(tasks(), window_s=2.0, unseen=1)
    assert (m["arrived"], m["finished"], m["unseen"]) == (6, 3, 1)
    assert m["hit"] == pytest.approx(2 / 6)
    assert m["starved"] == pytest.approx(3 / 6)  # e-1-1, e-1-3 and the unseen one
    assert m["tps"] == pytest.approx(3 / 2.0)
    assert m["mission"] == pytest.approx(3 / 4)  # tiers 1-2: e-1-0, -1, -2 finished, -4 not
    d = m["per_class"]["dispatch_api"]
    assert (d["arrived"], d["finished"], d["hit"], d["starved"]) == (2, 2, 0.5, 0.5)
    assert m["per_class"]["log_archive"]["p99_ms"] is None and "model_update" not in m["per_class"]


def test_decisions_leave_out_the_guard_and_count_rules():
    dec = pd.DataFrame({"rule": ["ok", "concurrency", "ipc", "starving", "ok"], "us": [1.0, 3.0, 5.0, 1000.0, 2.0]})
    d = admission.decision_metrics(dec)
    assert d["count"] == 4 and d["us_p50"] == pytest.approx(2.5) and d["us_p99"] < 1000
    assert d["by_rule"] == {"concurrency": 1, "ipc": 1, "ok": 2, "starving": 1}


def test_a_run_folder_counts_only_measured_requests(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    tasks().to_csv(raw / "mosaic-tasks.csv", index=False)
    pd.DataFrame({"t_ns": [500, 2_000, 2_500, 9_000], "queued": [9, 1, 3, 7]}).to_csv(raw / "mosaic-queue.csv", index=False)
    pd.DataFrame({"task": ["a", "b"], "admit": [1, 0], "rule": ["ok", "ipc"], "detail": ["", ""], "us": [1.0, 2.0]}).to_csv(
        raw / "mosaic-decisions.csv", index=False)
    (tmp_path / "manifest.json").write_text(json.dumps({"admission": {"policy": "mosaic", "n_max": 4}, "duration_s": 4.0}))
    req = pd.DataFrame({"request_id": ["e-1-0", "e-1-1", "e-1-2", "e-1-3", "e-1-4", "e-1-9"],
                        "phase": ["warmup", "measure", "measure", "measure", "measure", "measure"],
                        "repetition": [1] * 6, "t_drawn": [900, 1_900, 2_900, 3_900, 4_900, 5_900]})
    a = admission.summarize(tmp_path, req)
    assert a is not None and a["policy"] == "mosaic"
    assert (a["arrived"], a["finished"], a["unseen"]) == (5, 2, 1)  # e-1-0 was warm-up; e-1-9 never reached the edge
    assert a["hit"] == pytest.approx(1 / 5) and a["tps"] == pytest.approx(2 / 4.0)
    assert a["queue"] == {"max": 3, "p50": 2.0}  # only the ticks inside the measured window
    # where the numbers come from is probed on the host, not assumed
    pmu, why = admission.hardware_counters()
    assert a["interference_source"].startswith("measured slowdown") and ("no hardware counters" in a["interference_source"]) == (not pmu)
    assert a["power"].startswith("not measured") and (pmu or why in a["interference_source"])


def test_no_records_no_section(tmp_path):
    (tmp_path / "raw").mkdir()
    assert admission.summarize(tmp_path, pd.DataFrame({"request_id": [], "phase": [], "repetition": [], "t_drawn": []})) is None
