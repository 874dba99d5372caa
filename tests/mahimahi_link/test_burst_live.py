"""Workload-aware replay in forward mode (issue #58), with real packets
through real namespaces: a burst that finds the link idle waits the light
trace's base delay and leaves at the train's offsets, not at the heavy
trace's next opportunities; plain replay of the same heavy trace does not."""

from __future__ import annotations

import statistics
import subprocess

import pytest

from netlab import CORE_IP, Lab, constant_trace, parse_log, write_trace

pytestmark = pytest.mark.usefixtures("root_netns")

BASE_MS, GAP_MS, TRAIN = 30, 3, 10


@pytest.fixture
def lab(mml, tmp_path):
    with Lab(mml, tmp_path) as lab:
        yield lab


def light_trace(path):
    # the base delay and a train of TRAIN packets GAP_MS apart, the same at every line
    train = " ".join(str(k * GAP_MS) for k in range(TRAIN))
    path.write_text("".join(f"{t} {BASE_MS} {train}\n" for t in (0, 1000, 2000)))
    return path


def bursts(lab, log):
    """Ten bursts of TRAIN full-size datagrams, 100 ms apart (UDP GSO: a burst reaches the link at
    once); the receiver's gaps inside each burst (ms) and the log's per-packet delays (ms)."""
    rows = lab.udp(lab.ue, lab.core, CORE_IP, pps=100, count=10 * TRAIN, gso_segments=TRAIN, idle=1.0)
    assert lab.stop_emulator() == 0, lab.emulator_stderr
    assert len(rows) == 10 * TRAIN, f"{len(rows)} of {10 * TRAIN} datagrams arrived"
    rows.sort(key=lambda r: r[2])
    gaps = [(b[0] - a[0]) / 1e6 for i, (a, b) in enumerate(zip(rows, rows[1:])) if (i + 1) % TRAIN]
    _, _, _, dep, _ = parse_log(log)
    return gaps, [d for _, _, d in dep]


def test_a_burst_takes_the_base_delay_and_the_trains_offsets(lab, tmp_path):
    heavy = constant_trace(tmp_path / "c12", 12)  # an opportunity every millisecond
    log = tmp_path / "up.log"
    lab.start_emulator(heavy, heavy, f"--uplink-log={log}", link_keys=f",up-light={light_trace(tmp_path / 'light')}")
    gaps, delays = bursts(lab, log)
    # the receiver sees the train's spacing (3 ms), not the heavy trace's (1 ms)
    assert abs(statistics.median(gaps) - GAP_MS) <= 0.5, gaps
    # the link's own log: packet k of a burst left BASE_MS + k * GAP_MS after it came (whole ms in the log)
    assert len(delays) == 10 * TRAIN
    off = [d - (BASE_MS + (i % TRAIN) * GAP_MS) for i, d in enumerate(delays)]
    assert sum(abs(o) <= 1 for o in off) >= 0.9 * len(off), delays
    stats = lab.read_stats()["uplink"]
    assert stats["light_bypassed_packets"] == 10 * TRAIN and stats["light_bursts"] == 10, stats
    assert stats["arrived_packets"] == stats["departed_packets"] == 10 * TRAIN, stats


def test_plain_replay_of_the_same_heavy_trace_has_neither(lab, tmp_path):
    heavy = constant_trace(tmp_path / "c12", 12)
    log = tmp_path / "up.log"
    lab.start_emulator(heavy, heavy, f"--uplink-log={log}")
    gaps, delays = bursts(lab, log)
    assert abs(statistics.median(gaps) - 1) <= 0.5, gaps
    assert statistics.median(delays) <= TRAIN // 2 + 1, delays


def test_bad_light_options_are_refused_naming_the_file_and_line(mml, tmp_path):
    heavy = write_trace(tmp_path / "h", [1])
    bad = tmp_path / "light"
    bad.write_text("0 30 0 3\n1000 30 5 8\n2000 30 0\n")
    link = f"--link=name=a,ue=x,core=y,up={heavy},down={heavy},up-light={bad}"
    p = subprocess.run([str(mml), "forward", link], capture_output=True, text=True)
    assert p.returncode == 2 and f"{bad}:2:" in p.stderr and "first delivery offset" in p.stderr, p.stderr
    p = subprocess.run([str(mml), "forward", f"--link=name=a,ue=x,core=y,up={heavy},down={heavy},down-light-idle-ms=4"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "without down-light=FILE" in p.stderr, p.stderr
