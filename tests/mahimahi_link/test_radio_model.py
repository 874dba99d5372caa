"""The radio's timing after the trace (issue #58, the access procedure): the
emulator's core (`mahimahi-link simulate --uplink-radio/--downlink-radio`)
must agree with the independent reference model
(mahimahi-link/reference/radio_model.py) on every packet's arrival, at the
same nanosecond, for generated traces and arrivals, FDD and TDD patterns,
pipeline delays, block error rates and retransmission limits; and a worked
example by hand checks both."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-link" / "reference"))
import mmlink_model as mm  # noqa: E402
import radio_model as model  # noqa: E402
from test_burst_model import bursty_arrivals  # noqa: E402
from test_burst_model import run_core as burst_run_core  # noqa: E402
from test_reference_model import random_trace  # noqa: E402

MS = 1_000_000


def run_core(mml: Path, trace: Path, arrivals, args: list[str]):
    """Departures ("d"), queue drops ("x") and packets lost with their block ("h"); the radio's counters."""
    return burst_run_core(mml, trace, arrivals, args, kinds="dhx")


@pytest.mark.parametrize("case", range(24))
def test_random_cases_agree_exactly(mml, tmp_path, case):
    rng = random.Random(5800 + case)
    trace = random_trace(rng)
    tf = tmp_path / "trace"
    tf.write_text("".join(f"{x}\n" for x in trace))
    uplink = case % 2 == 0
    slot_us = rng.choice([1000, 500, 250])
    pattern = [None, "DDDSU", "DDDDDDDSUU", "DSUUU"][case % 4]
    bler = [0.0, 0.1, 0.3, 0.6][(case // 4) % 4]
    delay_ms = rng.choice([0, 0, 1.5, 4, 9.25])
    rtt, max_tx = rng.choice([(8, 4), (4, 2), (10, 1), (16, 6)])
    spec = f"slot-us={slot_us},delay-ms={delay_ms},bler={bler},harq-rtt-slots={rtt},max-tx={max_tx}"
    if pattern:
        spec += f",tdd={pattern}"
    arrivals = bursty_arrivals(rng, rng.randint(100, 1200))
    got, counters = run_core(mml, tf, arrivals, ["--seed=5", f"--{'uplink' if uplink else 'downlink'}-radio={spec}"])
    link = mm.simulate(trace, arrivals, mm.Queue(kind="infinite", seed=5))
    radio = model.Radio(slot_ns=slot_us * 1000, pattern=pattern, uplink=uplink, delay_ns=round(delay_ms * MS), bler=bler,
                        harq_rtt_slots=rtt, max_tx=max_tx)
    want = model.apply(radio, [(i, t) for kind, i, t in link if kind == "d"])
    first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    assert got == want, f"first difference at event {first}: core {got[first:first + 3]}, model {want[first:first + 3]}"
    # the premise: the case moves packets (TDD holds some, HARQ retransmits some) or loses some
    left = {i: t for kind, i, t in link if kind == "d"}
    slot_ns = slot_us * 1000
    moved = sum(1 for kind, i, t in want if kind == "h" or t > ((left[i] + round(delay_ms * MS)) // slot_ns + 1) * slot_ns)
    assert moved > 0 or (pattern is None and bler == 0), (spec, counters)
    if bler >= 0.3:
        assert int(counters["retransmissions" if max_tx > 1 else "lost"]) > 0, counters


def test_tdd_and_harq_by_hand(mml, tmp_path):
    """Worked example, independent of both implementations. Uplink, NR DDDSU at 0.5 ms (the U slots are
    4, 9, 14, ...: 2.0-2.5, 4.5-5.0, 7.0-7.5 ms), a 0.3-ms pipeline, a trace with an opportunity every
    millisecond: packets arriving at 0, 0.9 and 5.2 ms leave the link at 1, 2 and 6 ms."""
    (tmp_path / "trace").write_text("1\n")
    arr = [(0, 1504), (900_000, 1504), (5_200_000, 1504)]
    got, counters = run_core(mml, tmp_path / "trace", arr, ["--ms-bursts", "--uplink-radio=slot-us=500,tdd=DDDSU,delay-ms=0.3"])
    # 1.3 ms (slot 2, D) -> slot 4, arriving at its end, 2.5 ms; 2.3 ms is in slot 4 itself: its end, 2.5 ms;
    # 6.3 ms (slot 12, D) -> slot 14's end, 7.5 ms.
    assert got == [("d", 0, 2_500_000), ("d", 1, 2_500_000), ("d", 2, 7_500_000)], got
    assert counters == {"packets": "3", "blocks": "2", "retransmissions": "0", "lost": "0"}
    # The downlink of the same pattern: D and S slots. 1.3 ms: slot 2's end, 1.5 ms; 2.3 ms is in slot 4 (U):
    # slot 5's end, 3.0 ms; 6.3 ms: slot 12's end, 6.5 ms.
    got, _ = run_core(mml, tmp_path / "trace", arr, ["--ms-bursts", "--downlink-radio=slot-us=500,tdd=DDDSU,delay-ms=0.3"])
    assert got == [("d", 0, 1_500_000), ("d", 1, 3_000_000), ("d", 2, 6_500_000)], got


def test_bad_radio_options_are_refused(mml, tmp_path):
    (tmp_path / "trace").write_text("1\n")
    for opt, says in [("--uplink-radio=tdd=DDDD", "no uplink (U) slot"), ("--downlink-radio=bler=1.5", "0 <= bler < 1"),
                      ("--uplink-radio=harq=3", "valid: slot-us, tdd, delay-ms, bler, harq-rtt-slots, max-tx")]:
        p = subprocess.run([str(mml), "simulate", str(tmp_path / "trace"), opt], input="", capture_output=True, text=True)
        assert p.returncode == 2 and says in p.stderr, (opt, p.stderr)
