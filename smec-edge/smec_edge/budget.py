"""A request's remaining time at the edge (SPEC-smec, "Budget"):

    t_budget_edge = SLO - (t_network + t_wait + t_process)

t_network is the timing estimate (timing.py: the request's uplink and its
response's downlink), t_wait the time from its arrival to the start of its
processing, t_process the median of the application's last R = 10
processing times. A request whose budget is spent (<= 0) when it would
start is dropped at once: it cannot make its SLO, and processing it would
only delay those that still can."""

from __future__ import annotations

import statistics
from collections import deque

HISTORY = 10  # R: processing times remembered per application


class ProcessingTimes:
    """The last R processing times of each application; their median."""

    def __init__(self, r: int = HISTORY) -> None:
        self.r = r
        self.times: dict[str, deque[int]] = {}

    def add(self, app: str, ns: int) -> None:
        self.times.setdefault(app, deque(maxlen=self.r)).append(ns)

    def median_ns(self, app: str) -> int:
        """0 before the first measurement: an unknown cost drops nothing."""
        t = self.times.get(app)
        return int(statistics.median(t)) if t else 0


def budget_ns(slo_ns: int, network_ns: int, wait_ns: int, process_ns: int) -> int:
    return slo_ns - (network_ns + wait_ns + process_ns)


def drop(budget: int) -> bool:
    """Early drop: the request can no longer make it."""
    return budget <= 0
