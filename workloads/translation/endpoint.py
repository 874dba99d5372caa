"""Endpoint side of W2: phrases from the project's corpus, sized by the payload
distribution (default 100-200 bytes). Pre-processing is normalisation of the
text (whitespace, Unicode NFC) and UTF-8 encoding; tokenisation is the
server's job, as in the reference."""

from __future__ import annotations

import unicodedata

import numpy as np

from workloads.contract import EndpointSettings
from workloads.payload import draw_sizes
from workloads.translation.corpus import phrase

DEFAULT_SIZES = (100, 200)


class Endpoint:
    def __init__(self, s: EndpointSettings) -> None:
        rng = np.random.default_rng(s.seed)
        n = int(s.params.get("bank_size", 64))
        self.bank = [phrase(rng, max(40, t)) for t in draw_sizes(s.payload, n, rng, DEFAULT_SIZES)]

    def draw(self, seq: int) -> str:
        return self.bank[seq % len(self.bank)]

    def preprocess(self, item: str) -> bytes:
        return unicodedata.normalize("NFC", " ".join(item.split())).encode()
