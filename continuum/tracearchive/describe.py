"""Checksums and statistics of an entry's files, written into the entry, so
`list` and `show` need no trace on disk and a fetch can be verified."""

from __future__ import annotations

from pathlib import Path

from continuum.tracearchive import fetch, mahimahi, stats
from continuum.tracearchive.index import DirStats, Entry


def describe_files(entry: Entry, paths: dict[str, Path]) -> Entry:
    sha, st = {}, {}
    for d, p in paths.items():
        sha[d] = fetch.sha256_file(p)
        st[d] = DirStats(**stats.compute(mahimahi.read(p)).summary())
    return entry.model_copy(update={"sha256": sha, "stats": st})


def describe(entry: Entry, mirror: Path | None = None, download: bool = False) -> Entry:
    """Materialise without checksum expectations, then record them."""
    bare = entry.model_copy(update={"sha256": {}})
    if entry.kind != "contributed":
        for d in entry.direction_names():
            fetch.target(entry, d).unlink(missing_ok=True)
    paths = {d: fetch.materialize(bare, d, mirror, download) for d in entry.direction_names()}
    return describe_files(entry, paths)
