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

import dataclasses
import datetime as dt
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from continuum import diskspace
from continuum.campaign import aggregate, machines, sweep
from continuum.network import plan as netplan
from continuum.errors import ContinuumError, ProviderError, UsageError

TEARDOWN_WAIT_S = 300.0  # --hosts: a point asked to stop tears down on its machine within this, or is killed
SETUP_S = 20.0  # a point's set-up, calibration from the cache, teardown and results, before one is measured here


def folder_of(spec: Any) -> Path:
    return spec.output / f"campaign-{spec.name}"


def run(path: Path, argv: list[str], console: Console, dry_run: bool = False, provider: str | None = None,
        recalibrate: bool = False, hosts: Path | None = None) -> int:
    """Run (or resume) the campaign of `path`; 0 when every point completed, 1 when one failed. `hosts`:
    an Ansible inventory whose machines run the points, one point per machine at a time (machines.py)."""
    points = sweep.points(path)
    workers: list[machines.Worker] = []
    if hosts is not None:
        if provider is not None:
            raise UsageError(f"--hosts {hosts} and --provider {provider}: --hosts runs every point through the hosts "
                             "provider, one machine each; choose one")
        machines.refuse_other_provider(path.read_text(), path)
        workers = machines.read_inventory(hosts)
        # each point checked as it will run: the hosts provider, one machine in every role
        specs = sweep.check(path, [dataclasses.replace(p, text=machines.point_text(p.text, workers[0], False)) for p in points])
    else:
        specs = sweep.check(path, points, provider)
    folder = folder_of(specs[0])
    keys = list(dict.fromkeys(k for p in points for k in p.values))
    text = path.read_text()
    sha = hashlib.sha256(text.encode()).hexdigest()
    state = _load(folder, sha, path)
    unready = _machines_ready(path, points, specs, workers) if workers else []
    if dry_run:
        _plan(console, folder, points, specs, state, workers)
        for line in unready:
            console.print(f"[yellow]not ready:[/] {escape(line)}")
        return 0
    if unready:
        raise ProviderError("the machines are not ready for the campaign (nothing has run):\n  - " + "\n  - ".join(unready))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "points").mkdir(exist_ok=True)
    (folder / "campaign.toml").write_text(text)
    recorded = {p["index"]: p for p in state.get("points", [])}
    state = {"file": str(path.resolve()), "sha256": sha, "created": state.get("created") or _now(), "host": _host(),
             "argv": argv, "points": [{**{"index": p.index, "arm": p.arm, "values": p.values, "seed": p.seed,
                                          "slug": p.slug(), "status": "pending", "run": None},
                                       **{k: v for k, v in recorded.get(p.index, {}).items() if k in ("status", "run", "error",
                                                                                                    "wall_s", "calibration",
                                                                                                    "machine", "machine_facts")}}
                                      for p in points]}
    if workers:
        state["machines"] = [{"name": w.name, "address": w.address} for w in workers]
    todo = [p for p in points if not _done(folder, state["points"][p.index - 1])]
    if len(todo) < len(points):
        console.print(f"[bold]campaign {escape(str(folder))}[/]: {len(points) - len(todo)} of {len(points)} points done "
                      f"before; {len(todo)} to run" + (f" on {len(workers)} machines" if workers else ""))
    else:
        console.print(f"[bold]campaign {escape(str(folder))}[/]: {len(points)} points"
                      + (f" on {len(workers)} machines ({', '.join(w.name for w in workers)})" if workers else ""))
    _save(folder, state)
    book = _Book(folder, state, keys, console, len(points))
    if workers:
        _on_machines(path, book, todo, workers, recalibrate, [specs[p.index - 1] for p in todo])
    else:
        _in_turn(path, book, todo, specs, argv, provider, recalibrate)
    _finish(folder, state, keys, console, redraw=bool(todo) or not (folder / "report.html").exists())
    return 1 if book.failed or any(e["status"] != "complete" for e in state["points"]) else 0


class _Book:
    """The campaign's record while points run: each point's folder made ready, its start and its end
    written to campaign.json, the table redrawn after each."""

    def __init__(self, folder: Path, state: dict, keys: list[str], console: Console, total: int) -> None:
        self.folder, self.state, self.keys, self.console, self.total = folder, state, keys, console, total
        self.walls: list[float] = []
        self.failed = 0

    def entry(self, p: sweep.Point) -> dict:
        return self.state["points"][p.index - 1]

    def start(self, p: sweep.Point, pid: int, machine: str | None = None) -> Path:
        """The point's run folder (a failed or interrupted attempt's kept beside, renamed), the point
        recorded as running."""
        run_dir = self.folder / "points" / p.slug()
        if run_dir.exists():
            run_dir.rename(run_dir.with_name(f"{run_dir.name}.attempt-{dt.datetime.now():%Y%m%d-%H%M%S}"))
        e = self.entry(p)
        e.update(status="running", run=str(run_dir.relative_to(self.folder)), error=None, pid=pid)
        for k in ("machine", "machine_facts"):  # of an earlier attempt elsewhere
            e.pop(k, None)
        if machine:
            e["machine"] = machine
        _save(self.folder, self.state)
        return run_dir

    def end(self, p: sweep.Point, t0: float, error: str | None = None) -> None:
        """The point's status from its run folder (or its error), its wall time; the table redrawn."""
        e = self.entry(p)
        if error is None:
            e.update(status=_status(self.folder / e["run"]), calibration=_calibration(self.folder / e["run"]))
            if e.get("machine"):
                e["machine_facts"] = _machine_facts(self.folder / e["run"], e["machine"])
        else:
            e.update(status="failed", error=error)
            self.failed += 1
        e.pop("pid", None)
        e["wall_s"] = round(time.monotonic() - t0, 1)
        self.walls.append(e["wall_s"])
        _save(self.folder, self.state)
        aggregate.write(self.folder, self.state["points"], self.keys)

    def stopped(self, p: sweep.Point, why: str, status: str = "interrupted") -> None:
        e = self.entry(p)
        e.update(status=status, error=why)
        e.pop("pid", None)

    def finish(self) -> None:
        _finish(self.folder, self.state, self.keys, self.console)


def _in_turn(path: Path, book: _Book, todo: list[sweep.Point], specs: list, argv: list[str], provider: str | None,
             recalibrate: bool) -> None:
    """The points here, one after another, each an ordinary run in this process."""
    from continuum import experiment, runner

    console = book.console
    for n, p in enumerate(todo, 1):
        left = _left(book.walls, [specs[q.index - 1] for q in todo[n - 1:]])
        console.rule(f"point {p.index} of {book.total} ({n} of {len(todo)} to run, {_eta(left)} left): {escape(p.label())}")
        spec = experiment.load(path, materialize=True, provider=provider, text=p.text)
        run_dir = book.start(p, os.getpid())
        t0 = time.monotonic()
        try:
            runner.run(spec, [*argv, f"(point {p.index})"], console, recalibrate=recalibrate, run_dir=run_dir)
        except (KeyboardInterrupt, runner.Interrupted) as e:
            book.stopped(p, str(e) or "interrupted")
            book.finish()
            raise
        except ContinuumError as e:
            book.end(p, t0, str(e))
            console.print(f"[red]point {p.index} failed[/]: {escape(str(e))}; the campaign goes on (re-run it to retry)")
        except BaseException as e:
            book.stopped(p, f"{type(e).__name__}: {e}", "failed")
            book.finish()
            raise
        else:
            book.end(p, t0)


def _on_machines(path: Path, book: _Book, todo: list[sweep.Point], workers: list[machines.Worker], recalibrate: bool,
                 specs: list) -> None:
    """The points on the inventory's machines, one point per machine at a time, each a process of its own
    (worker.py) whose console goes to logs/POINT.txt; a machine's first point of the campaign provisions it.
    Ctrl-C or SIGTERM: each running point is sent SIGINT once and its teardown waited for."""
    console, folder = book.console, book.folder
    (folder / "logs").mkdir(exist_ok=True)
    queue, free = list(todo), list(workers)
    provisioned: set[str] = set()
    running: dict[str, tuple[subprocess.Popen, sweep.Point, float, machines.Worker, Path]] = {}

    def raise_interrupt(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    old = {s: signal.signal(s, raise_interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while queue or running:
            while queue and free:
                w, p = free.pop(0), queue.pop(0)
                log = folder / "logs" / f"{p.slug()}.txt"
                run_dir = book.start(p, 0, w.name)
                provision = w.provision and w.name not in provisioned
                with open(log, "w") as out:
                    proc = subprocess.Popen([sys.executable, "-m", "continuum.campaign.worker", str(path), book.state["sha256"],
                                             str(p.index),
                                             w.as_json(), str(run_dir), "1" if provision else "0", "1" if recalibrate else "0"],
                                            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)  # Ctrl-C reaches them from here, once
                book.entry(p)["pid"] = proc.pid
                _save(folder, book.state)
                running[w.name] = (proc, p, time.monotonic(), w, log)
                console.print(f"point {p.index} of {book.total} [bold]on {escape(w.name)}[/]"
                              + (" (provisioning it first)" if provision else "") + f": {escape(p.label())}; "
                              f"its console: {escape(str(log.relative_to(folder)))}")
            _wait_any([r[0] for r in running.values()])
            for name, (proc, p, t0, w, log) in list(running.items()):
                rc = proc.poll()
                if rc is None:
                    continue
                del running[name]
                free.append(w)
                error = None if rc == 0 else _last_error(log, rc)
                book.end(p, t0, error)
                ok = book.entry(p)["status"] == "complete"
                if ok:
                    provisioned.add(w.name)
                done = len(todo) - len(queue) - len(running)
                left = _left(book.walls, specs[done:]) / max(1, len(workers))
                console.print(f"point {p.index} on {escape(w.name)}: "
                              + ("[green]complete[/]" if ok else f"[red]{escape(book.entry(p)['status'])}[/]: {escape(error or '')}")
                              + f" ({book.entry(p)['wall_s']:.0f} s; {done} of {len(todo)} done"
                              + (f", {_eta(left)} left)" if queue or running else ")"))
    except KeyboardInterrupt:
        for s in old:
            signal.signal(s, signal.SIG_IGN)  # the points' teardown is not cut short by a second Ctrl-C
        console.print(f"[yellow]interrupted[/]: asking {len(running)} running point(s) to stop and tear down")
        for proc, *_ in running.values():
            proc.send_signal(signal.SIGINT)
        for proc, p, _t0, w, log in running.values():
            try:
                proc.wait(timeout=TEARDOWN_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                book.stopped(p, f"killed after {TEARDOWN_WAIT_S:.0f} s of teardown on {w.name}: `continuum destroy --all` "
                                "removes what it left (run it here)")
                continue
            book.stopped(p, f"interrupted on {w.name}; its console: {log.relative_to(folder)}")
        book.finish()
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _machines_ready(path: Path, points: list[sweep.Point], specs: list, workers: list[machines.Worker]) -> list[str]:
    """Before any point runs on the machines: whether each machine answers (the hosts provider's check of
    the first point there), then what it would refuse of each point (checked on the first machine); the
    problems, each naming its machines or points."""
    from continuum import experiment, runner

    found: dict[str, list[str]] = {}
    for w in workers:
        spec = experiment.load(path, materialize=False, text=machines.point_text(points[0].text, w, False))
        for problem in runner.host_problems(spec):
            found.setdefault(problem, []).append(f"machine {w.name}")
    if not found:  # a machine that does not answer would make every point say so
        for p, spec in zip(points, specs):
            for problem in runner.host_problems(spec):
                found.setdefault(problem, []).append(f"point {p.index}")
    return [f"{'every point' if len(who) == len(points) and who[0].startswith('point') else ', '.join(who)}: {problem}"
            for problem, who in found.items()]


def _wait_any(procs: list[subprocess.Popen]) -> None:
    """Until one of the points' processes has ended (any child: the campaign's own are the only ones)."""
    if not procs or any(p.poll() is not None for p in procs):
        return
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        pass


def _last_error(log: Path, rc: int) -> str:
    """What the point's console said last about why it ended."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        lines = []
    said = [ln for ln in lines if ln.startswith(("error:", "interrupted"))]
    return (said[-1] if said else f"exit {rc}") + f" (its console: logs/{log.name})"


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


def _plan(console: Console, folder: Path, points: list[sweep.Point], specs: list, state: dict,
          workers: list[machines.Worker]) -> None:
    """--dry-run: the points, what each sets and the time each will take (measured time plus set-up; on
    machines, divided among them)."""
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
    on = (f" on {len(workers)} machines ({', '.join(w.name for w in workers)}), one point each at a time; their first "
          "points provision them first" if workers else "")
    console.print(f"to run: about {total / max(1, len(workers)) / 60:.1f} min{on} ({SETUP_S:g} s of set-up, calibration "
                  "from the cache and teardown taken per point; a first calibration of an app on a machine adds its own)")
    disk = sum(diskspace.estimate(s, netplan.build(s)).total for p, s in zip(points, specs) if p.index not in done)
    free = diskspace.free_bytes(folder)
    console.print(f"disk: about {diskspace.mb(disk)} for the points still to run (continuum/diskspace.py's estimate of each "
                  "point's run folder)" + (f"; {diskspace.mb(free)} free there" if free is not None else ""))


def _left(walls: list[float], specs: list) -> float:
    """Seconds the points still to run will take: the mean wall time of those run so far, or their
    measured time plus set-up before one has run."""
    if walls:
        return sum(walls) / len(walls) * len(specs)
    return sum(s.repetitions * (s.warmup_s + s.duration_s) + SETUP_S for s in specs)


def _eta(seconds: float) -> str:
    return f"~{seconds:.0f} s" if seconds < 120 else f"~{seconds / 60:.0f} min"


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


def _machine_facts(run_dir: Path, machine: str) -> Any:
    """The CPU, cores, memory and OS of the machine a point ran on, as its run recorded them."""
    try:
        facts = json.loads((run_dir / "manifest.json").read_text()).get("provider_facts") or {}
    except (OSError, json.JSONDecodeError):
        return None
    return ((facts.get("hosts") or {}).get(machine) or {}).get("machine")


def _host() -> dict[str, Any]:
    return {"hostname": platform.node(), "cpus": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version()}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()
