"""Application-level congestion control, the thesis' rule made configurable:
while end-to-end latency exceeds a threshold, multiply the sending rate by
`factor` (halve it by default); once latency is back under the threshold,
restore it. A change is made at most once per `hold_s`, so one slow burst of
answers halves the rate once, not once per answer.

The latency signal is the latest answer's end-to-end latency, or the age of
the oldest unanswered request when that is larger: during an outage no answer
arrives at all, and the rate must still come down."""

from __future__ import annotations

from dataclasses import dataclass

RESTORE = ("reset", "double", "additive")


@dataclass
class CongestionControl:
    base_rate: float
    threshold_ms: float = 500.0
    factor: float = 0.5
    hold_s: float = 1.0
    restore: str = "reset"  # back to base_rate at once; "double" or "additive" climb back
    step: float = 0.0  # requests/s per hold_s, for "additive" (default: a tenth of base_rate)
    min_rate: float = 0.0  # default: base_rate / 64

    def __post_init__(self) -> None:
        if self.restore not in RESTORE:
            raise ValueError(f"congestion_control.restore {self.restore!r}; valid: {', '.join(RESTORE)}")
        self.rate = self.base_rate
        self.min_rate = self.min_rate or self.base_rate / 64
        self.step = self.step or self.base_rate / 10
        self._last_change = float("-inf")

    def update(self, now_s: float, latency_ms: float) -> str | None:
        """Feed the current latency signal; returns why the rate changed, or None."""
        if now_s - self._last_change < self.hold_s:
            return None
        if latency_ms > self.threshold_ms and self.rate > self.min_rate:
            self.rate = max(self.min_rate, self.rate * self.factor)
            reason = "decrease"
        elif latency_ms <= self.threshold_ms and self.rate < self.base_rate:
            if self.restore == "reset":
                self.rate = self.base_rate
            elif self.restore == "double":
                self.rate = min(self.base_rate, self.rate * 2)
            else:
                self.rate = min(self.base_rate, self.rate + self.step)
            reason = "restore"
        else:
            return None
        self._last_change = now_s
        return reason


def from_settings(base_rate: float, cc: dict) -> CongestionControl | None:
    if not cc or not cc.get("enabled", False):
        return None
    keys = {k: v for k, v in cc.items() if k != "enabled"}
    return CongestionControl(base_rate=base_rate, **keys)
