"""Bursty arrivals (arrivals = "onoff"): a Poisson process whose intensity
switches between calm periods and bursts `ratio` times as intense, as in
MOSAIC's `burst` pattern (5 s at 8x the base rate every 20 +- 4 s) and
SMEC's dynamic workload. The intensity is scaled so that its long-run mean
is the stated rate: a utilisation of 0.8 stays 0.8 on average, only bunched.

The schedule of periods comes from the experiment's seed and the
repetition's start, not the endpoint's, so every endpoint of a run bursts
at the same times (a crowd, a crisis), the harder case for the edge.

An endpoint draws unit-mean exponential gaps as for Poisson arrivals and
spends them in "operational time": `after(t, amount)` is the moment at
which `amount` seconds of mean-rate intensity have passed since t."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class OnOff:
    on_s: float
    off_s: float
    ratio: float  # the burst's intensity over the calm one
    jitter: float  # each calm period is off_s x U(1 - jitter, 1 + jitter)
    seed: int
    epoch_ns: int  # t = 0 of the schedule (the repetition's start): the same for every endpoint
    _edges: list[float] = field(default_factory=list)  # seconds after the epoch where periods end: off, on, off, ...
    _rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed * 7907 + 17)
        total = self.off_s + self.on_s
        # calm and burst intensities, relative to the mean: calm * off + burst * on = off + on
        self.calm = total / (self.off_s + self.ratio * self.on_s)
        self.burst = self.ratio * self.calm

    @classmethod
    def from_settings(cls, d: dict) -> "OnOff":
        return cls(float(d["on_s"]), float(d["off_s"]), float(d["ratio"]), float(d.get("jitter", 0.2)),
                   int(d.get("seed", 1)), int(d["epoch_ns"]))

    def _period(self, i: int) -> tuple[float, float, float]:
        """(start, end, intensity) of the i-th period (even: calm, odd: burst), in seconds after the epoch."""
        while len(self._edges) <= i:
            k = len(self._edges)
            length = self.off_s * self._rng.uniform(1 - self.jitter, 1 + self.jitter) if k % 2 == 0 else self.on_s
            self._edges.append((self._edges[-1] if self._edges else 0.0) + length)
        start = self._edges[i - 1] if i else 0.0
        return start, self._edges[i], self.calm if i % 2 == 0 else self.burst

    def intensity(self, t_ns: int) -> float:
        """The intensity at t, relative to the mean rate."""
        t = (t_ns - self.epoch_ns) / 1e9
        if t < 0:
            return self.calm
        i = 0
        while self._period(i)[1] <= t:
            i += 1
        return self._period(i)[2]

    def after(self, t_ns: float, amount: float) -> float:
        """The time (ns) at which `amount` seconds of mean-intensity time have passed since t_ns."""
        t = (t_ns - self.epoch_ns) / 1e9
        if t < 0:  # before the schedule: calm
            step = min(-t, amount / self.calm)
            t += step
            amount -= step * self.calm
        i = 0
        while self._period(i)[1] <= t:
            i += 1
        while amount > 1e-12:
            _, end, level = self._period(i)
            room = (end - t) * level
            if amount <= room:
                t += amount / level
                break
            amount -= room
            t = end
            i += 1
        return self.epoch_ns + t * 1e9


@dataclass
class RateSteps:
    """[[timeline]] load steps: the endpoint's rate, piecewise constant over the
    repetition (`steps`: (seconds after the epoch, requests/s), in time order).
    A gap drawn in units of 1/rate is spent at the rates it crosses, so a step
    takes effect at its instant, not after the gap that was running then."""

    base: float  # the rate before the first step
    epoch_ns: int
    steps: list[tuple[float, float]]

    @classmethod
    def from_settings(cls, base: float, d: dict) -> "RateSteps":
        return cls(base, int(d["epoch_ns"]), sorted((float(t), float(r)) for t, r in d["steps"]))

    def rate_at(self, t_ns: float) -> float:
        t = (t_ns - self.epoch_ns) / 1e9
        rate = self.base
        for start, r in self.steps:
            if start <= t:
                rate = r
        return rate

    def after(self, t_ns: float, units: float) -> float:
        """The time (ns) at which `units` requests' worth of rate has passed since t_ns."""
        t = (t_ns - self.epoch_ns) / 1e9
        edges = [s for s, _ in self.steps if s > t]
        while units > 1e-12:
            rate = self.rate_at(self.epoch_ns + t * 1e9)
            nxt = edges.pop(0) if edges else None
            if nxt is None or units <= (nxt - t) * rate:
                t += units / rate
                break
            units -= (nxt - t) * rate
            t = nxt
        return self.epoch_ns + t * 1e9
