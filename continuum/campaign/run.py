"""A campaign run: every point of the file's [sweep] checked first, then run
one after another as ordinary runs, each in its own folder of the campaign
folder (OUTPUT/campaign-NAME/points/NNN-...), with campaign.json saying what
each point is and how it ended. Re-running the same command resumes: points
that completed are kept, the others run (a folder left by a failed or
interrupted attempt is kept beside, renamed). A changed file is refused: its
points would not be the ones recorded. Each point tears down what it made,
on errors and Ctrl-C too (the runner's guarantee), so a kill between points
or during one leaves finished points intact and nothing on the host."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from continuum.campaign import aggregate, sweep
from continuum.errors import ContinuumError, UsageError

SETUP_S = 20.0  # a point's set-up, calibration from the cache, teardown and results, before one is measured here


def folder_of(spec: Any) -> Path:
    return spec.output / f"campaign-{spec.name}"


def run(path: Path, argv: list[str], console: Console, dry_run: bool = False, provider: str | None = None,
        recalibrate: bool = False) -> int:
    """Run (or resume) the campaign of `path`; 0 when every point completed, 1 when one failed."""
    from continuum import experiment, runner

    points = sweep.points(path)
    specs = sweep.check(path, points, provider)
    folder = folder_of(specs[0])
    keys = list(dict.fromkeys(k for p in points for k in p.values))
    text = path.read_text()
    sha = hashlib.sha256(text.encode()).hexdigest()
    state = _load(folder, sha, path)
    if dry_run:
        _plan(console, folder, points, specs, state)
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "points").mkdir(exist_ok=True)
    (folder / "campaign.toml").write_text(text)
    recorded = {p["index"]: p for p in state.get("points", [])}
    state = {"file": str(path.resolve()), "sha256": sha, "created": state.get("created") or _now(), "host": _host(),
             "argv": argv, "points": [{**{"index": p.index, "arm": p.arm, "values": p.values, "seed": p.seed,
                                          "slug": p.slug(), "status": "pending", "run": None},
                                       **{k: v for k, v in recorded.get(p.index, {}).items() if k in ("status", "run", "error",
                                                                                                    "wall_s", "calibration")}}
                                      for p in points]}
    todo = [p for p in points if not _done(folder, state["points"][p.index - 1])]
    if len(todo) < len(points):
        console.print(f"[bold]campaign {escape(str(folder))}[/]: {len(points) - len(todo)} of {len(points)} points done "
                      f"before; {len(todo)} to run")
    else:
        console.print(f"[bold]campaign {escape(str(folder))}[/]: {len(points)} points")
    _save(folder, state)
    walls: list[float] = []
    failed = 0
    for n, p in enumerate(todo, 1):
        entry = state["points"][p.index - 1]
        left = _left(walls, [specs[q.index - 1] for q in todo[n - 1:]])
        console.rule(f"point {p.index} of {len(points)} ({n} of {len(todo)} to run, ~{left / 60:.0f} min left): {escape(p.label())}")
        spec = experiment.load(path, materialize=True, provider=provider, text=p.text)
        run_dir = folder / "points" / p.slug()
        if run_dir.exists():  # a failed or interrupted attempt: kept, beside
            run_dir.rename(run_dir.with_name(f"{run_dir.name}.attempt-{dt.datetime.now():%Y%m%d-%H%M%S}"))
        entry.update(status="running", run=str(run_dir.relative_to(folder)), error=None, pid=os.getpid())
        _save(folder, state)
        t0 = time.monotonic()
        try:
            runner.run(spec, [*argv, f"(point {p.index})"], console, recalibrate=recalibrate, run_dir=run_dir)
        except (KeyboardInterrupt, runner.Interrupted) as e:
            entry.update(status="interrupted", error=str(e) or "interrupted")
            entry.pop("pid", None)
            _finish(folder, state, keys, console)
            raise
        except ContinuumError as e:
            entry.update(status="failed", error=str(e))
            failed += 1
            console.print(f"[red]point {p.index} failed[/]: {escape(str(e))}; the campaign goes on (re-run it to retry)")
        except BaseException as e:
            entry.update(status="failed", error=f"{type(e).__name__}: {e}")
            entry.pop("pid", None)
            _finish(folder, state, keys, console)
            raise
        else:
            entry.update(status=_status(run_dir), calibration=_calibration(run_dir))
        entry.pop("pid", None)
        entry["wall_s"] = round(time.monotonic() - t0, 1)
        walls.append(entry["wall_s"])
        _save(folder, state)
        aggregate.write(folder, state["points"], keys)
    _finish(folder, state, keys, console, redraw=bool(todo) or not (folder / "report.html").exists())
    return 1 if failed or any(e["status"] != "complete" for e in state["points"]) else 0


def _finish(folder: Path, state: dict, keys: list[str], console: Console, redraw: bool = True) -> None:
    """Save the record, write the table (and the page and figures, unless nothing ran since they were drawn)."""
    _save(folder, state)
    csv_path, md = aggregate.write(folder, state["points"], keys)
    counts: dict[str, int] = {}
    for e in state["points"]:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    from rich.markdown import Markdown

    from continuum.campaign import page

    made = page.write(folder, state["points"], keys) if redraw else [folder / "report.html"]
    console.print(Markdown(md.read_text()))
    console.print(f"campaign: {', '.join(f'{v} {k}' for k, v in counts.items())}; {md}, {csv_path}"
                  + "".join(f", {p}" for p in made[-1:]))
    console.print(f"campaign folder: {folder}")


def _plan(console: Console, folder: Path, points: list[sweep.Point], specs: list, state: dict) -> None:
    """--dry-run: the points, what each sets and the time each will take (measured time plus set-up)."""
    done = {e["index"] for e in state.get("points", []) if e.get("status") == "complete"}
    t = Table(title=f"campaign {folder}: {len(points)} points" + (f", {len(done)} done before" if done else ""))
    for col in ("point", "sets", "measured", "folder"):
        t.add_column(col)
    total = 0.0
    for p, s in zip(points, specs):
        measured = s.repetitions * (s.warmup_s + s.duration_s)
        if p.index not in done:
            total += measured + SETUP_S
        t.add_row(str(p.index), escape(p.label()), f"{measured:g} s" + (" (done)" if p.index in done else ""),
                  escape(f"points/{p.slug()}"))
    console.print(t)
    console.print(f"to run: about {total / 60:.1f} min ({SETUP_S:g} s of set-up, calibration from the cache and teardown "
                  "taken per point; a first calibration of an app on this machine adds its own)")


def _left(walls: list[float], specs: list) -> float:
    """Seconds the points still to run will take: the mean wall time of those run so far, or their
    measured time plus set-up before one has run."""
    if walls:
        return sum(walls) / len(walls) * len(specs)
    return sum(s.repetitions * (s.warmup_s + s.duration_s) + SETUP_S for s in specs)


def _load(folder: Path, sha: str, path: Path) -> dict:
    p = folder / "campaign.json"
    if not p.exists():
        return {}
    try:
        state = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"{p}: cannot read the campaign's record ({e}); move the folder away to start the campaign anew") from None
    if state.get("sha256") != sha:
        raise UsageError(f"{folder} holds a campaign of another version of {path} (its campaign.toml): its points would "
                         "not be this file's. To start a new campaign, move or rename that folder, or give the file "
                         "another [experiment] name")
    return state


def _save(folder: Path, state: dict) -> None:
    tmp = folder / "campaign.json.tmp"
    tmp.write_text(json.dumps(state, indent=2, default=str) + "\n")
    tmp.replace(folder / "campaign.json")


def _done(folder: Path, entry: dict) -> bool:
    return entry.get("status") == "complete" and bool(entry.get("run")) and (folder / entry["run"] / "summary.json").exists()


def _status(run_dir: Path) -> str:
    try:
        man = json.loads((run_dir / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError):
        return "failed"
    return "complete" if man.get("status") == "complete" and (run_dir / "summary.json").exists() else "failed"


def _calibration(run_dir: Path) -> Any:
    try:
        return json.loads((run_dir / "manifest.json").read_text()).get("calibration")
    except (OSError, json.JSONDecodeError):
        return None


def _host() -> dict[str, Any]:
    return {"hostname": platform.node(), "cpus": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version()}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()
