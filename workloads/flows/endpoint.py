"""Endpoint side of the flows: each request names the size of the flow the UE
asks for; the sizes asked go beside the endpoint's records (flows-ENDPOINT.csv:
repetition, seq, bytes), so a flow that never completes still has its size."""

from __future__ import annotations

import zlib
from pathlib import Path

from workloads.contract import EndpointSettings
from workloads.flows.sizes import Sizes

REQUEST_BYTES = 24


class Endpoint:
    answers_as_flows = True

    def __init__(self, s: EndpointSettings) -> None:
        p = s.params
        seed = zlib.crc32(f"{s.seed}/{s.endpoint}/{s.repetition}".encode())  # one stream per endpoint and repetition, run after run
        self.sizes = Sizes(str(p.get("sizes", "web-search")), int(p.get("max_bytes", 10_000_000)), seed)
        self.fixed = p.get("size_bytes")
        self.repetition = s.repetition
        path = Path(s.records).with_name(f"flows-{s.endpoint}.csv")
        new = not path.exists()
        self.asked = path.open("a", buffering=1)
        if new:
            self.asked.write("repetition,seq,bytes\n")

    def draw(self, seq: int) -> int:
        size = int(self.fixed) if self.fixed else self.sizes.draw()
        self.asked.write(f"{self.repetition},{seq},{size}\n")
        return size

    def preprocess(self, size: int) -> bytes:
        return f"flow {size}".encode().ljust(REQUEST_BYTES)
