"""The orchestrator checks traces without running the emulator (so that
`continuum validate` needs nothing built and starts nothing); this holds its
parser to the emulator's: the same verdict, and the same line, on every
tricky input, plus seeded random ones."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from continuum import traces

CASES = {
    "plain": b"1\n2\n2\n5\n",
    "no trailing newline": b"1\n2",
    "crlf": b"1\r\n2\r\n",
    "spaces around": b" 1 \n\t2\t\n",
    "empty": b"",
    "only newline": b"\n",
    "blank line inside": b"1\n\n2\n",
    "two trailing newlines": b"1\n2\n\n",
    "whitespace-only line": b"1\n   \n2\n",
    "decreasing": b"1\n5\n3\n",
    "last zero": b"0\n0\n",
    "plus sign": b"1\n+2\n",
    "minus zero": b"-0\n1\n",
    "negative": b"1\n-2\n",
    "underscore": b"1\n2_000\n",
    "decimal": b"1\n2.5\n",
    "two numbers": b"1\n2 3\n",
    "hex": b"1\n0x10\n",
    "at the limit": f"1\n{1 << 40}\n".encode(),
    "over the limit": f"1\n{(1 << 40) + 1}\n".encode(),
    "decrease before the bad line": f"5\n3\n{(1 << 41)}\nx\n".encode(),
    "beyond int64": b"1\n99999999999999999999999\n",
    "arabic-indic digit": "1\n\u0662\n".encode(),
    "not utf-8": b"1\n\xff\n",
    "nul": b"1\n\x002\n",
}


def _emulator(mml: Path, path: Path) -> tuple[bool, int | None]:
    p = subprocess.run([str(mml), "validate", str(path)], capture_output=True, text=True)
    return p.returncode == 0, _line(p.stderr, path)


def _line(message: str, path: Path) -> int | None:
    rest = message.split(str(path), 1)[1] if str(path) in message else ""
    if rest.startswith(":") and rest[1:].split(":", 1)[0].isdigit():
        return int(rest[1:].split(":", 1)[0])
    return None


def _ours(path: Path) -> tuple[bool, int | None]:
    problem = traces.grammar_problem(path)
    return problem is None, _line(problem or "", path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_verdict_and_line_as_the_emulator(mml, tmp_path, name):
    f = tmp_path / "t.trace"
    f.write_bytes(CASES[name])
    assert _ours(f) == _emulator(mml, f), traces.grammar_problem(f)


def test_seeded_random_traces_get_the_same_verdict(mml, tmp_path):
    rng = random.Random(7)
    pieces = ["1", "2", "17", "0", "", " ", "+3", "-1", "4.0", "\r", "9" * 14, "1_0", "x", "\t5"]
    for i in range(60):
        lines = [rng.choice(pieces) if rng.random() < 0.2 else str(sorted(rng.sample(range(1, 50), 1))[0] + 10 * k)
                 for k in range(rng.randint(0, 8))]
        text = "\n".join(lines) + ("\n" if rng.random() < 0.7 else "")
        f = tmp_path / f"r{i}.trace"
        f.write_text(text)
        assert _ours(f) == _emulator(mml, f), (repr(text), traces.grammar_problem(f))
