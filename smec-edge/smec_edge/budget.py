"""A request's remaining time at the edge (SPEC-smec, "Budget"):

    t_budget_edge = SLO - (t_network + t_wait + t_process)

t_network is the timing estimate (timing.py: the request's uplink and its
response's downlink), t_wait the time from its arrival to the start of its
processing, t_process the median of the application's last R = 10
processing times. A request whose budget is spent (<= 0) when it would
start is dropped at once: it cannot make its SLO, and processing it would
only delay those that still can.

One guard the paper does not describe, found on a live run: the median is
learnt only from requests that are processed, so an estimate made under a
bad moment (a cold start, a CPU share since raised) could drop every later
request and never be corrected. When an application has processed nothing
for STALE_NS, its next request is processed even with a spent budget (drop
reason "refresh" in the results) and its history starts again from it."""

from __future__ import annotations

import statistics
from collections import deque

HISTORY = 10  # R: processing times remembered per application
STALE_NS = 1_000_000_000  # an estimate no processed request has refreshed for this long is not trusted to drop


class ProcessingTimes:
    """The last R processing times of each application; their median."""

    def __init__(self, r: int = HISTORY) -> None:
        self.r = r
        self.times: dict[str, deque[int]] = {}
        self.last_ns: dict[str, int] = {}  # when each app last finished processing a request

    def add(self, app: str, ns: int, now_ns: int = 0, restart: bool = False) -> None:
        """A processing time; restart: it replaces the history (the estimate was stale)."""
        if restart:
            self.times.pop(app, None)
        self.times.setdefault(app, deque(maxlen=self.r)).append(ns)
        self.last_ns[app] = now_ns

    def stale(self, app: str, now_ns: int, after_ns: int = STALE_NS) -> bool:
        return app in self.last_ns and now_ns - self.last_ns[app] > after_ns

    def median_ns(self, app: str) -> int:
        """0 before the first measurement: an unknown cost drops nothing."""
        t = self.times.get(app)
        return int(statistics.median(t)) if t else 0


def budget_ns(slo_ns: int, network_ns: int, wait_ns: int, process_ns: int) -> int:
    return slo_ns - (network_ns + wait_ns + process_ns)


def drop(budget: int) -> bool:
    """Early drop: the request can no longer make it."""
    return budget <= 0
