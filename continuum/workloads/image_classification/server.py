"""Server side of W1, started on the remote node next to its broker.

A receiver (paho's network thread) timestamps each request the moment it
arrives and queues it; one worker decodes and classifies in arrival order and
publishes the answer with its timestamps. So time spent waiting for the model
counts as server time (M4), never as uplink time (M1)."""

from __future__ import annotations

import argparse
import json
import queue
import signal
import sys
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt

from continuum.workloads import mqtt_messages as msgs
from continuum.workloads.image_classification import model as mnet


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--broker", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=1883)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--qos", type=int, default=0)
    ap.add_argument("--ready-file", type=Path, required=True)
    ap.add_argument("--log", type=Path, required=True, help="CSV of every request received (finds drops)")
    a = ap.parse_args(argv)

    model, info = mnet.load(a.threads)
    mnet.classify(model, _warmup_jpeg(a.resolution), a.resolution)  # first inference is slow; not a request's cost

    inbox: queue.Queue = queue.Queue()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    client = mqtt.Client(client_id=f"server-{a.broker}", clean_session=True)
    client.on_message = lambda _c, _u, m: inbox.put((time.time_ns(), m.payload))
    client.on_connect = lambda c, *_: c.subscribe(msgs.request_topic("+"), qos=a.qos)
    _connect(client, a.broker, a.port)
    client.loop_start()

    a.ready_file.write_text(json.dumps(info))
    print(f"server ready: {json.dumps(info)}", flush=True)
    served = 0
    log = open(a.log, "a")
    if log.tell() == 0:
        log.write("repetition,endpoint,request_id,t_server_received\n")
    while not stop.is_set():
        try:
            t_recv, payload = inbox.get(timeout=0.2)
        except queue.Empty:
            continue
        t_start = time.time_ns()
        header, jpeg = msgs.unpack_request(payload)
        log.write(f"{header['rep']},{header['endpoint']},{header['id']},{t_recv}\n")
        log.flush()
        cls = mnet.classify(model, jpeg, a.resolution)
        t_done = time.time_ns()
        answer = {
            "id": header["id"], "class": cls, "t_server_received": t_recv,
            "t_server_start": t_start, "t_server_done": t_done, "t_server_sent": time.time_ns(),
        }
        client.publish(msgs.response_topic(header["endpoint"]), json.dumps(answer, separators=(",", ":")), qos=a.qos)
        served += 1
    client.loop_stop()
    client.disconnect()
    log.close()
    print(f"server stopped after {served} requests", flush=True)
    return 0


def _connect(client: mqtt.Client, host: str, port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.connect(host, port, keepalive=60)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _warmup_jpeg(resolution: int) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (resolution, resolution), (120, 80, 40)).save(buf, format="JPEG")
    return buf.getvalue()


if __name__ == "__main__":
    sys.exit(main())
