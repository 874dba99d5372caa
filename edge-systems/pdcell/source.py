"""A source of pDCell's transport: it sends only what the CU credits.

A flow starts with an RTS carrying its size and the first `unscheduled`
packets, without waiting for anything (pHost: no handshake). From then on each
credit names one packet and a window: the packet goes ts µs after the credit
arrived, and not at all once the window has passed (the CU notices the credit
brought no data, credits the packet again and backs the UE off). A DONE from
the CU ends the flow: every packet has left over the air. Nothing is resent on
a timer of the source's own, so whatever the CU does not ask for never enters
the data center.

One thread, one UDP socket for all of a source's flows (the CU tells flows
apart by address, port and flow number); `poll` does the work.
"""

from __future__ import annotations

import heapq
import itertools
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pdcell import wire


@dataclass
class Flow:
    flow: int
    dst: tuple[str, int]
    size: int
    data: bytes | bytearray | None
    started_ns: int
    on_done: Callable[["Flow"], None] | None
    last: bool = True
    sent: int = 0
    credits: int = 0
    expired: int = 0
    done_ns: int | None = None
    extra: dict = field(default_factory=dict)


class Source:
    def __init__(self, bind: str = "0.0.0.0", port: int = wire.PORT, unscheduled: int = 2):
        self.port = port
        self.unscheduled = unscheduled
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind((bind, 0))
        self.sock.setblocking(False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.sock, selectors.EVENT_READ)
        self.flows: dict[int, Flow] = {}
        self._ids = itertools.count(1)
        self._due: list[tuple[int, int, int, int, int]] = []  # (send at, n, flow, seq, give up at)
        self._n = itertools.count()
        self._zeros = bytes(wire.PAYLOAD)
        self.done: list[Flow] = []

    def start(self, dst: str, size: int, data: bytes | bytearray | None = None, on_done: Callable[[Flow], None] | None = None,
              last: bool = True) -> Flow:
        """A new flow of `size` bytes to the UE at `dst` (its data, or zeros). A flow whose size
        is not known yet (`last` False) announces whole packets only, and grows with `grow`."""
        if size <= 0:
            raise ValueError("a flow has at least one byte")
        if not last and size % wire.PAYLOAD:
            raise ValueError("until its size is final a flow announces whole packets")
        f = Flow(next(self._ids), (dst, self.port), size, data, time.monotonic_ns(), on_done, last)
        self.flows[f.flow] = f
        self._send(wire.Header(wire.RTS, f.flow, 0, size, last).pack(), f.dst)
        for seq in range(min(self.unscheduled, wire.packets(size))):
            self._data(f, seq)
        return f

    def grow(self, f: Flow, size: int, last: bool) -> None:
        """More of a flow's data is there (f.data holds it): a new RTS with its size."""
        if f.last or size < f.size or (not last and size % wire.PAYLOAD):
            raise ValueError("a flow grows by whole packets until its size is final, and only until then")
        f.size, f.last = size, last
        self._send(wire.Header(wire.RTS, f.flow, 0, size, last).pack(), f.dst)

    def add_reader(self, sock: socket.socket, ready: Callable[[], None]) -> None:
        """Call `ready` from poll whenever `sock` has something to read (a shim's wakeup)."""
        self.sel.register(sock, selectors.EVENT_READ, ready)

    def _send(self, b: bytes, dst: tuple[str, int]) -> None:
        try:
            self.sock.sendto(b, dst)
        except BlockingIOError:  # the socket's buffer is full: the CU credits the packet again
            pass

    def _data(self, f: Flow, seq: int) -> None:
        lo = seq * wire.PAYLOAD
        n = min(wire.PAYLOAD, f.size - lo)
        if n <= 0:
            return
        body = f.data[lo:lo + n] if f.data is not None else self._zeros[:n]
        self._send(wire.Header(wire.DATA, f.flow, seq, f.size, f.last).pack() + body, f.dst)
        f.sent += 1

    def poll(self, timeout: float) -> None:
        """Take credits and DONEs for up to `timeout` s, sending each credited packet in its window."""
        end = time.monotonic_ns() + int(timeout * 1e9)
        while True:
            now = time.monotonic_ns()
            while self._due and self._due[0][0] <= now:
                _, _, flow, seq, give_up = heapq.heappop(self._due)
                f = self.flows.get(flow)
                if f is None:
                    continue
                if now > give_up:
                    f.expired += 1
                    continue
                self._data(f, seq)
            if now >= end:
                return
            wake = min(end, self._due[0][0]) if self._due else end
            for key, _ in self.sel.select(max(0.0, (wake - now) / 1e9)):
                if key.fileobj is self.sock:
                    self._receive()
                else:
                    key.data()  # another reader's (add_reader)

    def _receive(self) -> None:
        while True:
            try:
                b, _ = self.sock.recvfrom(2048)
            except BlockingIOError:
                return
            now = time.monotonic_ns()
            h = wire.parse(b)
            if h is None:
                continue
            f = self.flows.get(h.flow)
            if f is None:
                continue
            if h.kind == wire.CREDIT:
                f.credits += 1
                at = now + h.ts_us * 1000
                heapq.heappush(self._due, (at, next(self._n), h.flow, h.seq, at + h.window_us * 1000))
            elif h.kind == wire.DONE:
                f.done_ns = now
                del self.flows[h.flow]
                self.done.append(f)
                if f.on_done is not None:
                    f.on_done(f)

    def close(self) -> None:
        self.sel.close()
        self.sock.close()
