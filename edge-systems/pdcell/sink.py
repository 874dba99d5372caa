"""The UE's side of pDCell's transport: data packets arrive over the radio
from the CU, in any order; a flow is whole when every packet of its final size
is in. Radio losses are left to the radio's own ARQ (the emulated cell loses
nothing unless told to), so the UE sends nothing back."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from pdcell import wire


@dataclass
class Received:
    src: tuple[str, int]
    flow: int
    size: int
    first_ns: int
    last_ns: int = 0
    packets: int = 0
    duplicates: int = 0
    last: bool = False
    data: bytearray | None = None


class Sink:
    def __init__(self, bind: str = "0.0.0.0", port: int = wire.PORT, keep_data: bool = False,
                 on_flow: Callable[[Received], None] | None = None, on_bytes: Callable[[Received, bytes], None] | None = None):
        """`on_flow`: each flow once whole; `on_bytes`: each flow's data in order, as soon as it is contiguous."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind((bind, port))
        self.keep_data = keep_data
        self.on_flow = on_flow
        self.on_bytes = on_bytes
        self._open: dict[tuple[str, int, int], tuple[Received, bytearray]] = {}
        self._ahead: dict[tuple[str, int, int], dict[int, bytes]] = {}  # on_bytes: packets past a gap
        self._next: dict[tuple[str, int, int], int] = {}
        self._finished: set[tuple[str, int, int]] = set()
        self.done: list[Received] = []

    def poll(self, timeout: float) -> None:
        """Take data for up to `timeout` s."""
        end = time.monotonic() + timeout
        buf = bytearray(2048)
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            self.sock.settimeout(left)
            try:
                n, src = self.sock.recvfrom_into(buf)
            except (TimeoutError, socket.timeout):
                return
            self._take(memoryview(buf)[:n], src, time.monotonic_ns())

    def _take(self, b: memoryview, src: tuple[str, int], now: int) -> None:
        h = wire.parse(b)
        if h is None or h.kind != wire.DATA:
            return
        key = (src[0], src[1], h.flow)
        if key in self._finished:  # a late copy of a packet of a flow already whole
            return
        entry = self._open.get(key)
        if entry is None:
            r = Received(src, h.flow, h.size, now, data=bytearray(h.size) if self.keep_data else None)
            entry = self._open[key] = (r, bytearray(wire.packets(h.size)))
        r, seen = entry
        if h.size > r.size:  # a flow whose size grew
            seen.extend(bytes(wire.packets(h.size) - len(seen)))
            if r.data is not None:
                r.data.extend(bytes(h.size - r.size))
            r.size = h.size
        if h.seq >= len(seen) or seen[h.seq]:
            r.duplicates += 1
            return
        seen[h.seq] = 1
        r.packets += 1
        body = b[wire.HEADER.size:]
        if r.data is not None:
            lo = h.seq * wire.PAYLOAD
            r.data[lo:lo + len(body)] = body
        if self.on_bytes is not None:
            ahead = self._ahead.setdefault(key, {})
            ahead[h.seq] = bytes(body)
            nxt = self._next.get(key, 0)
            while nxt in ahead:
                self.on_bytes(r, ahead.pop(nxt))
                nxt += 1
            self._next[key] = nxt
        r.last = r.last or h.last
        if r.last and r.packets == len(seen):
            self._ahead.pop(key, None)
            self._next.pop(key, None)
            r.last_ns = now
            del self._open[key]
            self._finished.add(key)
            self.done.append(r)
            if self.on_flow is not None:
                self.on_flow(r)

    def close(self) -> None:
        self.sock.close()
