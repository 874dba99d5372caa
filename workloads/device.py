"""Where a PyTorch server of SMEC's apps runs: the GPU when torch sees one,
else the CPU. On the GPU a request runs on the CUDA stream its SMEC budget
calls for (smec_edge.gpu, SMEC's GPU path: urgent requests on the
highest-priority stream). Run on an H100 (experiments/smec/gpu/README.md);
the project's own machine has none."""

from __future__ import annotations

from typing import Any, Callable


class Device:
    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.cuda = bool(torch.cuda.is_available())
        self.name = "cuda" if self.cuda else "cpu"
        self.streams = None
        if self.cuda:
            from smec_edge.gpu import Streams

            self.streams = Streams(torch)

    def to(self, model: Any) -> Any:
        return model.to(self.name)

    def run(self, fn: Callable[[Any], Any], x: Any, budget_ns: int | None = None, threshold_ns: int = 0) -> Any:
        """fn(x moved to the device), on the stream the budget calls for; waits for it."""
        if self.streams is None:
            return fn(x)
        stream = self.streams.for_budget(budget_ns, threshold_ns)
        with self.torch.cuda.stream(stream):
            out = fn(x.to(self.name, non_blocking=True))
        stream.synchronize()
        return out


def load_weights(torch: Any, model: Any, model_cache: str, relative: str, kind: str, seed: int) -> str:
    """The state dict at model_cache/relative into model when it is there (nothing
    is downloaded at run time); what ran, for the manifest: `kind (path)`, or
    the seeded random weights the model was built with."""
    from pathlib import Path

    cached = Path(model_cache) / relative if model_cache else None
    if cached and cached.is_file():
        model.load_state_dict(torch.load(cached, map_location="cpu"))
        return f"{kind} ({cached})"
    return f"random, seed {seed} (no {relative} in the model cache)"
