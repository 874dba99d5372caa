"""Endpoint side of the file download: the request names a file of the
catalogue (its number and size); the catalogue has `bank_size` files of
`file_bytes` each, asked for in turn."""

from __future__ import annotations

from workloads.contract import EndpointSettings

DEFAULT_FILE_BYTES = 4_000_000
REQUEST_BYTES = 32


class Endpoint:
    def __init__(self, s: EndpointSettings) -> None:
        self.files = int(s.params.get("bank_size", 4))
        self.size = int(s.params.get("file_bytes", DEFAULT_FILE_BYTES))

    def draw(self, seq: int) -> int:
        return seq % self.files

    def preprocess(self, item: int) -> bytes:
        return f"file {item} {self.size}".encode().ljust(REQUEST_BYTES)
