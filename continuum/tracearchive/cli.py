"""`continuum traces ...`: list, show, validate, stats, plot, convert, fetch,
record, add. Errors become TraceCommandError (exit status 1, or 2 for bad
usage) with a message that names the file, line or option."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from continuum.errors import TraceCommandError
from continuum.tracearchive import checks, contribute, convert, drive, fetch, index, mahimahi, stats
from continuum.tracearchive.convert import ConvertError


def add_parser(sub) -> None:
    t = sub.add_parser("traces", help="the trace archive: list, show, validate, stats, plot, convert, fetch, record, add")
    ts = t.add_subparsers(dest="traces_command", required=True)
    ls = ts.add_parser("list", help="the archive's entries with their statistics")
    ls.add_argument("--kind", choices=["generated", "external", "contributed"])
    ls.add_argument("--technology")
    sh = ts.add_parser("show", help="everything the index says about one entry")
    sh.add_argument("name")
    va = ts.add_parser("validate", help="check Mahimahi trace files (errors and warnings with file:line)")
    va.add_argument("files", nargs="+", type=Path)
    st = ts.add_parser("stats", help="capacity per second, outages (gaps > 100 ms), duration of a trace file or archive name")
    st.add_argument("trace")
    st.add_argument("--per-second", action="store_true", help="print every second's capacity")
    st.add_argument("--json", action="store_true")
    pl = ts.add_parser("plot", help="PNG: capacity over time per direction (outages shaded) and its CDF")
    pl.add_argument("trace", help="archive name or trace file")
    pl.add_argument("-o", "--output", type=Path, help="PNG file (default: NAME.png here)")
    pl.add_argument("--mirror", type=Path)
    cv = ts.add_parser("convert", help="convert a public dataset file to a Mahimahi trace (cellreplay: a CellReplay trace "
                                       "folder to heavy and light traces for workload-aware replay)")
    cv.add_argument("format", choices=[*convert.FORMATS, "cellreplay"])
    cv.add_argument("source", type=Path, help="the dataset file (cellreplay: the folder of up-delay-light-pdo, up-heavy-pdo, ...)")
    cv.add_argument("-o", "--output", type=Path, required=True, help="the trace file (cellreplay: the folder to write into)")
    cv.add_argument("--name", default="cellreplay", help="cellreplay: file names NAME.up, NAME.up.light, ...")
    cv.add_argument("--idle-ms-up", type=float, help="cellreplay: the uplink's F (its --long-to-short-timer-up), if known")
    cv.add_argument("--idle-ms-down", type=float, help="cellreplay: the downlink's F, if known")
    cv.add_argument("--direction", choices=["up", "down"], default="down", help="gnettrack: UL_bitrate (up) or DL_bitrate (down)")
    cv.add_argument("--gap-fill", choices=["hold", "zero"], default="hold", help="missing seconds: previous rate (hold) or none")
    cv.add_argument("--time-col", default="0", help="csv: time column (name or index)")
    cv.add_argument("--rate-col", default="1", help="csv: rate column (name or index)")
    cv.add_argument("--time-unit", default="s", choices=list(convert.TIME_UNITS))
    cv.add_argument("--rate-unit", default="mbps", help=f"csv: one of {', '.join(convert.RATE_UNITS)}")
    cv.add_argument("--delimiter", default=",")
    fe = ts.add_parser("fetch", help="download (or copy from --mirror) and convert external datasets, checksum-verified")
    fe.add_argument("names", nargs="*")
    fe.add_argument("--all", action="store_true", help="every external entry")
    fe.add_argument("--mirror", type=Path, help="a folder holding the sources (offline machines)")
    rc = ts.add_parser("record", help="record a trace with the saturatr method (see trace-archive/README.md)")
    from continuum.tracearchive import record

    record.add_arguments(rc)
    ad = ts.add_parser("add", help="contribute recorded trace files as a new archive entry")
    ad.add_argument("id")
    ad.add_argument("--up", type=Path)
    ad.add_argument("--down", type=Path)
    ad.add_argument("--up-light", type=Path, help="the uplink's light trace (workload-aware replay; docs/link-replay.md)")
    ad.add_argument("--down-light", type=Path, help="the downlink's light trace")
    for k in contribute.REQUIRED:
        ad.add_argument(f"--{k}")
    ad.add_argument("--extra", type=Path, help="a JSON file with more facts (e.g. record's metadata.json)")


def run(args, console: Console) -> int:
    cmd = args.traces_command
    try:
        return {"list": _list, "show": _show, "validate": _validate, "stats": _stats, "plot": _plot, "convert": _convert,
                "fetch": _fetch, "record": _record, "add": _add}[cmd](args, console)
    except index.UnknownTrace as e:
        raise TraceCommandError(str(e)) from None
    except (fetch.FetchError, index.IndexError_, convert.ConvertError, contribute.AddError, mahimahi.TraceReadError) as e:
        raise TraceCommandError(str(e)) from None


def _fmt(x: float) -> str:
    return f"{x:.3g}" if x < 10 else f"{x:.0f}"


def _list(args, console: Console) -> int:
    t = Table(title="trace archive", show_lines=False)
    t.add_column("id", no_wrap=True)
    for col in ("kind", "technology", "operator", "mobility", "up mean / P5 / P95 Mbit/s", "down mean / P5 / P95 Mbit/s", "period s", "license", "here"):
        t.add_column(col, overflow="fold")
    for e in index.entries():
        if args.kind and e.kind != args.kind or args.technology and args.technology.lower() not in e.technology.lower():
            continue
        cells = []
        for d in ("up", "down"):
            s = e.stats.get(d)
            cells.append(f"{_fmt(s.mean_mbps)} / {_fmt(s.p5_mbps)} / {_fmt(s.p95_mbps)}" if s else "-")
        dur = max((s.duration_s for s in e.stats.values()), default=0)
        here = all(fetch.verified(fetch.target(e, d), e.sha256.get(d)) for d in e.direction_names())
        status = "yes" if here else ("made on use" if e.kind == "generated" else "fetch")
        t.add_row(e.id, e.kind, e.technology, e.operator, e.mobility, *cells, f"{dur:.3g}", e.license, status)
    console.print(t)
    return 0


def _show(args, console: Console) -> int:
    e, _ = index.find(args.name)
    console.print(f"[bold]{e.id}[/]: {e.title}")
    for k in ("kind", "technology", "operator", "country", "mobility", "obstacle", "date", "recorder", "method", "license", "citation", "notes"):
        v = getattr(e, k)
        if v:
            console.print(f"  {k}: {v}")
    if e.aliases:
        console.print(f"  aliases: {', '.join(e.aliases)}")
    t = Table(title="per direction")
    for col in ("direction", "file", "sha256", "period s", "mean", "median", "P5", "P95", "max Mbit/s", "outages (s, count)", "on disk"):
        t.add_column(col, overflow="fold")
    for d in e.direction_names():
        s = e.stats.get(d)
        p = fetch.target(e, d)
        on = str(p) if fetch.verified(p, e.sha256.get(d)) else "no"
        nums = [f"{s.duration_s:g}", _fmt(s.mean_mbps), _fmt(s.median_mbps), _fmt(s.p5_mbps), _fmt(s.p95_mbps), _fmt(s.max_mbps), f"{s.outage_s:g}, {s.outage_count}"] if s else ["?"] * 7
        t.add_row(d, e.files[d], e.sha256.get(d, "?")[:16] + "...", *nums, on)
    console.print(t)
    for d, name in e.light.items():
        from continuum.tracearchive import light

        where = index.CONTRIBUTED / e.id / name
        try:
            summ = light.parse(where).summary()
            b = summ["base_delay_ms"]
            console.print(f"  light ({d}): {name}: {summ['trains']} trains every {summ['train_gap_ms']:g} ms, base delay median "
                          f"{b['median']:g} ms (P5 {b['p5']:g}, P95 {b['p95']:g}), trains of {summ['train_packets']['median']:g} "
                          f"packets over {summ['train_span_ms']['median']:g} ms, idle after {summ['idle_ms']:g} ms"
                          + (f", size offsets {e.light_offsets[d]}" if d in e.light_offsets else ""), markup=False)
        except light.LightTraceError as err:
            console.print(f"  light ({d}): {name}: {err}", markup=False)
    for src in e.sources:
        console.print(f"  source {src.name}: {src.url} (sha256 {src.sha256})")
    for d, c in e.convert.items():
        console.print(f"  {d}: {c.format} from {c.source}{' member ' + c.member if c.member else ''}")
    for d, r in e.recipe.items():
        console.print(f"  recipe {d}: {json.dumps(r)}")
    if e.extra:
        console.print(f"  extra: {json.dumps(e.extra)}")
    _show_handovers(e, console)
    return 0


def _show_handovers(e: index.Entry, console: Console) -> None:
    """A drive log's cell changes (what a [[timeline]] `handovers` replays), where this machine has its source."""
    conv = e.convert.get("down") or e.convert.get("up")
    if e.kind != "external" or conv is None or conv.format != "gnettrack":
        return
    try:
        d = drive.of_entry(e)
    except (ConvertError, fetch.FetchError) as err:
        console.print(escape(f"  handovers (for [[timeline]] handovers): not read here: {err}"))
        return
    times = ", ".join(f"{h.t_s}" for h in d.handovers[:12]) + (" ..." if len(d.handovers) > 12 else "")
    console.print(escape(f"  handovers (for [[timeline]] handovers): {len(d.handovers)} cell changes in {d.duration_s} s, at s {times}"))
    for n in d.notes[:5]:
        console.print(escape(f"    note: {n}"))
    if len(d.notes) > 5:
        console.print(f"    ({len(d.notes) - 5} more notes: gaps in the log, each a second or more without a row)")


def _validate(args, console: Console) -> int:
    from continuum.tracearchive import light

    bad = False
    for f in args.files:
        if light.looks_light(f):
            try:
                t = light.parse(f)
                console.print(f"ok: {f} (light trace: {len(t.lines)} trains over {t.period_ms() / 1000:g} s)", markup=False)
            except light.LightTraceError as e:
                console.print(f"{e}", style="red", markup=False)
                bad = True
            continue
        found = checks.check_file(f)
        if not found:
            n = len(mahimahi.read(f))
            console.print(f"ok: {f} ({n} opportunities)")
        for x in found:
            console.print(str(x), style="red" if x.level == "error" else "yellow", markup=False)
        bad |= any(x.level == "error" for x in found)
    return 1 if bad else 0


def _trace_path(name: str, mirror: Path | None = None, direction: str | None = None) -> dict[str, Path]:
    p = Path(name)
    if p.is_file():
        return {p.name: p}
    e, d = index.find(name)
    dirs = [d] if d else ([direction] if direction else e.direction_names())
    return {x: fetch.materialize(e, x, mirror, download=False) for x in dirs}


def _stats(args, console: Console) -> int:
    out = {}
    for label, p in _trace_path(args.trace).items():
        found = [f for f in checks.check_file(p) if f.level == "error"]
        if found:
            raise TraceCommandError("\n".join(map(str, found)))
        st = stats.compute(mahimahi.read(p))
        out[label] = st
    if args.json:
        console.print_json(json.dumps({k: {**v.summary(), "outages_ms": v.outages, **({"per_second_mbps": v.per_second_mbps} if args.per_second else {})} for k, v in out.items()}))
        return 0
    for label, st in out.items():
        s = st.summary()
        console.print(f"[bold]{label}[/]: period {s['duration_s']:g} s, {s['opportunities']} opportunities; capacity mean {s['mean_mbps']} Mbit/s, "
                      f"median {s['median_mbps']}, P5 {s['p5_mbps']}, P95 {s['p95_mbps']}, max {s['max_mbps']}; outages {s['outage_count']} totalling {s['outage_s']} s")
        if st.outages:
            t = Table(title=f"{label}: outages (gaps > {stats.OUTAGE_MS} ms)")
            t.add_column("from s")
            t.add_column("to s")
            t.add_column("length ms")
            for a, b in st.outages[:50]:
                t.add_row(f"{a / 1000:.3f}", f"{b / 1000:.3f}", str(b - a))
            if len(st.outages) > 50:
                t.add_row("...", "...", f"{len(st.outages) - 50} more")
            console.print(t)
        if args.per_second:
            for k, r in enumerate(st.per_second_mbps):
                console.print(f"{k}\t{r:.3f}")
    return 0


def _plot(args, console: Console) -> int:
    from continuum.tracearchive import plot

    paths = _trace_path(args.trace, args.mirror)
    out = args.output or Path(f"{Path(args.trace).name}.png")
    plot.plot(paths, out, args.trace)
    console.print(f"wrote {out}")
    return 0


def _convert(args, console: Console) -> int:
    f = args.format
    if f == "cellreplay":
        from continuum.tracearchive import light

        idle = {d: v for d, v in (("up", args.idle_ms_up), ("down", args.idle_ms_down)) if v is not None}
        if any(v < 0 for v in idle.values()):
            raise TraceCommandError("--idle-ms-up/--idle-ms-down: a non-negative number of milliseconds", 2)
        try:
            light.convert_cellreplay(args.source, args.output, args.name, idle, say=lambda m: console.print(m, markup=False))
        except light.LightTraceError as e:
            raise TraceCommandError(str(e)) from None
        console.print(f"replay them: [mobile] uplink = \"{args.output / args.name}.up\", uplink_light = "
                      f"\"{args.output / args.name}.up.light\" (and downlink likewise); source: {light.CELLREPLAY_SOURCE}",
                      markup=False)
        return 0
    if f == "per-second":
        src = convert.read_per_second(args.source, args.gap_fill)
    elif f == "gnettrack":
        src = convert.read_gnettrack(args.source, args.direction, args.gap_fill)
    elif f == "sixcol":
        src = convert.read_sixcol(args.source)
    else:
        src = convert.read_csv(args.source, args.time_col, args.rate_col, args.time_unit, args.rate_unit, args.delimiter)
    ts, findings = convert.to_trace(src)
    for x in findings:
        console.print(str(x), style="red" if x.level == "error" else "yellow", markup=False)
    if any(x.level == "error" for x in findings):
        return 1
    mahimahi.write(args.output, ts)
    for n in src.notes:
        console.print(f"note: {n}")
    st = stats.compute(ts)
    console.print(f"wrote {args.output}: {len(ts)} opportunities, period {st.duration_s:g} s, mean {st.mean_mbps:.3f} Mbit/s")
    return 0


def _fetch(args, console: Console) -> int:
    es = [e for e in index.entries() if e.kind == "external"] if args.all else [index.find(n)[0] for n in args.names]
    if not es:
        raise TraceCommandError("name an entry (continuum traces list) or use --all", 2)
    for e in es:
        if e.kind != "external":
            console.print(f"{e.id}: {e.kind}, nothing to fetch")
            continue
        with console.status(f"fetching {e.id}"):
            paths = fetch.fetch(e, args.mirror, download=True, say=lambda m: console.print(m))
        for d, p in paths.items():
            console.print(f"{e.id} ({d}): {p} (sha256 ok)", markup=False)
    return 0


def _record(args, console: Console) -> int:
    from continuum.tracearchive import record

    return record.main(args, console)


def _add(args, console: Console) -> int:
    files = {d: p for d, p in (("up", args.up), ("down", args.down)) if p is not None}
    meta = {k: getattr(args, k) for k in contribute.REQUIRED}
    extra = json.loads(args.extra.read_text()) if args.extra else None
    lights = {d: p for d, p in (("up", args.up_light), ("down", args.down_light)) if p is not None}
    path, findings = contribute.add(args.id, files, meta, extra, lights)
    for x in findings:
        console.print(str(x), style="yellow", markup=False)
    console.print(f"added {args.id}: {path} and {index.CONTRIBUTED / args.id}/; see CONTRIBUTING.md to submit it")
    return 0
