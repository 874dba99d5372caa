"""Server side of the file transfer: the file's SHA-256, as a store would
check what it received."""

from __future__ import annotations

import hashlib

from workloads.contract import ServerSettings


class Server:
    def __init__(self, s: ServerSettings) -> None:
        self.info = {"app": "file_transfer", "model": "sha256 of the upload", "weights": "none (no model)"}

    def process(self, payload: bytes) -> bytes:
        return hashlib.sha256(payload).hexdigest().encode()
