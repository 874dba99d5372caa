"""Light traces: the latency part of workload-aware replay (CellReplay, NSDI
2025), the part a saturating (heavy) trace cannot carry.

A light trace records short packet trains sent every G ms through an idle
path: per train, its send time, the first packet's one-way (base) delay and
every packet's delivery offset from the first one's (ms). mahimahi-link
(src/burst.rs) releases a burst that finds the link idle after the base
delay, then at the train's offsets, and the rest through the heavy trace.

The file is CellReplay's format (`TIME_MS BASE_DELAY_MS PDO_MS...`) with
this project's `# key: value` header lines, which mahimahi-link ignores and
`continuum run` passes on as options:

    # pdo_bytes: 1504   bytes one offset carries (the train's packets, IP length + 4)
    # idle_ms: 12       a burst ends once the link is idle this long (CellReplay's F)
    # offsets: NAME     a per-size delay offset file beside it (`SIZE OFFSET_MS` for 100, 200, ...)
    # active_ms: 5      the path's latency on an active link: with it, a burst lasts while the link holds
                        packets and a packet then leaves no sooner than this (without: CellReplay's rule;
                        mahimahi-link src/burst.rs BurstOptions, docs/link-replay.md)

The parser follows the emulator's rules exactly (tests hold the two to the
same verdicts) and names the file and line of every problem."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from continuum.tracearchive import mahimahi

HEADER_KEYS = ("pdo_bytes", "idle_ms", "offsets", "active_ms")
DEFAULT_PDO_BYTES = mahimahi.OPPORTUNITY_BYTES
DEFAULT_IDLE_MS = 1.0  # mahimahi-link's default (src/options/mod.rs DEFAULT_IDLE_MS: why not CellReplay's 0)
WANT = '"TIME_MS BASE_DELAY_MS PDO_MS..." (integers; the first delivery offset 0)'


class LightTraceError(ValueError):
    pass


@dataclass
class LightLine:
    t_ms: int
    base_ms: int
    pdos_ms: list[int]


@dataclass
class LightTrace:
    path: Path
    lines: list[LightLine]
    pdo_bytes: int = DEFAULT_PDO_BYTES
    idle_ms: float = DEFAULT_IDLE_MS
    offsets: Path | None = None
    active_ms: float | None = None
    header: dict[str, str] = field(default_factory=dict)

    def period_ms(self) -> int:
        return self.lines[-1].t_ms - self.lines[0].t_ms

    def summary(self) -> dict:
        """What a reader wants first: base delay's spread, the trains' length and span."""
        base = [ln.base_ms for ln in self.lines]
        span = [ln.pdos_ms[-1] for ln in self.lines]
        size = [len(ln.pdos_ms) for ln in self.lines]
        pct = statistics.quantiles(base, n=20) if len(base) > 1 else [base[0]] * 19
        return {"trains": len(self.lines), "period_s": self.period_ms() / 1000,
                "train_gap_ms": self.period_ms() / max(len(self.lines) - 1, 1),
                "base_delay_ms": {"median": statistics.median(base), "p5": pct[0], "p95": pct[-1], "min": min(base), "max": max(base)},
                "train_packets": {"median": statistics.median(size), "min": min(size), "max": max(size)},
                "train_span_ms": {"median": statistics.median(span), "max": max(span)},
                "pdo_bytes": self.pdo_bytes, "idle_ms": self.idle_ms, "active_ms": self.active_ms,
                "offsets": self.offsets.name if self.offsets else None}


def looks_light(path: Path) -> bool:
    """Whether a file is meant as a light trace: its first line that is not a comment has more than one field
    (a Mahimahi trace has one timestamp per line)."""
    try:
        with open(path, errors="replace") as f:
            for raw in f:
                s = raw.strip()
                if s and not s.startswith("#"):
                    return len(s.split()) > 1
                if s.startswith("# continuum light trace"):
                    return True
    except OSError:
        return False
    return False


def parse(path: Path, text: str | None = None) -> LightTrace:
    """A light trace, or LightTraceError naming file:line and what would be valid."""
    path = Path(path)
    if text is None:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise LightTraceError(f"{path}: cannot read light trace: {e}") from None
    lines: list[LightLine] = []
    header: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if s.startswith("#"):
            key, sep, value = s[1:].strip().partition(":")
            if sep and key.strip() in HEADER_KEYS:
                header[key.strip()] = value.strip()
            continue
        if not s:
            raise LightTraceError(f"{path}:{n}: empty line ({WANT})")
        fields = s.split()
        bad = next((w for w in fields if not (w.isascii() and w.isdigit())), None)
        if bad is not None:
            raise LightTraceError(f"{path}:{n}: not a non-negative integer: {bad!r} ({WANT})")
        f = [int(w) for w in fields]
        if len(f) < 3:
            raise LightTraceError(f"{path}:{n}: {len(f)} field(s) ({WANT})")
        line = LightLine(f[0], f[1], f[2:])
        if line.pdos_ms[0] != 0:
            raise LightTraceError(f"{path}:{n}: the first delivery offset is {line.pdos_ms[0]} ms: offsets count from the "
                                  "train's first packet, which is 0")
        if any(b < a for a, b in zip(line.pdos_ms, line.pdos_ms[1:])):
            raise LightTraceError(f"{path}:{n}: delivery offsets must be non-decreasing")
        if lines and line.t_ms <= lines[-1].t_ms:
            raise LightTraceError(f"{path}:{n}: time {line.t_ms} ms is not after the previous line's {lines[-1].t_ms} ms "
                                  "(times must increase)")
        lines.append(line)
    if len(lines) < 3:
        raise LightTraceError(f"{path}: {len(lines)} line(s): a light trace needs at least three (the last one ends the loop)")
    t = LightTrace(path, lines, header=header)
    try:
        if "pdo_bytes" in header:
            t.pdo_bytes = int(header["pdo_bytes"])
            if not 1 <= t.pdo_bytes <= 65536:
                raise ValueError
    except ValueError:
        raise LightTraceError(f"{path}: header pdo_bytes: {header['pdo_bytes']!r} is not a byte count 1..65536 "
                              "(a train packet's IP length + 4)") from None
    if "idle_ms" in header:
        t.idle_ms = _header_ms(path, header, "idle_ms", "")
    if "active_ms" in header:
        t.active_ms = _header_ms(path, header, "active_ms", " (the path's latency on an active link)")
    if header.get("offsets"):
        t.offsets = path.parent / header["offsets"]
        parse_offsets(t.offsets)
    return t


def _header_ms(path: Path, header: dict[str, str], key: str, why: str) -> float:
    """A header value in milliseconds: a finite number >= 0, else an error naming the file and key."""
    try:
        v = float(header[key])
    except ValueError:
        v = -1.0
    if not 0 <= v < float("inf"):
        raise LightTraceError(f"{path}: header {key}: {header[key]!r} is not a non-negative number of ms{why}")
    return v


def parse_offsets(path: Path) -> list[float]:
    """A per-size offset file (CellReplay's latency-offset): `SIZE OFFSET_MS` for 100, 200, ... bytes."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise LightTraceError(f"{path}: cannot read size offset file: {e}") from None
    out: list[float] = []
    for n, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        want = (len(out) + 1) * 100
        f = s.split()
        try:
            size, off = int(f[0]), float(f[1])
            if len(f) != 2 or off != off or abs(off) == float("inf"):
                raise ValueError
        except (ValueError, IndexError):
            raise LightTraceError(f"{path}:{n}: expected \"PACKET_SIZE OFFSET_MS\" (e.g. \"{want} 0.4\")") from None
        if size != want:
            raise LightTraceError(f"{path}:{n}: sizes go 100, 200, ... in steps of 100 and offsets are numbers: "
                                  f"expected size {want} here, got {size}")
        out.append(off)
    if not out:
        raise LightTraceError(f"{path}: no offsets (expected \"100 OFFSET_MS\", \"200 OFFSET_MS\", ...)")
    return out


def write_offsets(path: Path, offsets: list[tuple[int, float]], note: str = "") -> Path:
    """A per-size offset file, as parse_offsets reads it; `offsets` from 100 bytes on in steps of 100."""
    head = [f"# {x}" for x in note.splitlines() if x]
    path.write_text("\n".join(head + [f"{size} {off:g}" for size, off in offsets]) + "\n")
    parse_offsets(path)
    return path


def write(path: Path, lines: list[LightLine], pdo_bytes: int, idle_ms: float, offsets: str | None = None,
          note: str = "", active_ms: float | None = None) -> Path:
    head = ["# continuum light trace (CellReplay's format): TIME_MS BASE_DELAY_MS PDO_MS...",
            *(f"# {x}" for x in note.splitlines() if x),
            f"# pdo_bytes: {pdo_bytes}", f"# idle_ms: {idle_ms:g}"]
    if offsets:
        head.append(f"# offsets: {offsets}")
    if active_ms is not None:
        head.append(f"# active_ms: {active_ms:g}")
    body = [f"{ln.t_ms} {ln.base_ms} {' '.join(map(str, ln.pdos_ms))}" for ln in lines]
    path.write_text("\n".join(head + body) + "\n")
    return path


# --- CellReplay's published traces -------------------------------------------------------------------

CELLREPLAY_FILES = {"up-light": "up-delay-light-pdo", "down-light": "down-delay-light-pdo",
                    "up-heavy": "up-heavy-pdo", "down-heavy": "down-heavy-pdo",
                    "up-offsets": "latency-offset-up", "down-offsets": "latency-offset-down"}
CELLREPLAY_PACKET_BYTES = 1400  # mm-cellular's PACKET_SIZE: what one heavy or light PDO carries
CELLREPLAY_SOURCE = ("CellReplay (Sentosa, Chandrasekaran, Godfrey, Hassanieh, NSDI 2025), "
                     "github.com/williamsentosa95/cellreplay, traces/cellular-traces.zip; GPL-3.0 (the repository's LICENSE)")


def heavy_from_cellreplay(pdo_ms: list[int], packet_bytes: int = CELLREPLAY_PACKET_BYTES) -> list[int]:
    """CellReplay's heavy PDOs (one per delivered packet of `packet_bytes`) as this project's opportunities
    (1500 IP bytes each): a timestamp each time the delivered bytes pass another 1500, so the byte
    capacity is kept (their 1400-byte PDOs counted one each would overstate it by 7%)."""
    out, carried = [], 0
    for t in pdo_ms:
        carried += packet_bytes
        while carried >= mahimahi.OPPORTUNITY_IP_BYTES:
            carried -= mahimahi.OPPORTUNITY_IP_BYTES
            out.append(t)
    return out


def convert_cellreplay(src: Path, out: Path, name: str, idle_ms: dict[str, float], say=print) -> dict[str, Path]:
    """A CellReplay trace folder (up-delay-light-pdo, down-delay-light-pdo, up-heavy-pdo, down-heavy-pdo and,
    optionally, latency-offset-up/-down) -> NAME.up, NAME.down (heavy, Mahimahi format), NAME.up.light,
    NAME.down.light (with their header), NAME.up.offsets, NAME.down.offsets. Nothing is written unless
    every file reads."""
    from continuum.tracearchive import checks, mahimahi

    src, out = Path(src), Path(out)
    missing = [f for k, f in CELLREPLAY_FILES.items() if "offsets" not in k and not (src / f).is_file()]
    if missing:
        raise LightTraceError(f"{src}: not a CellReplay trace folder: missing {', '.join(missing)} "
                              f"(expected {', '.join(CELLREPLAY_FILES.values())}; the last two optional)")
    plan: dict[str, tuple[str, object]] = {}
    for d in ("up", "down"):
        heavy = mahimahi.read(src / CELLREPLAY_FILES[f"{d}-heavy"])
        errors = [f for f in checks.check_timestamps(heavy, str(src / CELLREPLAY_FILES[f"{d}-heavy"]), warnings=False)]
        if errors:
            raise LightTraceError(str(errors[0]))
        lt = parse(src / CELLREPLAY_FILES[f"{d}-light"])
        offs = src / CELLREPLAY_FILES[f"{d}-offsets"]
        plan[d] = ("heavy", heavy_from_cellreplay([int(x) for x in heavy]))
        plan[f"{d}.light"] = ("light", lt)
        if offs.is_file():
            parse_offsets(offs)
            plan[f"{d}.offsets"] = ("offsets", offs.read_text())
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for suffix, (kind, data) in plan.items():
        path = out / f"{name}.{suffix}"
        if kind == "heavy":
            mahimahi.write(path, data)  # type: ignore[arg-type]
        elif kind == "offsets":
            path.write_text(str(data))
        else:
            d = suffix.split(".")[0]
            lt = data  # type: ignore[assignment]
            assert isinstance(lt, LightTrace)
            offsets = f"{name}.{d}.offsets" if f"{d}.offsets" in plan else None
            write(path, lt.lines, CELLREPLAY_PACKET_BYTES, idle_ms.get(d, DEFAULT_IDLE_MS), offsets,
                  note=f"converted from {CELLREPLAY_FILES[d + '-light']} of {src}\nsource: {CELLREPLAY_SOURCE}\n"
                       f"idle_ms: CellReplay's F (--long-to-short-timer-{d}), {'as given' if d in idle_ms else 'not given: our default'}")
        written[suffix] = path
        say(f"wrote {path}")
    return written
