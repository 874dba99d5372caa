"""Endpoint side of edge_tasks: each request is one task, its class drawn by
MOSAIC's arrival shares and its deadline in its class's range (seeded: the
same seed draws the same tasks, whatever the policy)."""

from __future__ import annotations

import json
import random

from workloads.contract import EndpointSettings


class Endpoint:
    def __init__(self, s: EndpointSettings) -> None:
        from mosaic.classes import CLASSES

        self.rng = random.Random(s.seed + 7919 * s.repetition)
        self.classes = CLASSES
        self.prefix = f"{s.endpoint}-{s.repetition}-"  # the task's id is its request's (workloads/driver.py)

    def draw(self, seq: int) -> dict:
        c = self.rng.choices(self.classes, [k.share for k in self.classes])[0]
        return {"id": f"{self.prefix}{seq}", "cls": c.name, "deadline_ms": round(self.rng.uniform(*c.deadline_ms), 1)}

    def preprocess(self, item: dict) -> bytes:
        return json.dumps(item).encode()
