"""Workload-aware replay (issue #58): the emulator's core (`mahimahi-link
simulate --light`) must agree with the independent reference model
(mahimahi-link/reference/burst_model.py) on every departure and drop, at the
same nanosecond, for generated light and heavy traces, arrivals in bursts
and gaps, queue disciplines, train packet sizes, idle timers and per-size
offsets; and plain replay must stay byte-identical to what it was before
the light stage existed."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-link" / "reference"))
import burst_model as model  # noqa: E402
import mmlink_model as mm  # noqa: E402
from test_reference_model import QUEUES, random_trace  # noqa: E402

MS = model.MS


def run_core(mml: Path, heavy: Path, arrivals, args: list[str], kinds: str = "dx"):
    """`mahimahi-link simulate`: its events of `kinds` ("KIND ID T" lines) and its last line's counters
    (test_radio_model.py adds "h", a packet lost with its transport block, and reads the radio's counters)."""
    stdin = "".join(f"{t} {s}\n" for t, s in arrivals)
    p = subprocess.run([str(mml), "simulate", str(heavy), *args], input=stdin, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    events = [(kind, int(i), int(t)) for kind, i, t in (line.split() for line in out if line[0] in kinds)]
    counters = dict(kv.split("=") for kv in out[-1].split()[1:])
    return events, counters


def random_light(rng: random.Random) -> str:
    """A light trace: lines every few hundred ms, base delays that wander, trains whose offsets grow
    unevenly (some shared milliseconds, some long gaps), a few short trains."""
    t, base, lines = 0, rng.randint(5, 60), []
    for _ in range(rng.randint(3, 30)):
        base = max(0, base + rng.randint(-15, 15))
        k = rng.choice([1, 2, 5, 10, 20, 40])
        pdos, p = [0], 0
        for _ in range(k - 1):
            p += rng.choice([0, 0, 1, 1, 2, 5, 12])
            pdos.append(p)
        lines.append(f"{t} {base} {' '.join(map(str, pdos))}")
        t += rng.choice([20, 100, 250, 500])
    return "\n".join(lines) + "\n"


def bursty_arrivals(rng: random.Random, n: int) -> list[tuple[int, int]]:
    """Requests of a few to tens of packets (an image, an answer) with gaps between them, plus stray
    small packets (ACKs) and arbitrary nanoseconds."""
    t, out = 0, []
    while len(out) < n:
        t += rng.choice([0, rng.randint(1, 5 * MS), rng.randint(20 * MS, 400 * MS)])
        for _ in range(rng.choice([1, 1, 3, 10, 40])):
            t += rng.choice([0, 0, rng.randint(1, 300_000), MS - t % MS])
            out.append((t, rng.choice([44, 64, 580, 1400, 1504, 1504, rng.randint(1, 1504)])))
    return out[:n]


@pytest.mark.parametrize("case", range(40))
def test_random_cases_agree_exactly(mml, tmp_path, case):
    rng = random.Random(7000 + case)
    heavy, light = random_trace(rng), random_light(rng)
    hf, lf = tmp_path / "heavy", tmp_path / "light"
    hf.write_text("".join(f"{x}\n" for x in heavy))
    lf.write_text(light)
    kind, qargs, kw = QUEUES[case % len(QUEUES)]
    pdo_bytes = rng.choice([1504, 1504, 1400, 600])
    idle_ms = rng.choice([0, 0, 3, 25.5])
    offsets = None
    args = [f"--queue={kind}", f"--queue-args={qargs}", "--seed=5", f"--light={lf}", f"--light-bytes={pdo_bytes}",
            f"--light-idle-ms={idle_ms}"]
    if case % 4 == 3:
        offsets = [round(rng.uniform(-2, 6), 3) for _ in range(14)]
        of = tmp_path / "offsets"
        of.write_text("".join(f"{100 * (i + 1)} {o}\n" for i, o in enumerate(offsets)))
        args.append(f"--light-offsets={of}")
    spread = case % 3 != 0
    if not spread:
        args.append("--ms-bursts")
    arrivals = bursty_arrivals(rng, rng.randint(100, 1500))
    active_ms = [None, None, 0.0, 2.5, 7][case % 5]  # None: CellReplay's burst rule; else the active-link floor
    if active_ms is not None:
        args.append(f"--light-active-ms={active_ms}")
    got, counters = run_core(mml, hf, arrivals, args)
    want = model.simulate(heavy, model.parse_light(light), arrivals, mm.Queue(kind=kind, seed=5, **kw), pdo_bytes=pdo_bytes,
                          idle_ns=round(idle_ms * MS), offsets_ms=offsets or (), spread=spread,
                          active_ns=None if active_ms is None else round(active_ms * MS))
    first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    assert got == want, f"first difference at event {first}: core {got[first:first + 3]}, model {want[first:first + 3]}"
    bypassed = int(counters["bypassed"])
    # the premise of the case: both paths taken (some packets past an idle heavy queue, some through it)
    assert 0 < bypassed < len(arrivals) or kind != "infinite", counters
    assert int(counters["departed"]) == sum(1 for e in want if e[0] == "d")


def test_a_burst_by_hand(mml, tmp_path):
    """Worked example, independent of both implementations: base delay 20 ms at 0 rising to 40 ms at
    100 ms, trains with offsets 0, 3, 3, 9 ms; a heavy opportunity every 2 ms."""
    (tmp_path / "light").write_text("0 20 0 3 3 9\n100 40 0 3 3 9\n200 40 0 3 3 9\n")
    (tmp_path / "heavy").write_text("2\n")
    arr = [(50 * MS, 1504), (50 * MS, 1504), (50 * MS, 1504), (51 * MS, 1504), (52 * MS, 1504), (53 * MS, 1504)]
    got, counters = run_core(mml, tmp_path / "heavy", arr, [f"--light={tmp_path / 'light'}", "--light-idle-ms=0", "--ms-bursts"])
    # at 50 ms the base delay is 30 ms: the train's offsets 0, 3, 3, 9 put the first four at 80, 83, 83, 89 ms;
    # the fifth is past the train: its release, 52 + max(30, 9) = 82 ms, is before the fourth's, so it
    # joins the heavy queue at 89 ms (releases never go backwards) and leaves at its next opportunity,
    # 90 ms. The sixth, at 53 ms, would be released at 53 + 30 = 83 ms, after the fifth's 82: a new
    # burst (idle time 0 here), base delay 30.6 ms, held to 89 ms too, and out at the next opportunity, 92 ms.
    assert got == [("d", 0, 80 * MS), ("d", 1, 83 * MS), ("d", 2, 83 * MS), ("d", 3, 89 * MS), ("d", 4, 90 * MS), ("d", 5, 92 * MS)]
    assert counters["bypassed"] == "4" and counters["bursts"] == "2"


def test_an_active_link_keeps_its_burst_by_hand(mml, tmp_path):
    """The same light trace with active_ms (a floor of 2 ms, idle 1 ms): a packet that comes while the link
    still holds the burst's packets takes the train's next offset instead of a new base delay."""
    (tmp_path / "light").write_text("0 20 0 3 3 9\n100 40 0 3 3 9\n200 40 0 3 3 9\n")
    (tmp_path / "heavy").write_text("2\n")
    arr = [(50 * MS, 1504), (50 * MS, 1504), (50 * MS, 1504), (70 * MS, 1504), (86 * MS, 1504), (120 * MS, 1504)]
    args = [f"--light={tmp_path / 'light'}", "--light-idle-ms=1", "--ms-bursts"]
    got, counters = run_core(mml, tmp_path / "heavy", arr, [*args, "--light-active-ms=2"])
    # 50 ms: base 30 ms, offsets 0, 3, 3 -> 80, 83, 83 ms. 70 ms: the link holds packets until 83 ms, so the
    # burst goes on: the fourth offset, 9 ms (its release, 89 ms, has not passed; the floor 70 + 2 is sooner).
    # 86 ms: the link released its last at 89 ms, still the burst, but past the train: the heavy queue from
    # max(86, 50 + 30 + 9) = 89 ms (floor 88), out at its next opportunity, 90 ms. 120 ms: idle 31 ms, a new
    # burst, base delay 40 ms: 160 ms.
    assert got == [("d", 0, 80 * MS), ("d", 1, 83 * MS), ("d", 2, 83 * MS), ("d", 3, 89 * MS), ("d", 4, 90 * MS),
                   ("d", 5, 160 * MS)]
    assert counters["bypassed"] == "5" and counters["bursts"] == "2"
    # CellReplay's rule: at 70 ms the release would be 70 + 34 ms, more than 1 ms after 83: a new burst, 104 ms
    plain, counters = run_core(mml, tmp_path / "heavy", arr, args)
    assert plain[3] == ("d", 3, 104 * MS) and counters["bursts"] == "4", (plain, counters)


def test_a_small_packet_keeps_its_size_offset_and_the_active_floor_by_hand(mml, tmp_path):
    """Size offsets (10 ms less for a 100-byte packet, none for a full one) with an active link (floor 5 ms,
    idle 10 ms): a small packet that starts a burst leaves 10 ms before a full one would; one that comes while
    the burst is still on does not go below the floor."""
    (tmp_path / "light").write_text("0 30 0 3\n100 30 0 3\n200 30 0 3\n")
    (tmp_path / "heavy").write_text("2\n")
    offsets = [round(-10 * (1500 - s) / 1400, 4) for s in range(100, 1501, 100)]
    (tmp_path / "offsets").write_text("".join(f"{100 * (i + 1)} {o}\n" for i, o in enumerate(offsets)))
    arr = [(0, 100), (50 * MS, 1504), (85 * MS, 100)]
    got, _ = run_core(mml, tmp_path / "heavy", arr, [f"--light={tmp_path / 'light'}", "--light-idle-ms=10", "--ms-bursts",
                                                     f"--light-offsets={tmp_path / 'offsets'}", "--light-active-ms=5"])
    # 0 ms: a new burst, base 30 ms, offset -10 ms: out at 20 ms. 50 ms: a new burst (the last left 30 ms ago
    # before its offset): 80 ms. 85 ms: within 10 ms of that, the burst goes on; past its two-packet train, so
    # from max(85, 50 + 30 + 3) = 85 ms; less 10 ms would be 75 ms, below the floor 85 + 5: the heavy queue at
    # 90 ms, out at its next opportunity, 92 ms (without the floor: at 85 ms, out at 86).
    assert got == [("d", 0, 20 * MS), ("d", 1, 80 * MS), ("d", 2, 92 * MS)], got
    want = model.simulate([2], model.parse_light((tmp_path / "light").read_text()), arr, mm.Queue(kind="infinite"),
                          idle_ns=10 * MS, offsets_ms=offsets, spread=False, active_ns=5 * MS)
    assert got == want, want


def test_bad_light_files_name_the_file_and_line(mml, tmp_path):
    (tmp_path / "heavy").write_text("1\n")
    bad = tmp_path / "light"
    bad.write_text("0 20 0 3\n100 40 0 3\n150 x 0\n")
    p = subprocess.run([str(mml), "simulate", str(tmp_path / "heavy"), f"--light={bad}"], input="", capture_output=True, text=True)
    assert p.returncode == 2 and f"{bad}:3:" in p.stderr and "BASE_DELAY_MS" in p.stderr, p.stderr
    p = subprocess.run([str(mml), "simulate", str(tmp_path / "heavy"), "--light-idle-ms=3"], input="", capture_output=True, text=True)
    assert p.returncode == 2 and "without --light" in p.stderr, p.stderr


# sha256 of `simulate`'s output for the cases below, from the binary of main ca46340 (before the light
# stage existed): plain replay must not change by a byte.
PLAIN_DIGEST = "6db03a8f9eb32e9120f376b6e4a937679f3236a49dfc7cb841fda67dab29d343"


def plain_cases(tmp: Path):
    for case in range(12):
        rng = random.Random(9100 + case)
        trace = random_trace(rng)
        tf = tmp / f"t{case}"
        tf.write_text("".join(f"{x}\n" for x in trace))
        kind, qargs, _ = QUEUES[case % len(QUEUES)]
        args = [f"--queue={kind}", f"--queue-args={qargs}", "--seed=3"] + (["--ms-bursts"] if case % 2 else [])
        yield tf, args, bursty_arrivals(rng, 800)


def plain_digest(mml: Path, tmp: Path) -> str:
    h = hashlib.sha256()
    for tf, args, arrivals in plain_cases(tmp):
        stdin = "".join(f"{t} {s}\n" for t, s in arrivals).encode()
        h.update(subprocess.run([str(mml), "simulate", str(tf), *args], input=stdin, capture_output=True, check=True).stdout)
    return h.hexdigest()


def test_plain_replay_is_byte_identical_to_before_the_light_stage(mml, tmp_path):
    assert plain_digest(mml, tmp_path) == PLAIN_DIGEST


LIGHT_CASES = {
    "ok": "0 20 0 3\n200 21 0 3 3\n400 19 0\n",
    "comments and header": "# continuum light trace\n# pdo_bytes: 1400\n0 20 0\n200 21 0\n400 19 0\n",
    "spaces around": "  0 20 0 3  \n200\t21 0 3\n400 19 0\n",
    "two lines": "0 20 0\n200 21 0\n",
    "empty line": "0 20 0\n\n200 21 0\n400 19 0\n",
    "letter": "0 20 0\n200 2x 0\n400 19 0\n",
    "plus sign": "0 20 0\n200 +21 0\n400 19 0\n",
    "negative": "0 20 0\n200 -1 0\n400 19 0\n",
    "too few fields": "0 20 0\n200 21\n400 19 0\n",
    "first offset not 0": "0 20 0\n200 21 1 4\n400 19 0\n",
    "offsets going back": "0 20 0 5 4\n200 21 0\n400 19 0\n",
    "time not increasing": "0 20 0\n200 21 0\n200 19 0\n",
    "empty file": "",
}


@pytest.mark.parametrize("case", sorted(LIGHT_CASES))
def test_the_python_parser_and_the_emulator_agree_on_light_traces(mml, tmp_path, case):
    """continuum validate (continuum/tracearchive/light.py) and mahimahi-link refuse the same light
    files, at the same line: a file the run accepts is one the emulator runs."""
    from continuum.tracearchive import light

    f = tmp_path / "t.light"
    f.write_text(LIGHT_CASES[case])
    (tmp_path / "heavy").write_text("1\n")
    p = subprocess.run([str(mml), "simulate", str(tmp_path / "heavy"), f"--light={f}"], input="", capture_output=True, text=True)
    try:
        light.parse(f)
        ours = None
    except light.LightTraceError as e:
        ours = str(e)
    assert (p.returncode == 0) == (ours is None), (p.stderr, ours)
    if ours is not None:
        where = ours.split(": ", 1)[0]
        assert p.stderr.startswith(f"mahimahi-link: {where}: "), (p.stderr, ours)
