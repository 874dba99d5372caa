"""What the plots show, checked on their data (not their pixels), from a run
folder written here by hand: one time origin for every time series, partial
link bins left out, a decomposition that adds up to the latency it claims.
No root needed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from continuum.results import plots, report, tables, timeline
from workloads.contract import RECORD_FIELDS

T0 = 1_800_000_000_000_000_000  # epoch ns of the first drawn request
MS = 1_000_000


def _records(n_warm: int = 10, n_meas: int = 100, seed: int = 3) -> pd.DataFrame:
    """Requests every 0.5 s, warm-up first; each part drawn at random so the
    slowest requests are not slow in every part alike."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_warm + n_meas):
        drawn = T0 + i * 500 * MS
        pre, up, srv, down = (int(x * MS) for x in (rng.uniform(1, 5), rng.exponential(30), rng.uniform(10, 30), rng.uniform(1, 3)))
        published = drawn + pre
        received = published + up
        done = received + srv
        rows.append({
            "repetition": 1, "endpoint": "endpoint0", "request_id": f"endpoint0-1-{i}", "seq": i,
            "phase": "warmup" if i < n_warm else "measure", "status": "ok", "request_bytes": 1000, "response_bytes": 100,
            "result": "x", "t_drawn": drawn, "t_pre_start": drawn, "t_pre_end": published, "t_published": published,
            "t_server_received": received, "t_server_start": received, "t_server_done": done, "t_server_published": done,
            "t_received": done + down, "send_rate": 2.0,
        })
    return pd.DataFrame(rows, columns=RECORD_FIELDS)


def _link_log(path: Path, init_ms: int, seconds: float, per_ms: int = 1) -> None:
    """A constant-capacity mm-link log whose clock starts at init_ms (epoch)."""
    lines = ["# mahimahi mm-link (Uplink) [trace] > log", "# command line: test", "# queue: infinite",
             f"# init timestamp: {init_ms}", "# base timestamp: 0"]
    for t in range(1, int(seconds * 1000) + 1):
        lines += [f"{t} # 1504"] * per_ms
        if t % 100 == 0:
            lines += [f"{t} + 1000", f"{t} - 1000 7"]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    (d / "raw").mkdir(parents=True)
    (d / "links").mkdir()
    df = _records()
    df.to_csv(d / "raw" / "requests-endpoint0-1.csv", index=False)
    df[["repetition", "endpoint", "request_id", "request_bytes", "t_server_received", "t_server_start", "t_server_done",
        "t_server_published"]].to_csv(d / "raw" / "server-edge0-1.csv", index=False)
    # The link starts 8.3 s before the first request, runs 70.4 s; the sampler starts 3.1 s before it.
    _link_log(d / "links" / "endpoint0.uplink.log", T0 // MS - 8300, 70.4, per_ms=1)
    _link_log(d / "links" / "endpoint0.downlink.log", T0 // MS - 8300, 70.4, per_ms=4)
    samples = [(T0 - 3_100 * MS + k * 500 * MS, node, 0.5, 100 << 20, 0) for k in range(150) for node in ("edge0", "endpoint0")]
    pd.DataFrame(samples, columns=["time_ns", "node", "cpu_cores", "memory_bytes", "oom_kills"]).to_csv(d / "nodes.csv", index=False)
    (d / "manifest.json").write_text(json.dumps({"nodes": {"edge0": {"role": "edge", "cpus": 1.0, "memory_bytes": 2 << 30},
                                                           "endpoint0": {"role": "endpoint", "cpus": 0.5, "memory_bytes": 512 << 20}}}))
    return d


def test_every_time_series_shares_the_first_measured_request_as_origin(run_dir):
    df = tables.merge(sorted((run_dir / "raw").glob("requests-*.csv")), sorted((run_dir / "raw").glob("server-*.csv")))
    tl = timeline.of_requests(df)
    assert tl.origin_ns == T0 + 10 * 500 * MS  # the first measured request, not the first warm-up one
    assert tl.warmups == ((-5.0, 0.0),)
    up = timeline.link_bins(run_dir / "links" / "endpoint0.uplink.log", tl, 0.5)
    # The link's clock started 8.3 s before the first (warm-up) request, 13.3 s before the origin:
    # its first whole bin on the run's axis starts at -13.0 s, and the bin holding -13.3 is partial.
    assert up["t_s"].iloc[0] == pytest.approx(-13.0)
    samples = timeline.node_samples(run_dir / "nodes.csv", tl)
    assert samples["t_s"].min() == pytest.approx(-8.1)
    lo, hi = plots.time_range(tl, [up], samples, 0.5)
    # the figures start where the workload does (the warm-up's first request at -5 s), not at the link's start
    assert -6.0 < lo < -5.0 and hi >= tl.workload_end_s


def test_link_bins_leave_out_partial_bins_and_keep_the_capacity_flat(run_dir):
    df = tables.merge(sorted((run_dir / "raw").glob("requests-*.csv")), [])
    tl = timeline.of_requests(df)
    for d, mbps in (("uplink", 12.032), ("downlink", 48.128)):
        b = timeline.link_bins(run_dir / "links" / f"endpoint0.{d}.log", tl, 0.5)
        assert np.allclose(b["capacity_mbps"], mbps), b["capacity_mbps"].describe()
        assert np.allclose(np.diff(b["t_s"]), 0.5)
        # 10 departures of 1000 bytes per second: 0.08 Mbit/s; queueing delay as logged
        assert b["delivered_mbps"].mean() == pytest.approx(0.08, rel=0.1)
        assert set(b["queue_delay_ms"].dropna()) == {7}


def test_decomposition_groups_whole_requests_and_adds_up(run_dir):
    df = tables.merge(sorted((run_dir / "raw").glob("requests-*.csv")), [])
    summary = tables.summarize(df)
    d = summary["decomposition"]
    measured = df[df["phase"] == "measure"]
    for key in ("around_median", "slowest_1pct"):
        g = d[key]
        assert sum(g["mean_parts_ms"].values()) == pytest.approx(g["mean_e2e_ms"], rel=1e-9)
        lo, hi = g["e2e_band_ms"]
        inside = measured[(measured["e2e_ms"] >= lo) & (measured["e2e_ms"] <= hi)]
        assert len(inside) == g["requests"] >= 1
        assert inside["e2e_ms"].mean() == pytest.approx(g["mean_e2e_ms"])
    assert d["slowest_1pct"]["e2e_band_ms"][0] == pytest.approx(summary["metrics"]["e2e_ms"]["p99"])
    # and unlike a stack of per-part P99s, it never exceeds the slowest request
    assert d["slowest_1pct"]["mean_e2e_ms"] <= summary["metrics"]["e2e_ms"]["max"]
    per_part_p99 = sum(summary["metrics"][c]["p99"] for c in tables.PARTS)
    assert per_part_p99 > summary["metrics"]["e2e_ms"]["p99"], "this data would have shown the old, false picture"


def test_report_draws_every_plot_of_the_folder(run_dir):
    summary, made = report.build(run_dir)
    assert {p.name for p in made} == {"latency_over_time.png", "decomposition.png", "link_endpoint0.png", "nodes.png", "report.html"}
    assert all(p.stat().st_size > 10_000 for p in made)
    assert plots.node_limits(run_dir)["endpoint0"]["cpus"] == 0.5
    assert summary["answered"] == summary["requests"] == 100


def test_most_timeouts_from_a_server_slower_than_the_arrivals_are_said_so(tmp_path):
    """20 requests 0.5 s apart, 18 timed out; the server processed 2 at 11 s each (a TCG guest
    running W1): the summary names the server's pace against the arrivals. At 0.1 s each
    the server kept pace (the timeouts were the network's) and nothing is said."""
    from continuum.results import tables

    t0 = 1_000_000_000_000
    df = pd.DataFrame({"phase": ["measure"] * 20, "t_drawn": [t0 + i * 500_000_000 for i in range(20)],
                       "status": ["ok", "ok"] + ["timeout"] * 18})
    summary = {"requests": 20, "timeouts": 18}
    server = tmp_path / "server-edge0.csv"
    for each_s, said in ((11.0, True), (0.1, False)):
        pd.DataFrame({"request_id": ["a", "b"], "t_server_start": [t0, t0 + int(each_s * 1e9)],
                      "t_server_done": [t0 + int(each_s * 1e9), t0 + int(2 * each_s * 1e9)]}).to_csv(server, index=False)
        slow = tables.server_too_slow(summary, df, [server])
        if said:
            assert slow == {"processed": 2, "median_processing_ms": 11000.0, "offered_per_s": 2.0}, slow
        else:
            assert slow is None
    assert tables.server_too_slow({"requests": 20, "timeouts": 2}, df, [server]) is None


def test_many_endpoints_share_one_link_figure_and_one_node_group(tmp_path):
    """14 endpoints (more than a figure each stays readable for): one links.png, whose series
    are the links' sums (capacity summed for independent links, the cell's own in a shared
    cell), and nodes.png with the endpoints as one group."""
    d = tmp_path / "many"
    (d / "raw").mkdir(parents=True)
    (d / "links").mkdir()
    n = plots.MANY_LINKS + 2
    rec = _records(n_warm=2, n_meas=20)
    frames = []
    for k in range(n):
        ep = f"endpoint{k}"
        frames.append(rec.assign(endpoint=ep, request_id=[f"{ep}-1-{i}" for i in range(len(rec))]))
        _link_log(d / "links" / f"{ep}.uplink.log", T0 // MS - 2300, 16, per_ms=1)
    df = pd.concat(frames)
    df.to_csv(d / "raw" / "requests-all-1.csv", index=False)
    samples = [(T0 + j * 500 * MS, f"endpoint{k}", 0.1, 50 << 20, 0) for j in range(20) for k in range(n)]
    pd.DataFrame(samples, columns=["time_ns", "node", "cpu_cores", "memory_bytes", "oom_kills"]).to_csv(d / "nodes.csv", index=False)
    (d / "manifest.json").write_text(json.dumps({"nodes": {f"endpoint{k}": {"role": "endpoint", "cpus": 0.5,
                                                                              "memory_bytes": 256 << 20} for k in range(n)}}))
    merged = tables.merge(sorted((d / "raw").glob("requests-*.csv")), [])
    tl = timeline.of_requests(merged)
    links = {f"endpoint{k}": {"uplink": timeline.link_bins(d / "links" / f"endpoint{k}.uplink.log", tl, 0.5),
                              "downlink": None} for k in range(n)}
    together = timeline.links_together(links, "uplink")
    assert together.attrs["links"] == n
    assert np.allclose(together["capacity_mbps"], n * 12.032)
    assert together["delivered_mbps"].mean() == pytest.approx(n * 0.08, rel=0.1)
    assert set(together["queue_max_ms"].dropna()) == {7}
    assert np.allclose(timeline.links_together(links, "uplink", shared_cell=True)["capacity_mbps"], 12.032)
    assert timeline.links_together(links, "downlink") is None
    summary, made = report.build(d)
    names = {p.name for p in made}
    assert "links.png" in names and "nodes.png" in names and not any(x.startswith("link_") for x in names), names


def test_edge_systems_put_their_decisions_on_the_runs_time_axis(run_dir):
    """report.html's rows of SMEC's and MOSAIC's decisions (EdgeSystem.time_series), from their records:
    SMEC's holdings as steps held to the end, each request's budget; MOSAIC's queue, its admitted tasks
    at their start (arrival + wait) and the unfinished ones at their arrival."""
    from continuum.edge.registry import SYSTEMS

    df = tables.merge(sorted((run_dir / "raw").glob("requests-*.csv")), [])
    tl = timeline.of_requests(df)
    assert SYSTEMS["smec"].time_series(run_dir, df, tl) == [] and SYSTEMS["mosaic"].time_series(run_dir, df, tl) == []
    pd.DataFrame({"t_ns": [tl.origin_ns, tl.origin_ns + 2_000 * MS], "app": ["a", "a"], "units": [1, 3], "cpus": [0.25, 0.75],
                  "why": ["start", "urgent"]}).to_csv(run_dir / "raw" / "smec-decisions.csv", index=False)
    (held,) = SYSTEMS["smec"].time_series(run_dir, df.assign(budget_ms=5.0), tl)[:1]
    (line,) = held.lines
    assert line.kind == "steps" and list(line.x) == [0.0, 2.0, tl.workload_end_s] and list(line.y) == [0.25, 0.75, 0.75]
    budgets = SYSTEMS["smec"].time_series(run_dir, df.assign(budget_ms=5.0), tl)[1]
    assert len(budgets.lines[0].x) == len(df) and set(budgets.lines[0].y) == {5.0}
    pd.DataFrame({"t_ns": [tl.origin_ns, tl.origin_ns + 100 * MS], "queued": [0, 4]}).to_csv(run_dir / "raw" / "mosaic-queue.csv", index=False)
    pd.DataFrame({"id": [1, 2], "cls": ["x", "x"], "t_arrival_ns": [tl.origin_ns + 1_000 * MS, tl.origin_ns + 3_000 * MS],
                  "wait_ms": [500.0, None], "response_ms": [700.0, None], "ok": [1, 0]}).to_csv(run_dir / "raw" / "mosaic-tasks.csv", index=False)
    queue, tasks = SYSTEMS["mosaic"].time_series(run_dir, df, tl)
    assert list(queue.lines[0].y) == [0, 4] and queue.lines[0].kind == "steps"
    admitted, lost = tasks.lines
    assert list(admitted.x) == [1.5] and list(admitted.y) == [0.7] and list(lost.x) == [3.0] and tasks.log
