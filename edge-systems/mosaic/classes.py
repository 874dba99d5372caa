"""MOSAIC's six task classes (SPEC-mosaic.md, "Workload classes"): tier,
deadline range, tier weight and share of arrivals, as the paper gives them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskClass:
    name: str
    tier: int  # 1 (mission-critical) .. 4 (background)
    deadline_ms: tuple[float, float]  # a task's deadline is drawn in this range
    weight: float  # w_tier in the urgency score
    share: float  # of all arrivals


CLASSES: tuple[TaskClass, ...] = (
    TaskClass("inference_critical", 1, (500, 3000), 4.0, 0.15),
    TaskClass("dispatch_api", 2, (50, 200), 3.0, 0.40),
    TaskClass("sensor_fusion", 2, (100, 500), 3.0, 0.25),
    TaskClass("analytics_batch", 3, (2000, 10000), 1.5, 0.10),
    TaskClass("model_update", 3, (5000, 30000), 1.5, 0.05),
    TaskClass("log_archive", 4, (30000, 300000), 0.5, 0.05),
)
BY_NAME = {c.name: c for c in CLASSES}
MISSION_CRITICAL = tuple(c.name for c in CLASSES if c.tier <= 2)  # the three classes MOSAIC must complete
PRIORITY_WEIGHTS = {1: 1.5, 2: 1.0, 3: 0.7}  # w_prio: a task's own priority (1 high, 2 normal, 3 low), as MOSAIC's code


@dataclass
class Task:
    """One task's life on the edge node, in ns of one monotonic clock."""

    id: str
    cls: str
    arrival_ns: int
    deadline_ms: float  # relative to arrival
    expected_ms: float = 0.0  # its class's service time alone, as measured so far (0: unknown)
    priority: int = 2
    started_ns: int | None = None
    finished_ns: int | None = None

    @property
    def tier(self) -> int:
        return BY_NAME[self.cls].tier

    @property
    def due_ns(self) -> int:
        return self.arrival_ns + int(self.deadline_ms * 1e6)

    def remaining_ms(self, now_ns: int) -> float:
        """Time left to its deadline (negative once past)."""
        return (self.due_ns - now_ns) / 1e6

    def waited_ms(self, now_ns: int) -> float:
        return ((self.started_ns if self.started_ns is not None else now_ns) - self.arrival_ns) / 1e6
