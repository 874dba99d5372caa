"""SMEC's GPU path (SPEC-smec, "GPU"): each application creates CUDA streams
at the device's priority levels, and a request runs on the stream its
budget calls for, urgent ones on the highest. The GPU's hardware scheduler
then lets an urgent kernel go first; under MPS this holds across
applications too.

Run on an H100 (experiments/smec/gpu/README.md): an urgent AR request
beside a neighbour flooding the GPU took 83 ms instead of 2.4 s. Across
processes this needs MPS (smec_edge.mps). `stream_priority` (the choice)
is tested everywhere; `Streams` only where torch.cuda is available."""

from __future__ import annotations


def stream_priority(budget_ns: int | None, threshold_ns: int, least: int, greatest: int) -> int:
    """The CUDA stream priority for a request (CUDA: a lower number is a
    higher priority; `least` is the default, `greatest` the most urgent).
    Urgent (budget below the threshold): greatest. No budget known, or a
    comfortable one (two thresholds or more): least. In between, the levels
    between them in proportion to how close the budget is to urgency."""
    if budget_ns is None or least == greatest:
        return least
    if budget_ns < threshold_ns:
        return greatest
    if budget_ns >= 2 * threshold_ns:
        return least
    levels = least - greatest  # e.g. 5 on devices with priorities 0..-5
    closeness = (2 * threshold_ns - budget_ns) / threshold_ns  # 0 (relaxed) .. 1 (at the threshold)
    return least - min(levels - 1, int(closeness * levels))


class Streams:
    """One CUDA stream per priority level of the device, for one application."""

    def __init__(self, torch, device: str = "cuda") -> None:
        self.torch = torch
        self.least, self.greatest = torch.cuda.Stream.priority_range()
        self.by_priority = {p: torch.cuda.Stream(device=device, priority=p)
                            for p in range(self.least, self.greatest - 1, -1)}

    def for_budget(self, budget_ns: int | None, threshold_ns: int):
        return self.by_priority[stream_priority(budget_ns, threshold_ns, self.least, self.greatest)]
