"""Server side of edge_tasks: MOSAIC's executor (edge-systems/mosaic/executor.py)
on the edge node. Redis and the dispatch API run beside it as the node's
services. Warm workers run the tasks, under the policy named in
[edge.admission] (CONTINUUM_ADMISSION, JSON). A request's answer is sent
when its task is done: its class, wait, service time, and whether it met
its deadline.

Per-task cgroups come from MOSAIC's root agent (CONTINUUM_MOSAIC_AGENT, its
socket), because this process is unprivileged and its /sys shows no cgroup.
Without an agent the tasks run in the node's cgroup, all with the same
weight, and `info` says so.

The executor's own records go beside the server's log: mosaic-tasks.csv,
mosaic-decisions.csv, mosaic-queue.csv and the learned matrix,
mosaic-matrix.sqlite."""

from __future__ import annotations

import csv
import json
import os
import queue
import threading
import time
from pathlib import Path

from workloads.contract import Env, ServerSettings

MS = 1_000_000
# mosaic-tasks.csv: one row per task the server got. A task still queued or running
# when the server stops gets a row too, with ok = 0 (and no wait if it never started).
TASK_COLUMNS = ["id", "cls", "tier", "deadline_ms", "t_arrival_ns", "wait_ms", "service_ms", "cpu_ms", "response_ms", "hit", "ok",
                "beside", "taught"]


class Server:
    concurrency = 1024  # requests waiting at once: each waits for its task, which the executor queues (an overloaded 60-s run queues hundreds)

    def __init__(self, s: ServerSettings) -> None:
        from mosaic import policies
        from mosaic.agent import AgentCgroups
        from mosaic.classes import CLASSES
        from mosaic.executor import Executor, TaskCgroups
        from mosaic.interference import Interference
        from workloads.edge_tasks import WORKER
        from workloads.edge_tasks.services import Services

        cfg = json.loads(os.environ.get(Env.ADMISSION, "{}"))
        names = [c.name for c in CLASSES]
        self.matrix = Interference(names, prior=float(cfg.get("prior", 0.2)))
        name = cfg.get("policy", "mosaic")
        if name.startswith("mosaic"):
            self.policy: policies.Policy = policies.Mosaic(self.matrix, n_max=int(cfg.get("n_max", 8)), tau_ipc=float(cfg.get("tau_ipc", 0.35)),
                                                           use_matrix=name == "mosaic")
        else:
            self.policy = policies.make(name, int(cfg.get("slots", 1)))
        self.services = Services().start()
        agent = os.environ.get(Env.MOSAIC_AGENT, "")
        cgroups = AgentCgroups(agent) if agent else TaskCgroups(None, 1)
        self.out = Path(s.server_log).parent if s.server_log else Path(".")
        self.done_log = open(self.out / "mosaic-tasks.csv", "w", newline="")
        self.rows = csv.writer(self.done_log)
        self.rows.writerow(TASK_COLUMNS)
        self.wall = time.time_ns() - time.monotonic_ns()  # the executor's clock -> the run's (wall clock, as the records)
        self.waiting: dict[str, tuple[threading.Event, list]] = {}
        self.lock = threading.Lock()
        self.executor = Executor(self.policy, self.matrix, names, worker=WORKER, workers_per_class=int(cfg.get("workers_per_class", 3)),
                                 worker_args=["--scale", str(cfg.get("scale", 1.0)), "--redis-port", str(self.services.redis_port),
                                              "--api-port", str(self.services.api_port), "--model-cache", s.model_cache],
                                 task_cgroups=cgroups, on_done=self._done)
        profiled = {}
        if name == "mosaic" and int(cfg.get("profile", 1)) > 0:  # the matrix needs it; before ready: no arrival runs beside it
            profiled = {c: round(ms, 1) for c, ms in self.executor.profile(names, int(cfg.get("profile", 1))).items()}
        self.inbox: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.wake_r, self.wake_w = os.pipe()
        self.loop = threading.Thread(target=self._serve, name="mosaic-executor", daemon=True)
        self.loop.start()
        self.info = {"app": "edge_tasks", "model": f"MOSAIC's six task classes under {name}", "weights": "none (no model)",
                     "policy": name, "admission": cfg, "task_cgroups": "per task, through MOSAIC's agent" if agent else
                     "none: no agent, every task in the node's cgroup with one weight",
                     "interference": "measured slowdown of service time (no PMU)", "power": "not measured",
                     "profiled_alone_ms": profiled}

    def close(self) -> None:
        """Stop the executor; write the records first (the runner gives the server
        5 s), then stop the workers and the services."""
        self.stop.set()
        os.write(self.wake_w, b"x")
        self.loop.join(timeout=2)
        arrived = []  # handed over but not yet in the executor's queue (its loop lagged, or did not stop in time)
        while True:
            try:
                arrived.append(self.inbox.get_nowait())
            except queue.Empty:
                break
        with self.lock:
            for t in [*self.executor.running, *self.executor.queue, *arrived]:
                wait = "" if t.started_ns is None else f"{(t.started_ns - t.arrival_ns) / MS:.3f}"
                self.rows.writerow([t.id, t.cls, t.tier, f"{t.deadline_ms:.1f}", t.arrival_ns + self.wall, wait, "", "", "", 0, 0, "", ""])
            self.done_log.close()
            with open(self.out / "mosaic-decisions.csv", "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["task", "admit", "rule", "detail", "us"])
                for d in list(getattr(self.policy, "decisions", [])):
                    w.writerow([d.task, int(d.admit), d.rule, d.detail, f"{d.ns / 1000:.2f}"])
            with open(self.out / "mosaic-queue.csv", "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["t_ns", "queued"])  # wall clock
                w.writerows((ns + self.wall, q) for ns, q in list(self.executor.queue_depth))
            self.matrix.save(self.out / "mosaic-matrix.sqlite")
        for wk in self.executor.workers:  # a task still running at the end is stopped, not waited for
            if wk.task is not None:
                wk.proc.kill()
        self.executor.close()
        self.services.stop()

    def _serve(self) -> None:
        try:
            self.executor.serve(self.inbox, self.stop, self.wake_r)
        finally:
            with self.lock:
                for ev, _ in self.waiting.values():
                    ev.set()

    def _done(self, d) -> None:
        t = d.task
        with self.lock:
            if self.done_log.closed:
                return
            self.rows.writerow([t.id, t.cls, t.tier, f"{t.deadline_ms:.1f}", t.arrival_ns + self.wall, f"{(t.started_ns - t.arrival_ns) / MS:.3f}",
                                f"{d.service_ms:.3f}", f"{d.cpu_ms:.3f}", f"{(t.finished_ns - t.arrival_ns) / MS:.3f}",
                                int(t.finished_ns <= t.due_ns), int(d.ok), json.dumps({k: round(v, 3) for k, v in d.beside.items()}), d.taught])
            self.done_log.flush()
            waiting = self.waiting.pop(t.id, None)
        if waiting is not None:
            waiting[1].append(d)
            waiting[0].set()

    def process(self, payload: bytes) -> bytes:
        from mosaic.classes import Task

        req = json.loads(payload)
        task = Task(req["id"], req["cls"], time.monotonic_ns(), float(req["deadline_ms"]))
        ev, slot = threading.Event(), []  # type: tuple[threading.Event, list]
        with self.lock:
            self.waiting[task.id] = (ev, slot)
        self.inbox.put(task)
        os.write(self.wake_w, b"x")
        ev.wait()
        if not slot:
            return json.dumps({"id": task.id, "error": "the executor stopped"}).encode()
        d = slot[0]
        assert task.started_ns is not None and task.finished_ns is not None  # the executor set both before it answered
        return json.dumps({"id": task.id, "cls": task.cls, "ok": d.ok, "hit": task.finished_ns <= task.due_ns,
                           "wait_ms": round((task.started_ns - task.arrival_ns) / MS, 3), "service_ms": round(d.service_ms, 3)}).encode()
