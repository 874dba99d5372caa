"""pDCell's shims: applications keep TCP sockets, pDCell's transport carries
their flows between the data center and the UE (docs/pdcell.md, "What is
transparent").

Server side (`source`): the node's nat table redirects the TCP connections it
opens to the UEs' flow ports to this shim (iptables REDIRECT; the original
address from SO_ORIGINAL_DST). Each connection is one flow: what the app
writes is sent on credit, announced in whole packets while the app writes and
with its exact size once the app closes its side. When the CU says the last
packet has left over the air (DONE), the shim closes the app's connection:
the app sees its flow delivered, as a TCP sender sees its last ACK.

UE side (`sink`): each flow arriving on pDCell's port opens a TCP connection
to the address and port the server's app had asked for (the flow's first 6
bytes, written by the server's shim), writes the flow's bytes in order as
they become contiguous, and closes it when the flow is whole.

What is not transparent: data from the UE back to the server over the same
connection (one direction only: a flow), an app that waits for an answer
before closing its side (the last partial packet goes at close), and TCP
options; the connection's peer address at the UE is the shim's (loopback).

    python -m pdcell.shim source --listen PORT [--unscheduled N]
    python -m pdcell.shim sink
"""

from __future__ import annotations

import argparse
import functools
import queue
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from pdcell import wire
from pdcell.sink import Received, Sink
from pdcell.source import Flow, Source

SO_ORIGINAL_DST = 80  # linux/netfilter_ipv4.h
ORIGIN = struct.Struct("!4sH")  # the app's destination, ahead of its bytes


def original_dst(conn: socket.socket) -> tuple[str, int]:
    raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, addr = struct.unpack_from("!H4s", raw, 2)
    return socket.inet_ntoa(addr), port


class SourceShim:
    """Reader threads put (conn, chunk or None at EOF) on a queue; the main thread owns the Source."""

    def __init__(self, listen: int, unscheduled: int):
        self.src = Source(unscheduled=unscheduled)
        self.lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lst.bind(("0.0.0.0", listen))
        self.lst.listen(512)
        self.events: queue.SimpleQueue[tuple[socket.socket, bytes | None]] = queue.SimpleQueue()
        self.flows: dict[socket.socket, tuple[Flow, bytearray]] = {}
        self.stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.src.add_reader(self._wake_r, self.take)

    def accept(self) -> None:
        self.lst.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.lst.accept()
            except (TimeoutError, socket.timeout):
                continue
            threading.Thread(target=self.read, args=(conn,), daemon=True).start()

    def read(self, conn: socket.socket) -> None:
        dst, port = original_dst(conn)
        self.put(conn, ORIGIN.pack(socket.inet_aton(dst), port))
        while True:
            try:
                chunk = conn.recv(1 << 16)
            except OSError:
                chunk = b""
            self.put(conn, chunk or None)
            if not chunk:
                return

    def put(self, conn: socket.socket, chunk: bytes | None) -> None:
        self.events.put((conn, chunk))
        try:
            self._wake_w.send(b"!")
        except BlockingIOError:  # the main thread has wakeups enough pending
            pass

    def run(self) -> None:
        threading.Thread(target=self.accept, daemon=True).start()
        while not self.stop.is_set():
            self.src.poll(0.2)

    def take(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                conn, chunk = self.events.get_nowait()
            except queue.Empty:
                return
            known = self.flows.get(conn)
            if known is None:  # the first event of a connection (its original destination), or one after its flow is done
                if chunk is None:
                    continue
                dst = socket.inet_ntoa(chunk[:4])
                self.flows[conn] = (Flow(0, (dst, 0), 0, None, time.monotonic_ns(), None, last=False), bytearray(chunk))
                continue
            f, data = known
            if chunk is not None:
                data += chunk
            last = chunk is None
            size = len(data) if last else len(data) // wire.PAYLOAD * wire.PAYLOAD
            if f.flow == 0:
                if size == 0:
                    continue
                self.flows[conn] = (self.src.start(f.dst[0], size, data, on_done=functools.partial(self.done, conn), last=last), data)
            elif size > f.size or last:
                self.src.grow(f, size, last)

    def done(self, conn: socket.socket, _flow: Flow) -> None:
        self.flows.pop(conn, None)
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        conn.close()


class SinkShim:
    def __init__(self) -> None:
        self.conns: dict[tuple[str, int, int], socket.socket | None] = {}
        self.head: dict[tuple[str, int, int], bytes] = {}
        self.sink = Sink(on_bytes=self.chunk, on_flow=self.whole)

    def chunk(self, r: Received, b: bytes) -> None:
        key = (r.src[0], r.src[1], r.flow)
        conn = self.conns.get(key)
        if conn is None and key not in self.conns:
            head = self.head.get(key, b"") + b
            if len(head) < ORIGIN.size:
                self.head[key] = head
                return
            self.head.pop(key, None)
            addr, port = ORIGIN.unpack_from(head)
            try:
                conn = socket.create_connection((socket.inet_ntoa(addr), port), timeout=5)
            except OSError as e:
                print(f"pdcell sink shim: the app at {socket.inet_ntoa(addr)}:{port} refused flow {r.flow}: {e}", file=sys.stderr, flush=True)
                conn = None
            self.conns[key] = conn
            b = head[ORIGIN.size:]
        if conn is not None and b:
            try:
                conn.sendall(b)
            except OSError:
                self.conns[key] = None

    def whole(self, r: Received) -> None:
        conn = self.conns.pop((r.src[0], r.src[1], r.flow), None)
        if conn is not None:
            conn.shutdown(socket.SHUT_WR)
            conn.close()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.sink.poll(0.2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pdcell.shim", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="side", required=True)
    s = sub.add_parser("source")
    s.add_argument("--listen", type=int, required=True)
    s.add_argument("--unscheduled", type=int, default=2)
    k = sub.add_parser("sink")
    for p in (s, k):
        p.add_argument("--ready", help="a file made once the shim listens")
    args = ap.parse_args(argv)

    def ready() -> None:
        print("ready", flush=True)
        if args.ready:
            Path(args.ready).touch()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.side == "source":
        shim = SourceShim(args.listen, args.unscheduled)
        shim.stop = stop
        ready()
        shim.run()
    else:
        sink = SinkShim()
        ready()
        sink.run(stop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
