"""The services two task classes talk to, one of each per edge node: a Redis
server (sensor_fusion) and the HTTP API (dispatch_api). Started as the
node's processes by the executor, ready when `start` returns, stopped by
`stop`."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, what: str, timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}) before it listened on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout_s:g} s")


@dataclass
class Services:
    redis_port: int = 0
    api_port: int = 0
    procs: list[subprocess.Popen] = field(default_factory=list)

    def start(self, wrap=lambda argv: argv) -> "Services":
        """wrap: how a node process is started (the executor's node_exec wrapper)."""
        self.redis_port, self.api_port = self.redis_port or free_port(), self.api_port or free_port()
        redis = subprocess.Popen(wrap(["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--protected-mode", "no"]),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.procs.append(redis)
        api = subprocess.Popen(wrap([sys.executable, "-m", "workloads.edge_tasks.api_service", str(self.api_port)]))
        self.procs.append(api)
        _wait_port(self.redis_port, redis, "redis-server")
        _wait_port(self.api_port, api, "the dispatch API")
        return self

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()
