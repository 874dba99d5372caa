"""Endpoint side of the file transfer: a bank of seeded random files (random
bytes do not compress, like the media files a phone uploads)."""

from __future__ import annotations

import numpy as np

from workloads.contract import EndpointSettings
from workloads.payload import draw_sizes

DEFAULT_SIZES = (1000, 10_000_000)  # SMEC's dynamic workload; its static one: fixed 3 MB


class Endpoint:
    def __init__(self, s: EndpointSettings) -> None:
        rng = np.random.default_rng(s.seed)
        sizes = draw_sizes(s.payload, int(s.params.get("bank_size", 4)), rng, DEFAULT_SIZES)
        self.bank = [rng.bytes(n) for n in sizes]

    def draw(self, seq: int) -> bytes:
        return self.bank[seq % len(self.bank)]

    def preprocess(self, item: bytes) -> bytes:
        return item
