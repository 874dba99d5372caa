"""Server side of the file download: the store holds each file as seeded
random bytes (the same file, the same bytes) and reads it out for each
request, as a file server would from its page cache."""

from __future__ import annotations

import numpy as np

from workloads.contract import ServerSettings

MAX_FILE_BYTES = 100_000_000


class Server:
    def __init__(self, s: ServerSettings) -> None:
        self.info = {"app": "file_download", "model": "a file store (seeded random files)", "weights": "none (no model)"}
        self.seed = s.seed

    def process(self, payload: bytes) -> bytes:
        _, number, size = payload.split()
        n = min(int(size), MAX_FILE_BYTES)
        return np.random.default_rng((self.seed, int(number))).bytes(n)
