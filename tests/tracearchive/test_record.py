"""Recording validated against a known trace: mahimahi-link replays
Verizon-LTE-short between a UE and a core namespace; `continuum traces
record` saturates both directions through it, with its control and feedback
on a separate path (the emulator's bypass filter for the control port); the
recorded per-second capacity must match the original within 5% for at least
95% of the seconds. The emulator log's init timestamp (when its clock
started) aligns the recording with trace time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-link" / "lab"))
from netlab import CORE_IP, Lab, wait_listening  # noqa: E402

from continuum.tracearchive import mahimahi  # noqa: E402

pytestmark = pytest.mark.usefixtures("root_netns")
PY = str(Path(sys.executable).absolute())


def looped_counts(orig: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Opportunities of the looping original trace in [1000 s, 1000 (s+1)) ms."""
    period = int(orig[-1])
    reps = int(seconds.max() + 2) * 1000 // period + 2
    full = np.concatenate([orig + k * period for k in range(reps)])
    return np.array([np.count_nonzero((full >= 1000 * s) & (full < 1000 * (s + 1))) for s in seconds])


def test_record_then_replay_matches_the_trace(mml, shared_traces, tmp_path):
    up = shared_traces / "mahimahi" / "Verizon-LTE-short.up"
    down = shared_traces / "mahimahi" / "Verizon-LTE-short.down"
    out = tmp_path / "rec"
    with Lab(mml, tmp_path) as lab:
        lab.start_emulator(up, down, f"--bypass={CORE_IP}/32:9500", f"--uplink-log={tmp_path}/up.log")
        server = lab.popen(lab.core, PY, "-m", "continuum", "traces", "record", "serve", "--port", "9500", "--once",
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            wait_listening(lab.core, 9500, server)
            rec = lab.run(lab.ue, PY, "-m", "continuum", "traces", "record", "--peer", CORE_IP, "--duration", "25",
                          "--out", str(out), "--ping", CORE_IP, "--ping-count", "5", timeout=180)
            assert "uplink" in rec.stdout and "downlink" in rec.stdout, rec.stdout
            server.wait(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
        header = (tmp_path / "up.log").read_text().split("\n", 6)
        init_ms = int(next(x for x in header if x.startswith("# init timestamp")).split(":")[1])
        assert lab.stop_emulator() == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["core_latency"]["one_way_ms"]["median"] > 0
    report = {}
    for direction, orig_path in (("up", up), ("down", down)):
        m = meta["directions"][direction]
        assert m["lost_packets"] == 0 and m["bytes_per_opportunity"] == 1500 and m["ip_bytes_per_packet"] == 1500
        assert m["queue_delay_s"]["median"] >= 0.75, "the recorder must keep a standing queue"
        rec_ts = mahimahi.read(out / f"recorded.{direction}")
        trace_ms = rec_ts - 1 + (m["t0_unix_ns"] // 1_000_000 - init_ms)
        seconds = np.arange(int(np.ceil(trace_ms[0] / 1000)), int(trace_ms[-1] // 1000))  # whole seconds only
        got = np.bincount((trace_ms // 1000).astype(int))[seconds]
        want = looped_counts(mahimahi.read(orig_path), seconds)
        within = np.abs(got - want) <= 0.05 * np.maximum(want, 1)
        report[direction] = (len(seconds), float(within.mean()))
        assert len(seconds) >= 20
        assert within.mean() >= 0.95, f"{direction}: {within.mean():.0%} of {len(seconds)} seconds within 5%: " + str(
            [(int(s), int(g), int(w)) for s, g, w, k in zip(seconds, got, want, within) if not k][:10])
    print("record->replay:", report)


def test_record_light_recovers_a_known_light_trace(mml, tmp_path):
    """`traces record --light --base owd` through mahimahi-link replaying known light traces (uplink base
    25 ms, a train's packets 3 ms apart; downlink base 10 ms, 2 ms apart): the recorded light traces give
    back those base delays and offsets (issue #58; both ends share this machine's clock). With
    --calibrate, the downlink's trains find the link idle from the shortest gap on (G_min 20 ms). With --sizes,
    the lone packets of each size give back the emulator's known per-size offsets (8 ms less for a 100-byte
    packet than a full one up, 4 ms down, linear between)."""
    from continuum.tracearchive import light

    heavy = tmp_path / "c12"
    heavy.write_text("1\n")  # an opportunity every ms: 12 Mbit/s
    known = {"up": (25, 3), "down": (10, 2)}
    small = {"up": 8.0, "down": 4.0}  # how much sooner a 100-byte packet leaves than a 1500-byte one
    def offset(d, size):
        return -small[d] * (1500 - size) / 1400
    for d, (base, step) in known.items():
        (tmp_path / f"known.{d}.light").write_text("".join(f"{t} {base} {' '.join(str(k * step) for k in range(10))}\n"
                                                           for t in (0, 1000, 2000)))
        (tmp_path / f"known.{d}.offsets").write_text("".join(f"{s} {offset(d, s):.3f}\n" for s in range(100, 1501, 100)))
    out = tmp_path / "rec"
    with Lab(mml, tmp_path) as lab:
        # the emulator under SCHED_FIFO: this test checks the recorder's timing, which a busy loop on the emulator's
        # pinned CPU otherwise spoiled (1-4 of 5-10 runs failed with one on CPU 0, 6 of 6 passed with this)
        lab.start_emulator(heavy, heavy, f"--bypass={CORE_IP}/32:9500",
                           link_keys="".join(f",{d}-light={tmp_path / f'known.{d}.light'},{d}-light-offsets={tmp_path / f'known.{d}.offsets'}"
                                             for d in known), realtime=True)
        server = lab.popen(lab.core, PY, "-m", "continuum", "traces", "record", "serve", "--port", "9500", "--once",
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            wait_listening(lab.core, 9500, server)
            rec = lab.run(lab.ue, PY, "-m", "continuum", "traces", "record", "--light", "--peer", CORE_IP, "--duration", "4",
                          "--gap-ms", "150", "--up-packets", "10", "--down-packets", "10", "--base", "owd", "--calibrate",
                          "--calibrate-s", "1", "--sizes", "--sizes-count", "3", "--out", str(out), "--name", "lt",
                          timeout=120, check=False)
            assert rec.returncode == 0, rec.stdout + rec.stderr
            server.wait(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
        assert lab.stop_emulator() == 0
    assert "calibration uplink" in rec.stdout, rec.stdout
    meta = json.loads((out / "light-metadata.json").read_text())
    for d, (base, step) in known.items():
        t = light.parse(out / f"lt.{d}.light")
        assert len(t.lines) >= 20, (d, len(t.lines))
        bases = [ln.base_ms for ln in t.lines]
        assert sum(abs(b - base) <= 1 for b in bases) >= 0.9 * len(bases), (d, bases)
        full = [ln.pdos_ms for ln in t.lines if len(ln.pdos_ms) == 10]
        assert len(full) >= 0.9 * len(t.lines), (d, [len(ln.pdos_ms) for ln in t.lines])
        # every packet's offset within a millisecond of the known one, but for a few the busy machine held up
        off = [p - k * step for pdos in full for k, p in enumerate(pdos)]
        assert sum(abs(o) <= 1 for o in off) >= 0.95 * len(off), (d, full[:5])
        assert t.pdo_bytes == 1504 and meta["directions"][d]["trains_without_first_packet"] <= 1
        # a train sent 20 ms after the last one's start (its 27 ms span done later) still starts a new burst
        # in the emulator (idle 1 ms): every gap looks idle, so G_min is the shortest one
        assert meta["calibration"][d]["g_min_ms"] == 20, meta["calibration"]
        # the size offsets: the 100-byte bins within half a millisecond of the known ones, the file named in the header
        assert t.offsets == out / f"lt.{d}.offsets", t.offsets
        got = dict(zip(range(100, 1501, 100), light.parse_offsets(t.offsets)))
        assert len(got) == 15 and meta["size_offsets"][d]["reference_bytes"] == 1504, (got, meta["size_offsets"][d])
        # all but two bins (a busy machine held up a bin's lone packets once: the link lane beside the hosts
        # tests, 2026-11-28); with no offset measured (all 0) only the two largest bins would be within it
        assert sum(abs(o - offset(d, s)) <= 0.5 for s, o in got.items()) >= len(got) - 2, (d, got)
