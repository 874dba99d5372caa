"""Find a trace by archive name or path, and check it by the emulator's
grammar (a test holds the two parsers to the same verdicts).
Archive names come from the trace archive's index (continuum.tracearchive);
an external dataset not fetched yet is taken from the mirror when one is
there ($CONTINUUM_TRACE_MIRROR or ../shared/traces), never downloaded here."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from continuum import REPO



@dataclass(frozen=True)
class TraceRef:
    given: str
    path: Path
    sha256: str
    archive_id: str | None = None


def mean_mbit(path: Path | str | None) -> float | None:
    """A Mahimahi trace's mean rate in Mbit/s of IP packets (one opportunity per line, over its period), as
    `continuum traces stats` gives it; None without the file."""
    from continuum.tracearchive.mahimahi import OPPORTUNITY_BITS

    if not path or not Path(path).is_file():
        return None
    ms = [int(x) for x in Path(path).read_text().split()]
    return len(ms) * OPPORTUNITY_BITS / max(ms[-1], 1) / 1e3 if ms else None


def mahimahi_link_binary() -> Path:
    """The emulator binary: $MAHIMAHI_LINK, the repository build, or PATH."""
    env = os.environ.get("MAHIMAHI_LINK")
    if env:
        return Path(env)
    built = REPO / "mahimahi-link" / "target" / "release" / "mahimahi-link"
    if built.exists():
        return built
    found = shutil.which("mahimahi-link")
    return Path(found) if found else built


def locate_file(given: str, base: Path) -> Path | None:
    """A path, absolute or relative to the experiment file or the working directory."""
    try:
        p = Path(given).expanduser()
    except RuntimeError:  # ~nosuchuser/...: no such home, so no such file
        return None
    for c in ([p] if p.is_absolute() else [base / p, Path.cwd() / p]):
        try:
            if c.is_file():
                return c.resolve()
        except (OSError, ValueError):  # a name too long for a path, a NUL byte: no such file
            continue
    return None


def sha256(path: Path) -> str:
    from continuum.tracearchive.fetch import sha256_file

    return sha256_file(path)


def grammar_problem(path: Path) -> str | None:
    """None when the file is a trace mahimahi-link accepts, else file:line: why.
    The same rules as the emulator's parser (tests/orchestrator/test_trace_grammar.py
    holds both to the same verdicts), without running it."""
    from continuum.tracearchive import checks

    errors = [f for f in checks.check_file(path, warnings=False) if f.level == "error"]
    return str(errors[0]).replace(": error: ", ": ", 1) if errors else None


def resolve(given: str, base: Path, direction: str = "up", materialize: bool = True) -> tuple[TraceRef | None, str | None]:
    """(reference, None) or (None, what is wrong). `direction` ("up" or
    "down") picks an archive entry's file unless the name says NAME.up/.down.
    materialize=False writes nothing and starts nothing: an archive trace
    not made yet is only checked to be makeable from this machine, and its
    reference carries the index's checksum (`continuum validate`, `--dry-run`)."""
    from continuum.tracearchive import fetch, index

    path = locate_file(given, base)
    if path is not None:
        problem = grammar_problem(path)
        if problem:
            return None, f"trace {given!r} is not a valid Mahimahi trace: {problem}"
        return TraceRef(given, path, sha256(path)), None
    try:
        entry, named_dir = index.find(given)
        d = named_dir or direction
        if not materialize:
            return TraceRef(given, fetch.available(entry, d), entry.sha256.get(d) or "unknown until made", entry.id), None
        path = fetch.materialize(entry, d, say=lambda _m: None)  # checksum-verified against the index
    except index.UnknownTrace as e:
        looks_like_path = "/" in given or given.startswith(".")
        return None, (f"trace {given!r}: no such file" + (f" (relative to {base})" if looks_like_path else f", and {e}"))
    except (fetch.FetchError, index.IndexError_) as e:
        return None, f"trace {given!r}: {e}"
    problem = grammar_problem(path) if entry.sha256.get(d) is None else None
    if problem:
        return None, f"trace {given!r} is not a valid Mahimahi trace: {problem}"
    return TraceRef(given, path, sha256(path), entry.id), None
