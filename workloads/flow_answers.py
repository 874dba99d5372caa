"""Answers as flows (contract.ANSWER_PORT): the endpoint's listener and the
server's sender. Each answer is one TCP connection, server to endpoint, so
the transport underneath carries it as one flow and its completion time is
measured where it ends: at the endpoint's last byte."""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Callable

from workloads import contract


def own_address(broker_host: str, broker_port: int) -> str:
    """The endpoint's address toward the edge: where the servers reach it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((broker_host, broker_port))  # no packet: only the route is looked up
        return s.getsockname()[0]


class Listener:
    """Accepts answers on ANSWER_PORT: `on_answer(header, head, size, t_last_byte)` once each is whole."""

    def __init__(self, on_answer: Callable[[dict, bytes, int, int], None], port: int = contract.ANSWER_PORT):
        self.on_answer = on_answer
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", port))
        self.sock.listen(1024)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        head, size, t_last = b"", 0, 0
        buf = bytearray(1 << 16)
        with conn:
            while True:
                try:
                    n = conn.recv_into(buf)
                except OSError:
                    return  # reset: no answer (the request times out)
                if n == 0:
                    break
                t_last = time.time_ns()
                if len(head) < 4 + 64 * 1024:
                    head += bytes(buf[:n])
                size += n
        if len(head) < 4:
            return
        (hlen,) = struct.unpack("!I", head[:4])
        if len(head) < 4 + hlen:
            return
        header, first = contract.unpack(head[:4 + hlen])[0], head[4 + hlen:4 + hlen + 64]
        self.on_answer(header, first, size, t_last)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(1)


TCPI_TOTAL_RETRANS = 100  # struct tcp_info (linux/tcp.h): 8 bytes of u8 fields, then u32s; tcpi_total_retrans is the 24th


def send(address: str, message: bytes, port: int = contract.ANSWER_PORT, timeout: float = 600) -> int:
    """One answer to the endpoint at `address`: connect, write, close our side, wait for the endpoint's close.
    Returns the segments the connection's TCP sent again."""
    with socket.create_connection((address, port), timeout=timeout) as s:
        s.sendall(message)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
        info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        return struct.unpack_from("I", info, TCPI_TOTAL_RETRANS)[0] if len(info) >= 104 else 0
