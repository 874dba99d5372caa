"""The transport's header, byte for byte as mahimahi-link's CU reads and writes
it (src/pdcell/, `wire`): "PD", kind, flags (bit 0: the size is final), flow,
seq, the flow's size so far, and for a credit its ts and window in µs."""

from __future__ import annotations

import struct
from dataclasses import dataclass

HEADER = struct.Struct("!2sBBIIQII")
assert HEADER.size == 28
MAGIC = b"PD"
#: Data bytes in a full packet: a 1500-byte IP packet less IPv4, UDP and the header.
PAYLOAD = 1500 - 20 - 8 - HEADER.size
#: The CU's UDP port unless the experiment names another ([transport] port).
PORT = 47200
#: The offload node's shim (TCP): where its nat table sends the servers' connections to the UEs.
SHIM_PORT = 47201

RTS, DATA, CREDIT, DONE = 1, 2, 3, 4


@dataclass(frozen=True)
class Header:
    kind: int
    flow: int
    seq: int = 0
    size: int = 0
    last: bool = True
    ts_us: int = 0
    window_us: int = 0

    def pack(self) -> bytes:
        return HEADER.pack(MAGIC, self.kind, int(self.last), self.flow, self.seq, self.size, self.ts_us, self.window_us)


def parse(b: bytes | memoryview) -> Header | None:
    if len(b) < HEADER.size:
        return None
    magic, kind, flags, flow, seq, size, ts_us, window_us = HEADER.unpack_from(b)
    if magic != MAGIC or kind not in (RTS, DATA, CREDIT, DONE):
        return None
    return Header(kind, flow, seq, size, bool(flags & 1), ts_us, window_us)


def packets(size: int) -> int:
    """How many data packets a flow of `size` bytes takes."""
    return -(-size // PAYLOAD)
