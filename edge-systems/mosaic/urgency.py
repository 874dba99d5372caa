"""MOSAIC's urgency score and starvation guard (SPEC-mosaic.md, "Urgency"):

    U(t) = w_tier * w_prio / max(eps, r_t / d_t),  eps = 1e-4

with r_t the time left to the deadline and d_t the deadline; U = inf once the
deadline has passed, and U = inf for a task that has waited longer than
3 * d_t, so that the next tick (100 ms) admits it whatever else holds:
no task waits longer than 3 * d + one tick."""

from __future__ import annotations

import math

from mosaic.classes import BY_NAME, PRIORITY_WEIGHTS, Task

EPS = 1e-4
STARVATION_MULT = 3.0
TICK_MS = 100.0


def urgency(task: Task, now_ns: int) -> float:
    if starving(task, now_ns):
        return math.inf
    left = task.remaining_ms(now_ns)
    if left <= 0:
        return math.inf
    w = BY_NAME[task.cls].weight * PRIORITY_WEIGHTS.get(task.priority, 1.0)
    return w / max(EPS, left / task.deadline_ms)


def starving(task: Task, now_ns: int, mult: float = STARVATION_MULT) -> bool:
    """Still queued and waiting longer than mult * its deadline."""
    return task.started_ns is None and task.waited_ms(now_ns) > mult * task.deadline_ms
