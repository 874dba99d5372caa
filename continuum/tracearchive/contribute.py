"""`continuum traces add`: a recorded trace becomes an archive entry. Files
are checked first (any error: nothing is written), then copied under
trace-archive/contributed/<id>/ with their checksums and statistics in a new
entry file; an existing id is never overwritten."""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import ValidationError

from continuum.tracearchive import checks, describe, fetch, index

REQUIRED = ("title", "technology", "operator", "country", "mobility", "obstacle", "date", "recorder", "method", "license", "citation")


class AddError(ValueError):
    pass


def add(entry_id: str, files: dict[str, Path], meta: dict, extra: dict | None = None,
        lights: dict[str, Path] | None = None) -> tuple[Path, list[checks.Finding]]:
    """`lights`: a light trace per direction (workload-aware replay), with its size offsets if its header names them."""
    from continuum.tracearchive import light

    problems = []
    lights = lights or {}
    parsed = {}
    for d, p in lights.items():
        if d not in files:
            problems.append(f"--{d}-light without --{d}: a light trace sits in front of its direction's capacity trace")
        try:
            parsed[d] = light.parse(p)
        except light.LightTraceError as e:
            problems.append(str(e))
    missing = [k for k in REQUIRED if not meta.get(k)]
    if missing:
        problems.append(f"missing metadata: {', '.join('--' + k for k in missing)}")
    if not files:
        problems.append("give at least one of --up FILE / --down FILE")
    findings: list[checks.Finding] = []
    for _d, p in files.items():
        findings += checks.check_file(p)
    problems += [str(f) for f in findings if f.level == "error"]
    if index.entry_path(entry_id).exists():
        problems.append(f"an entry {entry_id!r} exists already ({index.entry_path(entry_id)}); pick another id")
    names = {d: f"{entry_id}.{d}" for d in files}
    try:
        entry = index.Entry(id=entry_id, kind="contributed", files=names, extra=extra or {},
                            light={d: f"{entry_id}.{d}.light" for d in parsed},
                            light_offsets={d: f"{entry_id}.{d}.offsets" for d, t in parsed.items() if t.offsets is not None},
                            **{k: meta[k] for k in REQUIRED if meta.get(k)})
    except ValidationError as e:
        problems += [f"--{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" for err in e.errors()]
        entry = None
    if problems or entry is None:
        raise AddError("\n".join(problems))
    dest = index.CONTRIBUTED / entry_id
    dest.mkdir(parents=True, exist_ok=False)
    try:
        copied = {d: Path(shutil.copyfile(files[d], dest / names[d])) for d in files}
        entry = describe.describe_files(entry, copied)
        sums = dict(entry.sha256)
        for d, t in parsed.items():
            offsets = None
            if t.offsets is not None:
                offsets = entry.light_offsets[d]
                shutil.copyfile(t.offsets, dest / offsets)
                sums[f"{d}-light-offsets"] = fetch.sha256_file(dest / offsets)
            # the copy names its offsets file by the entry's name for it
            light.write(dest / entry.light[d], t.lines, t.pdo_bytes, t.idle_ms, offsets, active_ms=t.active_ms,
                        note="\n".join(f"{k}: {v}" for k, v in t.header.items() if k not in light.HEADER_KEYS)
                        or f"contributed as {entry_id} ({d}link light part)")
            sums[f"{d}-light"] = fetch.sha256_file(dest / entry.light[d])
        entry = entry.model_copy(update={"sha256": sums})
        path = index.write(entry)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        index.entry_path(entry_id).unlink(missing_ok=True)
        raise
    return path, findings
