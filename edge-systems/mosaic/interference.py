"""MOSAIC's interference matrix, learned online from measured service times.

M[a][b] is the fractional slowdown that aggressor class a causes victim class
b when they run together: b's service time beside a over b's service time
alone, minus one. The paper fills M with IPC degradation read from the PMU,
and its code pairs each entry with a latency overhead in ms. This machine
(and the lent GPU machines) expose no PMU, so the slowdown is measured
directly instead. It serves both uses: as a fraction for the IPC rule, and,
times the victim's own service time, as the latency a co-runner adds, for
the deadline rules.

A task that ran alone updates its class's alone time. A task that ran
beside one other class for most of its life (`PAIR_OVERLAP`) updates that
pair directly. A task that ran beside several classes updates each of them
in proportion to its share of the task's life. This is a normalised
least-mean-squares step: the slowdown is modelled as the sum of
share x M[a][victim], and the error of that sum is spread over the pairs.
A busy node rarely gives clean pairs: on a 1-CPU node with 8 tasks at once,
151 of 208 tasks had several co-runners, and a matrix fed only clean pairs
learned almost nothing.

Entries are exponential moving averages (alpha = 0.15, as the fingerprints).
Their confidence is kappa_n = 1 - exp(-n/10) after n observations, and the
rules scale an entry by the safety margin s = 1 + (1 - kappa_n) * 0.5.
A pair never observed is taken as `prior` (ours: MOSAIC's code starts from a
hand-written matrix instead), with n = 0 and thus the widest margin. The
matrix persists in SQLite, as in the original, so a later run starts from
what an earlier one learned."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

ALPHA = 0.15
PAIR_OVERLAP = 0.8  # share of a task's life beside one other class for a pair observation
ALONE_OVERLAP = 0.05  # at most this beside others for an observation alone
MARGIN = 0.5


def confidence(n: float) -> float:
    return 1.0 - math.exp(-n / 10.0)


def safety(n: float) -> float:
    return 1.0 + (1.0 - confidence(n)) * MARGIN


class Interference:
    def __init__(self, classes: list[str], prior: float = 0.2) -> None:
        self.classes, self.prior = list(classes), prior
        self.m: dict[tuple[str, str], float] = {}
        self.n: dict[tuple[str, str], float] = {}  # observations: whole for a clean pair, shares for mixed ones
        self.alone_ms: dict[str, float] = {}
        self.alone_n: dict[str, int] = {}
        self.unattributed = 0

    def get(self, aggressor: str, victim: str) -> float:
        return self.m.get((aggressor, victim), self.prior)

    def count(self, aggressor: str, victim: str) -> float:
        return self.n.get((aggressor, victim), 0)

    def margin(self, aggressor: str, victim: str) -> float:
        return safety(self.count(aggressor, victim))

    def observe(self, victim: str, service_ms: float, beside: dict[str, float]) -> str:
        """A finished task of class `victim`, its service time, and the share of its
        life each other class ran beside it; what it taught ("alone", "pair A",
        or why nothing)."""
        shares = {c: s for c, s in beside.items() if s > 0}
        if sum(shares.values()) <= ALONE_OVERLAP:
            old = self.alone_ms.get(victim)
            self.alone_ms[victim] = service_ms if old is None else (1 - ALPHA) * old + ALPHA * service_ms
            self.alone_n[victim] = self.alone_n.get(victim, 0) + 1
            return "alone"
        alone = self.alone_ms.get(victim)
        if not alone:
            self.unattributed += 1
            return "no alone time yet"
        slowdown = max(0.0, service_ms / alone - 1.0)
        if len(shares) == 1 and next(iter(shares.values())) >= PAIR_OVERLAP:
            (aggressor,) = shares
            key = (aggressor, victim)
            old_n = self.n.get(key, 0)
            self.m[key] = slowdown if old_n == 0 else (1 - ALPHA) * self.m[key] + ALPHA * slowdown
            self.n[key] = old_n + 1
            return f"pair {aggressor}"
        err = slowdown - sum(s * self.get(a, victim) for a, s in shares.items())
        norm = sum(s * s for s in shares.values())
        for a, s in shares.items():
            key = (a, victim)
            self.m[key] = max(0.0, self.get(a, victim) + ALPHA * s * err / norm)
            self.n[key] = self.n.get(key, 0) + s  # a fractional observation
        return f"mixed ({len(shares)} classes)"

    def save(self, path: Path) -> None:
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS pair (aggressor TEXT, victim TEXT, slowdown REAL, n REAL, "
                       "PRIMARY KEY (aggressor, victim))")
            db.execute("CREATE TABLE IF NOT EXISTS alone (cls TEXT PRIMARY KEY, ms REAL, n INTEGER)")
            db.executemany("INSERT OR REPLACE INTO pair VALUES (?, ?, ?, ?)", [(a, v, x, self.n[(a, v)]) for (a, v), x in self.m.items()])
            db.executemany("INSERT OR REPLACE INTO alone VALUES (?, ?, ?)", [(c, ms, self.alone_n[c]) for c, ms in self.alone_ms.items()])

    @classmethod
    def load(cls, path: Path, classes: list[str], prior: float = 0.2) -> "Interference":
        m = cls(classes, prior)
        if not Path(path).exists():
            return m
        with sqlite3.connect(path) as db:
            for a, v, x, n in db.execute("SELECT aggressor, victim, slowdown, n FROM pair"):
                m.m[(a, v)], m.n[(a, v)] = x, n
            for c, ms, n in db.execute("SELECT cls, ms, n FROM alone"):
                m.alone_ms[c], m.alone_n[c] = ms, n
        return m
