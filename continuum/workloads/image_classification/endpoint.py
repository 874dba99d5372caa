"""Endpoint side of W1: an open-loop client. Every 1/rate seconds it takes the
next image of its data bank, pre-processes it (resize to the model's input,
JPEG encode: this is M3), publishes it, and records the answer's timestamps.

The data bank is synthetic (no data sets can be downloaded here): seeded
640x480 images mixing smooth gradients and noise, so JPEG sizes spread over
roughly 10-100 KB like the thesis' images. One CSV row per request is written
(and flushed) as soon as its answer arrives or it times out, so the
orchestrator can show live progress."""

from __future__ import annotations

import argparse
import csv
import io
import json
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import paho.mqtt.client as mqtt
from PIL import Image

from continuum.workloads import mqtt_messages as msgs
from continuum.workloads.image_classification.server import _connect

FIELDS = [
    "repetition", "endpoint", "request_id", "phase", "request_bytes", "response_bytes", "class",
    "t_created", "t_sent", "t_server_received", "t_server_start", "t_server_done", "t_server_sent", "t_received",
    "timeout",
]


def data_bank(seed: int, size: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    bank = []
    yy, xx = np.mgrid[0:480, 0:640]
    for _ in range(size):
        base = np.stack([(xx * rng.uniform(0.1, 0.5) + yy * rng.uniform(0.1, 0.5) + rng.uniform(0, 255)) % 256 for _ in range(3)], -1)
        noise = rng.normal(0, rng.uniform(0, 60), (480, 640, 3))
        bank.append(np.clip(base + noise, 0, 255).astype(np.uint8))
    return bank


def preprocess(img: np.ndarray, resolution: int, quality: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).resize((resolution, resolution)).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--name", required=True)
    ap.add_argument("--broker", required=True)
    ap.add_argument("--port", type=int, default=1883)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--warmup", type=float, default=0.0)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repetition", type=int, default=1)
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--jpeg-quality", type=int, default=90)
    ap.add_argument("--bank-size", type=int, default=16)
    ap.add_argument("--qos", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)

    bank = data_bank(a.seed, a.bank_size)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    lock = threading.Lock()
    pending: dict[int, dict] = {}
    out = open(a.out, "a", newline="")
    writer = csv.DictWriter(out, FIELDS)
    if out.tell() == 0:
        writer.writeheader()

    def finish(row: dict) -> None:
        writer.writerow(row)
        out.flush()

    def on_message(_c, _u, m) -> None:
        t = time.time_ns()
        answer = json.loads(m.payload)
        with lock:
            row = pending.pop(answer["id"], None)
            if row is None:
                return  # answered after its timeout: already written as a timeout
            row.update({k: answer[k] for k in ("t_server_received", "t_server_start", "t_server_done", "t_server_sent")})
            row.update({"class": answer["class"], "response_bytes": len(m.payload), "t_received": t, "timeout": 0})
            finish(row)

    client = mqtt.Client(client_id=f"{a.name}-r{a.repetition}", clean_session=True)
    client.on_message = on_message
    subscribed = threading.Event()
    client.on_subscribe = lambda *_: subscribed.set()
    client.on_connect = lambda c, *_: c.subscribe(msgs.response_topic(a.name), qos=a.qos)
    _connect(client, a.broker, a.port)
    client.loop_start()
    subscribed.wait(20)

    t0 = time.time_ns()
    interval = 1e9 / a.rate
    end = t0 + (a.warmup + a.duration) * 1e9
    k = 0
    while not stop.is_set():
        due = t0 + k * interval
        if due >= end:
            break
        delay = (due - time.time_ns()) / 1e9
        if delay > 0 and stop.wait(delay):
            break
        t_created = time.time_ns()
        jpeg = preprocess(bank[k % len(bank)], a.resolution, a.jpeg_quality)
        header = {"id": k, "endpoint": a.name, "rep": a.repetition}
        row = {
            "repetition": a.repetition, "endpoint": a.name, "request_id": k,
            "phase": "warmup" if t_created < t0 + a.warmup * 1e9 else "measure",
            "request_bytes": 0, "t_created": t_created, "timeout": 1,
        }
        message = msgs.pack_request(header, jpeg)
        row["request_bytes"] = len(message)
        with lock:
            pending[k] = row
            row["t_sent"] = time.time_ns()
        client.publish(msgs.request_topic(a.name), message, qos=a.qos)
        k += 1
        _expire(pending, lock, finish, a.timeout)

    # Let the last answers arrive (each request gets its full timeout).
    while pending and not stop.is_set():
        _expire(pending, lock, finish, a.timeout)
        stop.wait(0.05)
    with lock:
        for row in list(pending.values()):
            finish(row)  # stopped early: still unanswered, recorded as timeouts
        pending.clear()
    client.loop_stop()
    client.disconnect()
    out.close()
    return 0


def _expire(pending: dict, lock: threading.Lock, finish, timeout_s: float) -> None:
    now = time.time_ns()
    with lock:
        for rid in [r for r, row in pending.items() if now - row["t_sent"] > timeout_s * 1e9]:
            finish(pending.pop(rid))


if __name__ == "__main__":
    sys.exit(main())
