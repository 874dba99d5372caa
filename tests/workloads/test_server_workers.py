"""`workload.workers`: the built-in server loop (workloads/driver.py) takes
that many requests at once. A real Mosquitto on loopback, a server whose
app takes 0.3 s per request, four requests published together: with one
worker they are processed one after another, with two, two at a time."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import paho.mqtt.client as mqtt
import pandas as pd
import pytest

from continuum.runtime import wait_for
from workloads import contract

REPO = Path(__file__).resolve().parents[2]
SLOW_SERVER = """
import time

from workloads import driver

class Slow:
    def __init__(self, s):
        self.info = {"model": "sleep 0.3 s"}

    def process(self, payload):
        time.sleep(0.3)
        return payload

raise SystemExit(driver.run_server(Slow))
"""

pytestmark = pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto (./setup.sh installs it)")


@pytest.fixture
def broker(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n")
    proc = subprocess.Popen(["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def listening() -> bool:
        with socket.socket() as c:
            return c.connect_ex(("127.0.0.1", port)) == 0

    wait_for(listening, 10, "mosquitto on loopback")
    yield port
    proc.terminate()
    proc.wait(timeout=10)


def serve_four(tmp_path: Path, port: int, workers: int) -> pd.DataFrame:
    log, ready = tmp_path / f"server-{workers}.csv", tmp_path / f"ready-{workers}.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), contract.Env.BROKER: f"127.0.0.1:{port}", contract.Env.SERVER_LOG: str(log),
           contract.Env.READY_FILE: str(ready), contract.Env.WORKERS: str(workers), contract.Env.APP: f"slow{workers}"}
    server = subprocess.Popen([sys.executable, "-c", SLOW_SERVER], env=env, cwd=REPO)
    try:
        wait_for(ready.exists, 30, "the server to be ready")
        pub = mqtt.Client(client_id=f"pub-{workers}")
        pub.connect("127.0.0.1", port)
        pub.loop_start()  # the server is subscribed once it reports ready
        for i in range(4):
            header = {"request_id": f"r{workers}-{i}", "endpoint": "endpoint0", "repetition": 1}
            pub.publish(contract.request_topic("endpoint0"), contract.pack(header, b"x" * 100)).wait_for_publish()
        wait_for(lambda: server.poll() is None and _rows(log) == 4 or _died(server), 20, "four requests served")
        pub.loop_stop()
        pub.disconnect()
    finally:
        server.terminate()
        server.wait(timeout=10)
    return pd.read_csv(log).sort_values("t_server_start")


def _died(server: subprocess.Popen) -> bool:
    if server.poll() is not None:
        raise AssertionError(f"the server exited ({server.returncode}) before serving four requests")
    return False


def _rows(log: Path) -> int:
    try:
        return len(pd.read_csv(log))
    except (OSError, pd.errors.EmptyDataError):  # not written yet, or only its header on the way
        return 0


def _overlaps(s: pd.DataFrame) -> int:
    return int((s["t_server_start"].to_numpy()[1:] < s["t_server_done"].cummax().to_numpy()[:-1]).sum())


def test_one_worker_serves_in_turn_two_serve_two_at_once(tmp_path, broker):
    one, two = serve_four(tmp_path, broker, 1), serve_four(tmp_path, broker, 2)
    assert _overlaps(one) == 0
    assert _overlaps(two) >= 2, two  # requests 2 and 4 start while 1 and 3 are being processed
    span = lambda s: (s["t_server_done"].max() - s["t_server_start"].min()) / 1e9  # noqa: E731
    assert span(one) >= 1.2 and span(two) < 0.9 * span(one), (span(one), span(two))
