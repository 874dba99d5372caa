"""The edge manager's CPU policy (SPEC-smec, "Scheduling"), as pure state:
the caller says what happened and when, the policy says who holds what.

- Each application has an urgency threshold: a request whose budget is
  below it is urgent.
- An urgent application gets one more unit (a core in `cores` mode, a
  slice of CPU bandwidth in `quota` mode) if one is free, then waits a
  cool-down (~100 ms) before it can get another.
- A unit is taken back when the application's average utilisation of what
  it holds falls below ~60%, never because another one is urgent (that
  would thrash); an application keeps at least its minimum.
- Ours, found on live runs: an application that had an urgent request in
  the last second (URGENT_HOLD_NS) keeps what it holds. Early drops leave
  an overloaded application's CPU idle, and without this its unit would go
  back a period after it came, and again, and again.

`quota` mode is this project's addition: the same decisions in CPU
bandwidth (cgroup CPU quota) instead of whole cores, so SMEC works on edge
nodes with two cores."""

from __future__ import annotations

from dataclasses import dataclass, field

COOLDOWN_NS = 100_000_000
RECLAIM_BELOW = 0.6
URGENT_HOLD_NS = 1_000_000_000


@dataclass
class AppShare:
    name: str
    units: int
    minimum: int = 1
    threshold_ns: int = 0  # urgent when a request's budget is below this
    last_change_ns: int = -(10**18)
    last_urgent_ns: int = -(10**18)
    decisions: list[tuple[int, int, str]] = field(default_factory=list)  # (t, units, why)


class CpuPolicy:
    """`total` units (cores, or quota slices) among applications."""

    def __init__(self, apps: dict[str, tuple[int, int]], total: int, cooldown_ns: int = COOLDOWN_NS,
                 reclaim_below: float = RECLAIM_BELOW, urgent_hold_ns: int = URGENT_HOLD_NS) -> None:
        """apps: name -> (initial units, urgency threshold ns); each starts with at least 1."""
        self.total, self.cooldown_ns, self.reclaim_below = total, cooldown_ns, reclaim_below
        self.urgent_hold_ns = urgent_hold_ns
        self.apps = {n: AppShare(n, max(1, u), 1, th) for n, (u, th) in apps.items()}
        if sum(a.units for a in self.apps.values()) > total:
            raise ValueError(f"{sum(a.units for a in self.apps.values())} units asked for, {total} available")

    def free(self) -> int:
        return self.total - sum(a.units for a in self.apps.values())

    def units(self) -> dict[str, int]:
        return {n: a.units for n, a in self.apps.items()}

    def request_budget(self, app: str, budget_ns: int, now_ns: int) -> bool:
        """A request of `app` with this budget; True when it made the app gain a unit."""
        a = self.apps[app]
        if budget_ns >= a.threshold_ns:
            return False
        a.last_urgent_ns = now_ns
        if self.free() <= 0 or now_ns - a.last_change_ns < self.cooldown_ns:
            return False
        a.units += 1
        a.last_change_ns = now_ns
        a.decisions.append((now_ns, a.units, "urgent"))
        return True

    def utilisation(self, app: str, busy_fraction: float, now_ns: int) -> bool:
        """The app's average use of its units over the last period (0..1);
        True when a unit was taken back."""
        a = self.apps[app]
        if (busy_fraction >= self.reclaim_below or a.units <= a.minimum or now_ns - a.last_change_ns < self.cooldown_ns
                or now_ns - a.last_urgent_ns < self.urgent_hold_ns):
            return False
        a.units -= 1
        a.last_change_ns = now_ns
        a.decisions.append((now_ns, a.units, f"idle ({busy_fraction:.0%} used)"))
        return True
