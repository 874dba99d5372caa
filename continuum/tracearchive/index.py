"""The archive's index: one TOML file per entry in trace-archive/entries/
(so a contribution is one new file), validated with pydantic, and name
lookup that lists close matches for an unknown name.

Three kinds of entry:
- generated: made by the project from `recipe` (per direction) on first use;
- external: a public dataset, `sources` downloaded (or taken from a mirror)
  and checksummed, then `convert`ed per direction; never committed;
- contributed: files under trace-archive/contributed/<id>/, added with
  `continuum traces add` by their author.
Materialised files live in the cache ($CONTINUUM_TRACE_CACHE, default
~/.cache/continuum/traces) and are checked against `sha256` before use."""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from continuum import REPO

ARCHIVE = Path(os.environ.get("CONTINUUM_TRACE_ARCHIVE") or REPO / "trace-archive")  # tests point it elsewhere
ENTRIES = ARCHIVE / "entries"
CONTRIBUTED = ARCHIVE / "contributed"
DIRECTIONS = ("up", "down")

TECHNOLOGIES = ("LTE", "LTE-A", "5G NSA", "5G SA", "5G mmWave", "UMTS", "HSPA", "EVDO", "6G", "synthetic", "other")
MOBILITY = ("static", "walking", "driving", "train", "mixed", "n/a", "unknown")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)  # shared by the parse cache in entries()


class DirStats(Strict):
    duration_s: float
    opportunities: int
    mean_mbps: float
    median_mbps: float
    p5_mbps: float
    p95_mbps: float
    max_mbps: float
    outage_s: float
    outage_count: int


class SourceFile(Strict):
    name: str  # file name in the cache and, by default, in a mirror
    url: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    mirror_path: str | None = None  # path inside a mirror folder, if not just `name`


class Conversion(Strict):
    format: Literal["mahimahi", "per-second", "gnettrack", "sixcol"]
    source: str  # a SourceFile.name
    member: str | None = None  # a file inside a zip source
    gap_fill: Literal["hold", "zero"] = "hold"
    # A stand-in for a direction nobody recorded: read the other direction's
    # column (gnettrack) and scale its rates. Say so in the entry's notes.
    column: Literal["up", "down"] | None = None
    scale: float = Field(default=1.0, gt=0, le=100)
    # Whole seconds left out at the start (e.g. before the recorded transfer began).
    skip_s: int = Field(default=0, ge=0)


class Entry(Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
    kind: Literal["generated", "external", "contributed"]
    title: str
    aliases: list[str] = []
    technology: str
    operator: str
    country: str
    mobility: str
    obstacle: str
    date: str
    recorder: str
    method: str
    license: str
    citation: str
    notes: str = ""
    files: dict[str, str]  # direction -> file name
    sha256: dict[str, str] = {}
    stats: dict[str, DirStats] = {}
    recipe: dict[str, dict] = {}
    sources: list[SourceFile] = []
    convert: dict[str, Conversion] = {}
    extra: dict[str, object] = {}  # e.g. a recording's core latency
    # Workload-aware replay's light part per direction (continuum/tracearchive/light.py), files beside
    # `files` (contributed entries), checksums in sha256 as "up-light"; its per-size offsets likewise.
    light: dict[str, str] = {}
    light_offsets: dict[str, str] = {}

    @field_validator("technology")
    @classmethod
    def _tech(cls, v: str) -> str:
        if v not in TECHNOLOGIES:
            raise ValueError(f"{v!r} is not one of: {', '.join(TECHNOLOGIES)}")
        return v

    @field_validator("mobility")
    @classmethod
    def _mob(cls, v: str) -> str:
        if v not in MOBILITY:
            raise ValueError(f"{v!r} is not one of: {', '.join(MOBILITY)}")
        return v

    @field_validator("date")
    @classmethod
    def _date(cls, v: str) -> str:
        if v != "unknown" and not re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", v):
            raise ValueError(f"{v!r}: use YYYY, YYYY-MM or YYYY-MM-DD (or unknown)")
        return v

    @field_validator("files")
    @classmethod
    def _files(cls, v: dict[str, str]) -> dict[str, str]:
        if not v or set(v) - set(DIRECTIONS):
            raise ValueError(f"directions must be among {DIRECTIONS}, got {sorted(v)}")
        return v

    @field_validator("light", "light_offsets")
    @classmethod
    def _light(cls, v: dict[str, str]) -> dict[str, str]:
        if set(v) - set(DIRECTIONS):
            raise ValueError(f"directions must be among {DIRECTIONS}, got {sorted(v)}")
        return v

    def direction_names(self) -> list[str]:
        return [d for d in DIRECTIONS if d in self.files]


class IndexError_(ValueError):
    pass


class UnknownTrace(LookupError):
    def __init__(self, name: str, matches: list[str]):
        self.name, self.matches = name, matches
        hint = f"; close matches: {', '.join(matches)}" if matches else ""
        super().__init__(f"no trace named {name!r} in the archive{hint} (see: continuum traces list)")


def entry_path(entry_id: str) -> Path:
    return ENTRIES / f"{entry_id}.toml"


def load(path: Path) -> Entry:
    try:
        data = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as e:
        raise IndexError_(f"{path}: {e}") from None
    try:
        entry = Entry.model_validate(data)
    except ValidationError as e:
        lines = [f"{path}: {'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors()]
        raise IndexError_("\n".join(lines)) from None
    if entry.id != Path(path).stem:
        raise IndexError_(f"{path}: id {entry.id!r} must match the file name")
    return entry


def dump(entry: Entry) -> str:
    import tomli_w

    data = _no_nulls(entry.model_dump(exclude_defaults=True, mode="json"))
    for k in ("id", "kind", "title", "files"):  # required even when they equal a default
        data[k] = getattr(entry, k)
    return tomli_w.dumps(data)


def _no_nulls(v):
    """TOML has no null: a None in `extra` (e.g. a recording's metadata) is left out."""
    if isinstance(v, dict):
        return {k: _no_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_no_nulls(x) for x in v if x is not None]
    return v


def write(entry: Entry) -> Path:
    path = entry_path(entry.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump(entry))
    return path


_PARSED: dict[tuple[Path, int, int], Entry] = {}


def entries() -> list[Entry]:
    """Every archive entry. Parsed entries are kept per (file, mtime, size):
    each trace name in an experiment file looks the archive up, and parsing
    its TOML files each time made one `continuum validate` cost 15 ms a name;
    an entry written or edited since is parsed again."""
    out = []
    for p in sorted(ENTRIES.glob("*.toml")):
        st = p.stat()
        key = (p, st.st_mtime_ns, st.st_size)
        if key not in _PARSED:
            _PARSED[key] = load(p)
        out.append(_PARSED[key])
    return out


def _names(es: list[Entry]) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for e in es:
        for n in (e.id, *e.aliases):
            out[n.lower()] = e
    return out


def find(name: str) -> tuple[Entry, str | None]:
    """(entry, direction or None). `NAME.up` / `NAME.down` pick a direction."""
    es = entries()
    names = _names(es)
    key = name.lower()
    if key in names:
        return names[key], None
    for d in DIRECTIONS:
        if key.endswith(f".{d}") and key[: -len(d) - 1] in names:
            return names[key[: -len(d) - 1]], d
    pool = sorted({e.id for e in es} | {a for e in es for a in e.aliases})
    close = difflib.get_close_matches(name, pool, n=5, cutoff=0.5)
    low = {p.lower(): p for p in pool}
    close += [low[c] for c in difflib.get_close_matches(key, list(low), n=5, cutoff=0.5) if low[c] not in close]
    raise UnknownTrace(name, close[:5])


def cache_dir() -> Path:
    return Path(os.environ.get("CONTINUUM_TRACE_CACHE") or Path.home() / ".cache" / "continuum" / "traces")


def default_mirror() -> Path | None:
    """$CONTINUUM_TRACE_MIRROR, else ../shared/traces beside the repository."""
    env = os.environ.get("CONTINUUM_TRACE_MIRROR")
    if env:
        return Path(env)
    shared = REPO.parent / "shared" / "traces"
    return shared if shared.is_dir() else None
