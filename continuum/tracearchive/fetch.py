"""Turn an index entry into trace files on disk: generate from a recipe,
take a contributed file, or fetch an external dataset (a mirror folder for
offline machines, else its download address) and convert it. Every source
and every produced file is checked against the index's SHA-256, so a trace
name means the same bytes on every machine."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from continuum.tracearchive import convert, mahimahi, synth
from continuum.tracearchive.index import CONTRIBUTED, Entry, cache_dir, default_mirror


class FetchError(RuntimeError):
    pass


class NotFetched(FetchError):
    pass


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verified(path: Path, expected: str | None, remember: bool = True) -> bool:
    """Whether `path` (a file this project wrote, in the cache or the archive)
    exists with the expected checksum. The result is kept in a sidecar (size
    and hash) so a large file is hashed once, unless remember is False (a
    check that must write nothing); never used on a mirror, which is not
    ours to write in."""
    if not path.is_file():
        return False
    if expected is None:
        return True
    side = path.with_name(path.name + ".sha256")
    size = path.stat().st_size
    if side.is_file() and side.read_text().split() == [str(size), expected]:
        return True
    if sha256_file(path) != expected:
        return False
    if remember:
        side.write_text(f"{size} {expected}\n")
    return True


def _write_checked(path: Path, ts, expected: str | None, what: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    mahimahi.write(Path(tmp), ts)
    got = sha256_file(Path(tmp))
    if expected is not None and got != expected:
        Path(tmp).unlink()
        raise FetchError(f"{what}: produced SHA-256 {got}, the index says {expected}; the recipe, the converter or the source changed")
    os.replace(tmp, path)
    path.with_name(path.name + ".sha256").write_text(f"{path.stat().st_size} {got}\n")
    return path


def target(entry: Entry, direction: str) -> Path:
    if entry.kind == "contributed":
        return CONTRIBUTED / entry.id / entry.files[direction]
    return cache_dir() / entry.id / entry.files[direction]


def light_path(entry: Entry, direction: str) -> Path | None:
    """The light part of one direction (workload-aware replay), checksum-verified; None if it has none."""
    name = entry.light.get(direction)
    if name is None:
        return None
    if entry.kind != "contributed":
        raise FetchError(f"trace {entry.id!r}: light parts come with contributed entries (recorded files); a {entry.kind} "
                         "entry's light part cannot be made")
    for key, file in ((f"{direction}-light", name), (f"{direction}-light-offsets", entry.light_offsets.get(direction))):
        if file is not None and not verified(CONTRIBUTED / entry.id / file, entry.sha256.get(key), remember=False):
            raise FetchError(f"{CONTRIBUTED / entry.id / file}: missing or its SHA-256 differs from the index ({key})")
    return CONTRIBUTED / entry.id / name


def source_path(entry: Entry, name: str, mirror: Path | None, download: bool, say=print, remember: bool = True) -> Path:
    src = next((s for s in entry.sources if s.name == name), None)
    if src is None:
        raise FetchError(f"entry {entry.id}: conversion names source {name!r}, which is not among its sources")
    cached = cache_dir() / "_sources" / src.name
    if verified(cached, src.sha256, remember):
        return cached
    mirrors = [m for m in (mirror, default_mirror()) if m is not None]
    for m in mirrors:
        for cand in (m / (src.mirror_path or src.name), m / src.name):
            if cand.is_file():
                if sha256_file(cand) == src.sha256:
                    return cand
                raise FetchError(f"{cand}: SHA-256 differs from the index ({src.sha256}); not the published file")
    if not download:
        where = f" (looked in the mirror {', '.join(map(str, mirrors))})" if mirrors else ""
        raise NotFetched(f"trace {entry.id!r} is not fetched{where}: run `continuum traces fetch {entry.id}` (downloads {src.url}) or `--mirror DIR`")
    say(f"downloading {src.url}")
    cached.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cached.parent, prefix=f".{src.name}.")
    os.close(fd)
    try:
        with urllib.request.urlopen(src.url, timeout=60) as r, open(tmp, "wb") as f:
            shutil.copyfileobj(r, f)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise FetchError(f"downloading {src.url}: {e}") from None
    got = sha256_file(Path(tmp))
    if got != src.sha256:
        Path(tmp).unlink()
        raise FetchError(f"{src.url}: SHA-256 {got} differs from the index ({src.sha256})")
    os.replace(tmp, cached)
    return cached


def available(entry: Entry, direction: str, mirror: Path | None = None) -> Path:
    """Where `materialize` puts this direction's file, once it is sure the
    file is there or can be made from what is on this machine. Writes
    nothing (for `continuum validate` and `--dry-run`); FetchError or
    NotFetched says what is missing."""
    if direction not in entry.files:
        have = ", ".join(entry.direction_names())
        raise FetchError(f"trace {entry.id!r} has no {direction}link file (it has: {have})")
    out = target(entry, direction)
    if verified(out, entry.sha256.get(direction), remember=False):
        return out
    what = f"{entry.id} ({direction})"
    if entry.kind == "contributed":
        raise FetchError(f"{out}: missing or its SHA-256 differs from the index")
    if entry.kind == "generated":
        if direction not in entry.recipe:
            raise FetchError(f"{what}: bad recipe: no recipe for this direction")
        return out
    conv = entry.convert.get(direction)
    if conv is None:
        raise FetchError(f"{what}: the entry says nothing on how to make this direction (convert.{direction})")
    source_path(entry, conv.source, mirror, download=False, say=lambda _m: None, remember=False)
    return out


def materialize(entry: Entry, direction: str, mirror: Path | None = None, download: bool = False, say=print) -> Path:
    """The trace file for one direction, made if needed and checksum-verified."""
    if direction not in entry.files:
        have = ", ".join(entry.direction_names())
        raise FetchError(f"trace {entry.id!r} has no {direction}link file (it has: {have})")
    out = target(entry, direction)
    expected = entry.sha256.get(direction)
    if verified(out, expected):
        return out
    what = f"{entry.id} ({direction})"
    if entry.kind == "contributed":
        raise FetchError(f"{out}: missing or its SHA-256 differs from the index")
    if entry.kind == "generated":
        try:
            ts = synth.generate(entry.recipe[direction])
        except (KeyError, synth.RecipeError) as e:
            raise FetchError(f"{what}: bad recipe: {e}") from None
        return _write_checked(out, ts, expected, what)
    conv = entry.convert.get(direction)
    if conv is None:
        raise FetchError(f"{what}: the entry says nothing on how to make this direction (convert.{direction})")
    src = source_path(entry, conv.source, mirror, download, say)
    if conv.format == "mahimahi":
        if conv.scale != 1.0 or conv.column or conv.skip_s:
            raise FetchError(f"{what}: scale, column and skip_s apply to rate formats, not to a mahimahi trace")
        ts = mahimahi.read(src)
    else:
        if conv.column and conv.format != "gnettrack":
            raise FetchError(f"{what}: column applies to gnettrack sources (one rate column per direction), not {conv.format}")
        if conv.format == "gnettrack":
            text = _member_text(src, conv.member) if conv.member else src.read_text(errors="replace")
            s = convert.read_gnettrack(None, conv.column or direction, conv.gap_fill, text=text, name=f"{src.name}:{conv.member or ''}")
        elif conv.format == "per-second":
            s = convert.read_per_second(src, conv.gap_fill)
        else:
            s = convert.read_sixcol(src)
        if conv.skip_s:
            if conv.format == "sixcol":
                raise FetchError(f"{what}: skip_s applies to per-second sources (per-second, gnettrack), not sixcol")
            s = convert.skipped(s, conv.skip_s)
        if conv.scale != 1.0:
            s = convert.scaled(s, conv.scale)
        ts, findings = convert.to_trace(s)
        errors = [f for f in findings if f.level == "error"]
        if errors:
            raise FetchError("; ".join(map(str, errors)))
    return _write_checked(out, ts, expected, what)


def _member_text(zpath: Path, member: str) -> str:
    with zipfile.ZipFile(zpath) as z:
        try:
            return io.TextIOWrapper(z.open(member), errors="replace").read()
        except KeyError:
            raise FetchError(f"{zpath}: no member {member!r}") from None


def fetch(entry: Entry, mirror: Path | None = None, download: bool = True, say=print) -> dict[str, Path]:
    return {d: materialize(entry, d, mirror, download, say) for d in entry.direction_names()}
