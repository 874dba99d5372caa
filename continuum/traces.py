"""Find a trace by archive name or path, and check it with the emulator's own
parser (so the orchestrator and the link agree on what a valid trace is)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def search_dirs() -> list[Path]:
    """Where archive names are looked up, in order: $CONTINUUM_TRACE_PATH
    (colon-separated), the repository's archive and configs, then ../shared/traces."""
    dirs = [Path(p) for p in os.environ.get("CONTINUUM_TRACE_PATH", "").split(":") if p]
    dirs += [REPO / "trace-archive" / "traces", REPO / "configs" / "traces"]
    shared = REPO.parent / "shared" / "traces"
    if shared.is_dir():
        dirs += [shared / "mahimahi", shared]
    return dirs


@dataclass(frozen=True)
class TraceRef:
    given: str
    path: Path
    sha256: str


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


def locate(given: str, base: Path) -> Path | None:
    """A path (absolute, or relative to the experiment file or the working
    directory) or an archive name."""
    p = Path(given)
    candidates = [p] if p.is_absolute() else [base / p, Path.cwd() / p]
    if "/" not in given:
        candidates += [d / given for d in search_dirs()]
    for c in candidates:
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
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def resolve(given: str, base: Path) -> tuple[TraceRef | None, str | None]:
    """(reference, None) or (None, what is wrong)."""
    path = locate(given, base)
    if path is None:
        where = ", ".join(str(d) for d in search_dirs())
        return None, f"trace {given!r} not found: not a file, and no archive entry of that name in {where}"
    problem = check(path)
    if problem:
        return None, f"trace {given!r} is not a valid Mahimahi trace: {problem}"
    return TraceRef(given, path, sha256(path)), None
