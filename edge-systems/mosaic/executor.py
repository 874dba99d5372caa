"""The edge node's task executor: tasks wait in a queue, a policy
(policies.py) says which start, and each runs in a warm worker process
that is moved into the task's own cgroup for its life. The worker is the
workload's (`worker`: its command; workloads/edge_tasks/worker.py runs the
six classes' jobs): it prints "ready" once warm, then reads one JSON task
per line and answers one JSON report per task (wall and CPU ms, ...).

Why warm workers: a task is tens of ms to seconds of work, and starting
Python with torch costs seconds. Why a cgroup per task: enforcement. MOSAIC
weights a task's CPU by its tier; the baselines give every task the same
weight. Under cgroup v2 the tasks' cgroups sit beside the node's `rest`
leaf (continuum.cgroups.create(leaf=True)).

What is measured, per task: its wait, its service time (the worker's wall
time for the job), its CPU time, and which classes ran beside it for what
share of its life. The last two teach the interference matrix. Decisions
are made when a task arrives (the spec's admission is per arriving task),
on every completion, and on every 100-ms tick, when urgencies change. Round robin runs
its admitted tasks in 50-ms turns by stopping and continuing their workers
(SIGSTOP / SIGCONT).

The executor is one thread of control; workers' reports are read with a
selector, so nothing here sleeps past the next tick."""

from __future__ import annotations

import json
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from mosaic.classes import BY_NAME, Task
from mosaic.interference import ALPHA, Interference
from mosaic.policies import Mosaic, Policy, RoundRobin
from mosaic.urgency import TICK_MS

MS = 1_000_000


@dataclass
class Worker:
    cls: str
    proc: subprocess.Popen
    task: Task | None = None
    cgroup: Path | None = None


@dataclass
class Done:
    """One finished task, as the results write it."""

    task: Task
    service_ms: float
    cpu_ms: float
    beside: dict[str, float]  # class -> share of this task's life it ran beside
    taught: str  # what the matrix learned from it
    ok: bool
    out: dict = field(default_factory=dict)


class TaskCgroups:
    """A cgroup per running task under the node's cpu directory (v1 or v2)."""

    def __init__(self, node_cpu_dir: Path | None, version: int) -> None:
        self.dir, self.version = node_cpu_dir, version
        self.home = (node_cpu_dir / "rest" if version == 2 else node_cpu_dir) if node_cpu_dir else None

    def enter(self, task: Task, pid: int, weight: float) -> Path | None:
        return self.enter_named(task.id, pid, weight)

    def enter_named(self, task_id: str, pid: int, weight: float) -> Path | None:
        if self.dir is None:
            return None
        d = self.dir / f"task-{task_id}"
        d.mkdir(exist_ok=True)
        if self.version == 2:
            (d / "cpu.weight").write_text(str(max(1, min(10000, int(100 * weight)))))
        else:
            (d / "cpu.shares").write_text(str(max(2, int(1024 * weight))))
        (d / "cgroup.procs").write_text(str(pid))
        return d

    def leave(self, d: Path | None, pid: int) -> None:
        if d is None or self.home is None:
            return
        try:
            (self.home / "cgroup.procs").write_text(str(pid))
        except OSError:
            pass  # the worker is gone
        for _ in range(50):
            try:
                d.rmdir()
                return
            except OSError:
                time.sleep(0.002)


class Executor:
    def __init__(self, policy: Policy, matrix: Interference, classes: Iterable[str], *, worker: Sequence[str], workers_per_class: int = 2,
                 node_cpu_dir: Path | None = None, cgroup_version: int = 1, worker_args: list[str] | None = None,
                 class_args: dict[str, list[str]] | None = None, task_cgroups=None,
                 wrap: Callable[[list[str]], list[str]] = lambda argv: argv, on_done: Callable[[Done], None] | None = None) -> None:
        self.policy, self.matrix = policy, matrix
        self.queue: list[Task] = []
        self.running: list[Task] = []
        self.history: list[Task] = []  # started tasks, for co-runner shares
        self.done: list[Done] = []
        self.on_done = on_done
        # the tasks' cgroups: made here (root, the host's /sys), or through mosaic.agent (inside continuum run)
        self.cgroups = task_cgroups or TaskCgroups(node_cpu_dir, cgroup_version)
        self.sel = selectors.DefaultSelector()
        self.workers: list[Worker] = []
        self.paused: set[int] = set()
        self.queue_depth: list[tuple[int, int]] = []  # (ns, queued) at each tick
        self.seen_ms: dict[str, float] = {}  # per class: EMA of service time, whatever ran beside
        argv = worker_args or []
        for cls in classes:
            for _ in range(workers_per_class):
                extra = (class_args or {}).get(cls, [])  # e.g. a class's own --scale, after the common one
                # the worker finds its modules where this process found them
                p = subprocess.Popen(wrap([*worker, "--classes", cls, *argv, *extra]),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
                self.workers.append(Worker(cls, p))
        for w in self.workers:
            assert w.proc.stdout is not None
            line = w.proc.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"a {w.cls} worker did not start (exit {w.proc.poll()}): {line!r}")
            self.sel.register(w.proc.stdout, selectors.EVENT_READ, w)

    def submit(self, task: Task) -> None:
        # its class's service time alone, as learned; until a task of the class has run alone
        # (rare under overload), its service time as seen, beside whatever ran (SJF orders by it)
        expected = self.matrix.alone_ms.get(task.cls) or self.seen_ms.get(task.cls)
        if expected:
            task.expected_ms = expected
        self.queue.append(task)

    def _idle(self, cls: str) -> Worker | None:
        return next((w for w in self.workers if w.cls == cls and w.task is None), None)

    def _weight(self, task: Task) -> float:
        return BY_NAME[task.cls].weight if isinstance(self.policy, Mosaic) else 1.0

    def decide(self, now_ns: int) -> None:
        for t in self.policy.start(list(self.queue), list(self.running), now_ns):
            w = self._idle(t.cls)
            if w is None:
                continue  # every worker of its class is busy: it waits for one
            t.started_ns = time.monotonic_ns()
            w.task = t
            w.cgroup = self.cgroups.enter(t, w.proc.pid, self._weight(t))
            assert w.proc.stdin is not None
            w.proc.stdin.write(json.dumps({"id": t.id, "cls": t.cls, "seed": hash(t.id) & 0xFFFF}) + "\n")
            w.proc.stdin.flush()
            self.queue.remove(t)
            self.running.append(t)
            self.history.append(t)

    def _turn(self) -> None:
        """Round robin: only the chosen run this quantum."""
        assert isinstance(self.policy, RoundRobin)
        busy = [w for w in self.workers if w.task is not None]
        chosen = {id(t) for t in self.policy.turn([w.task for w in busy if w.task is not None])}
        for w in busy:
            run = id(w.task) in chosen
            if run and w.proc.pid in self.paused:
                os.kill(w.proc.pid, signal.SIGCONT)
                self.paused.discard(w.proc.pid)
            elif not run and w.proc.pid not in self.paused:
                os.kill(w.proc.pid, signal.SIGSTOP)
                self.paused.add(w.proc.pid)

    def _beside(self, t: Task) -> dict[str, float]:
        assert t.started_ns is not None and t.finished_ns is not None
        life = max(1, t.finished_ns - t.started_ns)
        shares: dict[str, float] = {}
        for u in self.history:
            if u is t or u.started_ns is None:
                continue
            end = u.finished_ns if u.finished_ns is not None else t.finished_ns
            overlap = min(end, t.finished_ns) - max(u.started_ns, t.started_ns)
            if overlap > 0:
                shares[u.cls] = shares.get(u.cls, 0.0) + overlap / life
        return {c: min(1.0, s) for c, s in shares.items()}

    def _finish(self, w: Worker, report: dict) -> None:
        t = w.task
        assert t is not None
        t.finished_ns = time.monotonic_ns()
        self.cgroups.leave(w.cgroup, w.proc.pid)
        w.task, w.cgroup = None, None
        self.running.remove(t)
        beside = self._beside(t)
        taught = self.matrix.observe(t.cls, report["wall_ms"], beside) if report["ok"] else "failed"
        if report["ok"]:
            old = self.seen_ms.get(t.cls)
            self.seen_ms[t.cls] = report["wall_ms"] if old is None else (1 - ALPHA) * old + ALPHA * report["wall_ms"]
        d = Done(t, report["wall_ms"], report["cpu_ms"], beside, taught, report["ok"], report.get("out", {}))
        self.done.append(d)
        if self.on_done:
            self.on_done(d)

    def profile(self, classes: Iterable[str], repeats: int = 1) -> dict[str, float]:
        """Run `repeats` tasks of each class alone, one after another, before any
        arrival: the matrix learns each class's service time alone. Slowdown is
        measured against it, and under sustained overload no task ever runs
        alone, so without this the matrix learns nothing (MOSAIC's own code
        profiles its classes offline, profiler/build_db.py). Returns the times."""
        for cls in classes:
            for i in range(repeats):
                w = self._idle(cls)
                if w is None:
                    raise RuntimeError(f"no idle {cls} worker to profile")
                t = Task(f"profile-{cls}-{i}", cls, time.monotonic_ns(), 1e9)
                t.started_ns = t.arrival_ns
                w.task = t
                self.running.append(t)
                assert w.proc.stdin is not None and w.proc.stdout is not None
                w.proc.stdin.write(json.dumps({"id": t.id, "cls": cls, "seed": i}) + "\n")
                w.proc.stdin.flush()
                report = json.loads(w.proc.stdout.readline())
                t.finished_ns = time.monotonic_ns()
                w.task = None
                self.running.remove(t)
                if report["ok"]:
                    self.matrix.observe(cls, report["wall_ms"], {})
        return dict(self.matrix.alone_ms)

    def step(self, now_ns: int, next_tick_ns: int) -> None:
        """Wait for reports until the next tick; decide on each completion."""
        while True:
            timeout = max(0.0, (next_tick_ns - time.monotonic_ns()) / 1e9)
            events = self.sel.select(timeout)
            if not events:
                return
            for key, _ in events:
                if key.data is None:  # the wake pipe: a task arrived
                    os.read(key.fd, 4096)
                    return
                w: Worker = key.data
                line = key.fileobj.readline()  # type: ignore[union-attr]
                if not line:
                    raise RuntimeError(f"a {w.cls} worker exited ({w.proc.wait()})")
                self._finish(w, json.loads(line))
            self.decide(time.monotonic_ns())

    def run(self, arrivals: list[Task], until_ns: int | None = None) -> list[Done]:
        """Submit each task at its arrival time (ns on time.monotonic_ns), run until all
        are done (or until_ns), deciding every tick and on completions."""
        pending = sorted(arrivals, key=lambda t: t.arrival_ns)
        tick = int(TICK_MS * MS)
        quantum = int(self.policy.quantum_ms * MS) if isinstance(self.policy, RoundRobin) else tick
        next_tick = time.monotonic_ns()
        while pending or self.queue or self.running:
            now = time.monotonic_ns()
            if until_ns is not None and now >= until_ns:
                break
            arrived = False
            while pending and pending[0].arrival_ns <= now:
                self.submit(pending.pop(0))
                arrived = True
            next_tick = self._decide_due(now, arrived, next_tick, quantum)
            horizon = min(next_tick, pending[0].arrival_ns if pending else next_tick)
            self.step(now, horizon)
        return self.done

    def _decide_due(self, now: int, arrived: bool, next_tick: int, quantum: int) -> int:
        """Decide on arrivals, and on the tick (urgencies change; round robin's turn);
        returns the next tick."""
        if arrived:
            self.decide(now)
        if now >= next_tick:
            self.queue_depth.append((now, len(self.queue)))
            self.decide(now)
            if isinstance(self.policy, RoundRobin):
                self._turn()
            next_tick += quantum
        return next_tick

    def serve(self, inbox: "queue.Queue[Task]", stop: threading.Event, wake_fd: int) -> None:
        """Like run, with tasks coming from `inbox` as they arrive (another thread puts
        them there and writes a byte to the pipe whose read end is wake_fd), until stop."""
        self.sel.register(wake_fd, selectors.EVENT_READ, None)
        tick = int(TICK_MS * MS)
        quantum = int(self.policy.quantum_ms * MS) if isinstance(self.policy, RoundRobin) else tick
        next_tick = time.monotonic_ns()
        while not stop.is_set():
            now = time.monotonic_ns()
            arrived = False
            while True:
                try:
                    self.submit(inbox.get_nowait())
                    arrived = True
                except queue.Empty:
                    break
            next_tick = self._decide_due(now, arrived, next_tick, quantum)
            self.step(now, next_tick)

    def close(self) -> None:
        for w in self.workers:
            if w.proc.pid in self.paused:
                os.kill(w.proc.pid, signal.SIGCONT)
            if w.proc.stdin:
                w.proc.stdin.close()
        for w in self.workers:
            try:
                w.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            self.cgroups.leave(w.cgroup, w.proc.pid)
        self.sel.close()
