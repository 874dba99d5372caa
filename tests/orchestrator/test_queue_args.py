"""The experiment file's queue settings are checked in Python (validate runs
nothing); this holds that check to the emulator's own parser: the same
verdict on every case, tricky and seeded random."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from continuum.config import raw

CASES = [
    ("infinite", ""), ("infinite", "packets=10"), ("droptail", ""), ("droptail", "packets=10"), ("droptail", "bytes=9000"),
    ("droptail", "packets=0"), ("droptail", "packets=0, bytes=5"), ("drophead", "packets=+5"), ("drophead", "packets=-5"),
    ("droptail", "packets=5x"), ("droptail", "packets"), ("droptail", "packets=5,,"), ("droptail", " packets = 7 "),
    ("droptail", "packets=18446744073709551615"), ("droptail", "packets=18446744073709551616"), ("droptail", "target=5"),
    ("codel", "target=5, interval=100"), ("codel", "target=0, interval=100"), ("codel", "target=5"),
    ("codel", "target=5, interval=100, packets=10"), ("codel", "target=5, interval=100, qdelay_ref=1"),
    ("pie", "qdelay_ref=15, max_burst=150"), ("pie", "qdelay_ref=0, max_burst=150"), ("pie", "qdelay_ref=15, max_burst=0"),
    ("pie", "qdelay_ref=15"), ("pie", "qdelay_ref=15, max_burst=150, bytes=1"), ("droptail", "packets=1, packets=0"),
]


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    t = tmp_path_factory.mktemp("q") / "t.trace"
    t.write_text("1\n")
    return t


def _emulator_accepts(mml: Path, trace: Path, kind: str, args: str) -> bool:
    p = subprocess.run([str(mml), "simulate", str(trace), f"--queue={kind}", f"--queue-args={args}"],
                       input="", capture_output=True, text=True)
    return p.returncode == 0


@pytest.mark.parametrize("kind, args", CASES)
def test_same_verdict_as_the_emulator(mml, trace, kind, args):
    ours = raw.queue_args_problems(kind, args)
    assert (not ours) == _emulator_accepts(mml, trace, kind, args), ours


def test_seeded_random_queue_args_get_the_same_verdict(mml, trace):
    rng = random.Random(11)
    keys = ["packets", "bytes", "target", "interval", "qdelay_ref", "max_burst", "x"]
    values = ["0", "1", "5", "+3", "-1", "2.5", "", "99999999999999999999"]
    for _ in range(80):
        kind = rng.choice(raw.QUEUES)
        parts = [f"{rng.choice(keys)}={rng.choice(values)}" for _ in range(rng.randint(0, 3))]
        args = ", ".join(parts)
        ours = raw.queue_args_problems(kind, args)
        assert (not ours) == _emulator_accepts(mml, trace, kind, args), (kind, args, ours)
