"""Per-node CPU and memory samples from each node's cgroup, taken by a
background thread while the workload runs (nodes.csv in the run folder)."""

from __future__ import annotations

import csv
import threading
from pathlib import Path

from continuum.runtime import Node


class NodeSampler:
    def __init__(self, nodes: list[Node], out: Path, interval_s: float = 0.5):
        self.nodes = [n for n in nodes if n.cgroup is not None]
        self.out = out
        self.interval = interval_s
        self._stop = threading.Event()
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name="node-sampler", daemon=True)

    def __enter__(self) -> "NodeSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        try:
            self._sample()
        except OSError as e:  # a full disk: the samples stop; the run's own checks report the disk
            self.error = f"node samples stopped: {e.strerror}: {self.out}"

    def _sample(self) -> None:
        last: dict[str, tuple[float, int]] = {}
        with open(self.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["time_ns", "node", "cpu_cores", "memory_bytes", "oom_kills"])
            while not self._stop.is_set():
                for n in self.nodes:
                    cg = n.cgroup
                    if cg is None:
                        continue
                    try:
                        now, usage, mem, ooms = cg.timed_sample()
                    except (OSError, ValueError):
                        continue
                    if n.name in last:
                        t0, u0 = last[n.name]
                        if now <= t0:  # a remote node's reader has no newer sample yet
                            continue
                        w.writerow([now, n.name, round((usage - u0) / (now - t0), 4), mem, ooms])
                    last[n.name] = (now, usage)
                f.flush()
                self._stop.wait(self.interval)
