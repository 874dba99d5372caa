"""Flows from servers to UEs, over TCP or pDCell's transport, for flow
completion times (issue 41): what the lab (mahimahi-link/lab/pdcell_lab.py)
and the flow workload run on each side.

Every flow's data begins with its own 16-byte header (the flow's number and
size, the application's framing), so the two sides' records pair up whatever
the transport. Both sides stamp CLOCK_MONOTONIC, which every network
namespace of one machine shares: a flow's completion time is the UE's time
of its last byte less the server's time of its start.

    python -m pdcell.flows sink --transport tcp|pdcell --port P --out FILE
    python -m pdcell.flows source --transport tcp|pdcell --schedule FILE --out FILE [--port P] [--cc cubic]

The schedule has one flow per line, "START_S DST_IP SIZE_BYTES"; the source
starts when a line arrives on its stdin (so several sources share one start)
and ends when every flow is done or --deadline-s has passed. The sink ends on
SIGTERM; each writes "FLOW SIZE ..." rows (see `source` and `sink`).
"""

from __future__ import annotations

import argparse
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

APP = struct.Struct("!QQ")  # the flow's number and size


def body(flow: int, size: int) -> bytes:
    """A flow's data: its header, then zeros (at least the header, whatever `size`)."""
    return APP.pack(flow, size) + bytes(max(0, size - APP.size))


def read_schedule(path: Path) -> list[tuple[float, str, int]]:
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            t, dst, size = line.split()
            rows.append((float(t), dst, max(APP.size, int(size))))
        except ValueError:
            raise SystemExit(f"{path}:{n}: expected START_S DST_IP SIZE_BYTES, got {line!r}") from None
    return sorted(rows)


def source(args: argparse.Namespace) -> int:
    """Rows "FLOW DST SIZE START_NS DONE_NS" (DONE_NS: the sender's end: DONE from the CU, or the TCP close; 0: not done)."""
    flows = read_schedule(Path(args.schedule))
    out: list[list] = [[k, dst, size, 0, 0] for k, (_, dst, size) in enumerate(flows)]
    print("ready", flush=True)
    sys.stdin.readline()
    t0 = time.monotonic_ns()
    deadline = t0 + int(args.deadline_s * 1e9)
    if args.transport == "tcp":
        _tcp_flows(args, flows, out, t0, deadline)
    else:
        _pdcell_flows(args, flows, out, t0, deadline)
    Path(args.out).write_text("".join(" ".join(map(str, r)) + "\n" for r in out))
    return 0


def _tcp_flows(args, flows, out, t0: int, deadline: int) -> None:
    def one(k: int, dst: str, size: int) -> None:
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            if args.cc:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, args.cc.encode())
            s.settimeout(max(1.0, (deadline - time.monotonic_ns()) / 1e9))
            out[k][3] = time.monotonic_ns()
            s.connect((dst, args.port))
            s.sendall(body(k, size))
            s.shutdown(socket.SHUT_WR)
            s.recv(1)  # the UE closes once it has every byte
            out[k][4] = time.monotonic_ns()
            s.close()
        except OSError:
            pass

    threads = []
    for k, (t, dst, size) in enumerate(flows):
        wait = t0 + int(t * 1e9) - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        th = threading.Thread(target=one, args=(k, dst, size), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join(max(0.0, (deadline - time.monotonic_ns()) / 1e9))


def _pdcell_flows(args, flows, out, t0: int, deadline: int) -> None:
    src = Source(port=args.port, unscheduled=args.unscheduled)
    started: dict[int, int] = {}

    def done(f: Flow) -> None:
        out[started[f.flow]][4] = f.done_ns

    k = 0
    while time.monotonic_ns() < deadline and (k < len(flows) or src.flows):
        now = time.monotonic_ns()
        while k < len(flows) and t0 + int(flows[k][0] * 1e9) <= now:
            _, dst, size = flows[k]
            f = src.start(dst, size, body(k, size), on_done=done)
            started[f.flow] = k
            out[k][3] = f.started_ns
            k += 1
        nxt = t0 + int(flows[k][0] * 1e9) if k < len(flows) else deadline
        src.poll(max(0.0, min(nxt - time.monotonic_ns(), 20_000_000) / 1e9))
    src.close()


def sink(args: argparse.Namespace) -> int:
    """Rows "FLOW SIZE FIRST_NS LAST_NS" per flow received whole."""
    rows: list[str] = []
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.transport == "tcp":
        _tcp_sink(args, rows, stop)
    else:
        _pdcell_sink(args, rows, stop)
    Path(args.out).write_text("".join(rows))
    return 0


def _tcp_sink(args, rows: list[str], stop: threading.Event) -> None:
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("0.0.0.0", args.port))
    lst.listen(512)
    lst.settimeout(0.2)
    print("ready", flush=True)

    def serve(c: socket.socket) -> None:
        first, got, head = 0, 0, b""
        buf = bytearray(1 << 16)
        while True:
            n = c.recv_into(buf)
            if n == 0:
                break
            if not first:
                first = time.monotonic_ns()
            if len(head) < APP.size:
                head += bytes(buf[:min(n, APP.size - len(head))])
            got += n
            if len(head) == APP.size and got >= APP.unpack(head)[1]:
                last = time.monotonic_ns()
                flow, size = APP.unpack(head)
                rows.append(f"{flow} {size} {first} {last}\n")
                break
        c.close()

    while not stop.is_set():
        try:
            c, _ = lst.accept()
        except (TimeoutError, socket.timeout):
            continue
        threading.Thread(target=serve, args=(c,), daemon=True).start()
    lst.close()


def _pdcell_sink(args, rows: list[str], stop: threading.Event) -> None:
    def whole(r: Received) -> None:
        assert r.data is not None
        flow, size = APP.unpack_from(r.data)
        rows.append(f"{flow} {size} {r.first_ns} {r.last_ns}\n")

    s = Sink(port=args.port, keep_data=True, on_flow=whole)
    print("ready", flush=True)
    while not stop.is_set():
        s.poll(0.2)
    s.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pdcell.flows", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="side", required=True)
    for side in ("source", "sink"):
        p = sub.add_parser(side)
        p.add_argument("--transport", choices=("tcp", "pdcell"), required=True)
        p.add_argument("--port", type=int, default=wire.PORT)
        p.add_argument("--out", required=True)
        if side == "source":
            p.add_argument("--schedule", required=True)
            p.add_argument("--deadline-s", type=float, default=60.0)
            p.add_argument("--cc", default="", help="TCP congestion control (tcp only)")
            p.add_argument("--unscheduled", type=int, default=2, help="packets sent with the RTS (pdcell only)")
    args = ap.parse_args(argv)
    return source(args) if args.side == "source" else sink(args)


if __name__ == "__main__":
    raise SystemExit(main())
