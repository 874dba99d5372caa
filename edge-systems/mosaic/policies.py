"""Which queued tasks start now: MOSAIC's admission and the classic
schedulers it is compared with (SPEC-mosaic.md), behind one interface so
that the executor runs all of them on the same arrivals.

`start(queue, running, now_ns)` returns the tasks to start, in order. It
leaves the lists alone: the executor moves what it starts. Every policy but
MOSAIC is work-conserving up to `slots` tasks at once. Round robin runs up to
`slots` tasks at a time in 50-ms turns: `turn` says which run next, and the
executor stops and continues the rest (SIGSTOP/SIGCONT).

MOSAIC admits at most `n_max` at once. It walks the queue in order of
urgency and applies the four rules to each task (`Mosaic.check`). A task
whose starvation guard fired (urgency infinite, having waited more than
3 * d) is admitted without the rules, so that no task waits longer than
3 * d plus one tick."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Literal, get_args

from mosaic.classes import Task
from mosaic.interference import Interference
from mosaic.urgency import starving, urgency


@dataclass
class Decision:
    task: str
    admit: bool
    rule: str  # "ok", "starving", "concurrency", "ipc", "squeeze", "infeasible"
    detail: str = ""
    ns: int = 0  # how long the decision took


class Policy:
    name = "?"

    def __init__(self, slots: int) -> None:
        self.slots = slots

    def order(self, queue: list[Task], now_ns: int) -> list[Task]:
        raise NotImplementedError

    def start(self, queue: list[Task], running: list[Task], now_ns: int) -> list[Task]:
        free = max(0, self.slots - len(running))
        return self.order(queue, now_ns)[:free]


class Fcfs(Policy):
    name = "fcfs"

    def order(self, queue, now_ns):
        return sorted(queue, key=lambda t: t.arrival_ns)


class Sjf(Policy):
    """Shortest expected service first (a class never measured goes last)."""

    name = "sjf"

    def order(self, queue, now_ns):
        return sorted(queue, key=lambda t: (t.expected_ms or math.inf, t.arrival_ns))


class PriorityStrict(Policy):
    name = "priority"

    def order(self, queue, now_ns):
        return sorted(queue, key=lambda t: (t.tier, t.arrival_ns))


class Edf(Policy):
    name = "edf"

    def order(self, queue, now_ns):
        return sorted(queue, key=lambda t: (t.due_ns, t.arrival_ns))


class RoundRobin(Policy):
    """Every task is admitted; up to `slots` run at a time, in turns of `quantum_ms`."""

    name = "rr"

    def __init__(self, slots: int, quantum_ms: float = 50.0) -> None:
        super().__init__(slots)
        self.quantum_ms = quantum_ms
        self.next = 0

    def start(self, queue, running, now_ns):
        return sorted(queue, key=lambda t: t.arrival_ns)  # all admitted; `turn` decides who runs

    def order(self, queue, now_ns):
        return sorted(queue, key=lambda t: t.arrival_ns)

    def turn(self, admitted: list[Task]) -> list[Task]:
        """The tasks that run in the next quantum: the next `slots` in the ring."""
        if not admitted:
            return []
        k = min(self.slots, len(admitted))
        self.next %= len(admitted)
        chosen = [admitted[(self.next + i) % len(admitted)] for i in range(k)]
        self.next = (self.next + k) % len(admitted)
        return chosen


@dataclass
class Mosaic(Policy):
    """SPEC-mosaic.md's admission, in order: (1) at most n_max running; (2) no
    running task that the candidate slows by more than tau_ipc; (3) no running
    task whose remaining time the candidate's added latency would squeeze by
    more than `squeeze`; (4) not when the running tasks' added latency on the
    candidate exceeds `infeasible` of its deadline. Latency added = slowdown
    (interference.py) * safety margin * the victim's service time alone."""

    matrix: Interference
    n_max: int = 8
    tau_ipc: float = 0.35
    squeeze: float = 0.4
    # rule 3 passes over a running task with under this left (late already, or about to be), as
    # MOSAIC's code does: read literally, a late task's remaining time (<= 0) refuses every
    # candidate, and under overload MOSAIC then runs one task at a time (experiments/mosaic)
    squeeze_skip_ms: float = 50.0
    infeasible: float = 0.6
    use_matrix: bool = True  # False: the ablation without the matrix (rule 1 only)
    decisions: list[Decision] = field(default_factory=list)
    name: str = "mosaic"

    def __post_init__(self) -> None:
        self.slots = self.n_max

    def check(self, c: Task, running: list[Task], now_ns: int) -> Decision:
        t0 = time.perf_counter_ns()
        d = self._rules(c, running, now_ns)
        d.ns = time.perf_counter_ns() - t0
        return d

    def _rules(self, c: Task, running: list[Task], now_ns: int) -> Decision:
        if len(running) >= self.n_max:
            return Decision(c.id, False, "concurrency", f"{len(running)} running, at most {self.n_max}")
        if not self.use_matrix:
            return Decision(c.id, True, "ok")
        m = self.matrix
        for r in running:
            if m.get(c.cls, r.cls) > self.tau_ipc:
                return Decision(c.id, False, "ipc", f"{c.cls} slows {r.cls} by {m.get(c.cls, r.cls):.2f} > {self.tau_ipc}")
        for r in running:
            left = r.remaining_ms(now_ns)
            if left < self.squeeze_skip_ms:
                continue
            added = m.get(c.cls, r.cls) * m.margin(c.cls, r.cls) * r.expected_ms
            if added > 0 and added > self.squeeze * left:
                return Decision(c.id, False, "squeeze", f"adds {added:.0f} ms to {r.id} with {left:.0f} ms left")
        total = sum(m.get(r.cls, c.cls) * m.margin(r.cls, c.cls) for r in running) * c.expected_ms
        if total > self.infeasible * c.deadline_ms:
            return Decision(c.id, False, "infeasible", f"{total:.0f} ms added of a {c.deadline_ms:.0f}-ms deadline")
        return Decision(c.id, True, "ok")

    def start(self, queue: list[Task], running: list[Task], now_ns: int) -> list[Task]:
        chosen: list[Task] = []
        for c in sorted(queue, key=lambda t: -urgency(t, now_ns)):
            if starving(c, now_ns):
                self.decisions.append(Decision(c.id, True, "starving", f"waited {c.waited_ms(now_ns):.0f} ms > 3 x {c.deadline_ms:.0f}"))
                chosen.append(c)
                continue
            d = self.check(c, running + chosen, now_ns)
            self.decisions.append(d)
            if d.admit:
                chosen.append(c)
        return chosen

    def order(self, queue, now_ns):
        return sorted(queue, key=lambda t: -urgency(t, now_ns))


# The policies by their experiment-file names: MOSAIC (with its interference matrix, or without it:
# mosaic-nomatrix) and the baselines. [edge.admission] policy and the standalone harness take these.
PolicyName = Literal["mosaic", "mosaic-nomatrix", "fcfs", "rr", "sjf", "priority", "edf"]
POLICIES: tuple[str, ...] = get_args(PolicyName)


def make(name: str, slots: int, matrix: Interference | None = None, **mosaic_args) -> Policy:
    """A policy by its experiment-file name."""
    simple = {"fcfs": Fcfs, "sjf": Sjf, "priority": PriorityStrict, "edf": Edf}
    if name in simple:
        return simple[name](slots)
    if name == "rr":
        return RoundRobin(slots)
    if name == "mosaic":
        if matrix is None:
            raise ValueError("mosaic needs an interference matrix")
        return Mosaic(matrix, **mosaic_args)
    raise ValueError(f"unknown policy {name!r}; valid: {', '.join(p for p in POLICIES if not p.startswith('mosaic'))}, mosaic")
