"""Find a trace by archive name or path, and check it with the emulator's own
parser (so the orchestrator and the link agree on what a valid trace is).
Archive names come from the trace archive's index (continuum.tracearchive);
an external dataset not fetched yet is taken from the mirror when one is
there ($CONTINUUM_TRACE_MIRROR or ../shared/traces), never downloaded here."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class TraceRef:
    given: str
    path: Path
    sha256: str
    archive_id: str | None = None


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
    p = Path(given).expanduser()
    for c in ([p] if p.is_absolute() else [base / p, Path.cwd() / p]):
        if c.is_file():
            return c.resolve()
    return None


def check(path: Path) -> str | None:
    """None when the trace is valid, else the emulator's message (file:line: why)."""
    binary = mahimahi_link_binary()
    if not binary.exists():
        return f"cannot check traces: {binary} is missing (run ./setup.sh to build mahimahi-link)"
    p = subprocess.run([str(binary), "validate", str(path)], capture_output=True, text=True)
    if p.returncode == 0:
        return None
    return (p.stderr or p.stdout).strip().removeprefix("mahimahi-link: ")


def sha256(path: Path) -> str:
    from continuum.tracearchive.fetch import sha256_file

    return sha256_file(path)


def resolve(given: str, base: Path, direction: str = "up") -> tuple[TraceRef | None, str | None]:
    """(reference, None) or (None, what is wrong). `direction` ("up" or
    "down") picks an archive entry's file unless the name says NAME.up/.down."""
    from continuum.tracearchive import fetch, index

    path = locate_file(given, base)
    archive_id = None
    if path is None:
        try:
            entry, named_dir = index.find(given)
            path = fetch.materialize(entry, named_dir or direction, say=lambda _m: None)
            archive_id = entry.id
        except index.UnknownTrace as e:
            looks_like_path = "/" in given or given.startswith(".")
            return None, (f"trace {given!r}: no such file" + (f" (relative to {base})" if looks_like_path else f", and {e}"))
        except (fetch.FetchError, index.IndexError_) as e:
            return None, f"trace {given!r}: {e}"
    problem = check(path)
    if problem:
        return None, f"trace {given!r} is not a valid Mahimahi trace: {problem}"
    return TraceRef(given, path, sha256(path), archive_id), None
