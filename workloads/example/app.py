#!/usr/bin/env python3
"""A bring-your-own workload in one file, to copy: `app.py server` answers
every request with its length; `app.py endpoint` sends random payloads at the
configured rate and writes one record per request. It uses only the
contract (docs/workloads.md): CONTINUUM_* environment variables in, a CSV of
records out, with the message framing (4-byte length, JSON header, payload)
that lets continuum's results stage read it. Nothing of continuum is imported.

Everything here is what your own app must do; the 'work' it does
(`EXAMPLE_WORK_MS` of busy CPU per request, default 5) is where yours would
run its model."""

import csv
import json
import os
import random
import signal
import struct
import sys
import threading
import time

import paho.mqtt.client as mqtt

FIELDS = ["repetition", "endpoint", "request_id", "seq", "phase", "status", "request_bytes", "response_bytes",
          "result", "t_drawn", "t_pre_start", "t_pre_end", "t_published", "t_server_received", "t_server_start",
          "t_server_done", "t_server_published", "t_received", "send_rate"]


def pack(header, payload):
    h = json.dumps(header).encode()
    return struct.pack("!I", len(h)) + h + payload


def unpack(message):
    (n,) = struct.unpack("!I", message[:4])
    return json.loads(message[4 : 4 + n]), message[4 + n :]


def connected_client(name):
    host, port = os.environ["CONTINUUM_BROKER"].rsplit(":", 1)
    client = mqtt.Client(client_id=name)
    for _ in range(150):  # the broker may still be starting
        try:
            client.connect(host, int(port))
            return client
        except OSError:
            time.sleep(0.2)
    sys.exit(f"cannot reach the broker at {host}:{port}")


def server():
    env = os.environ
    work_s = float(env.get("EXAMPLE_WORK_MS", "5")) / 1000
    log = open(env["CONTINUUM_SERVER_LOG"], "a", newline="")
    rows = csv.writer(log)
    if log.tell() == 0:
        rows.writerow(["repetition", "endpoint", "request_id", "request_bytes", "t_server_received", "t_server_start",
                       "t_server_done", "t_server_published"])

    def on_message(c, _u, m):
        t_received = time.time_ns()
        header, payload = unpack(m.payload)
        t_start = time.time_ns()
        while time.time_ns() - t_start < work_s * 1e9:
            pass  # your model goes here
        t_done = time.time_ns()
        answer = {"request_id": header["request_id"], "t_server_received": t_received, "t_server_start": t_start,
                  "t_server_done": t_done, "t_server_published": time.time_ns()}
        c.publish(f"continuum/{header['endpoint']}/response", pack(answer, b"%d bytes" % len(payload)))
        rows.writerow([header["repetition"], header["endpoint"], header["request_id"], len(m.payload), t_received,
                       t_start, t_done, answer["t_server_published"]])
        log.flush()

    def ready(*_):  # on the broker's SUBACK: a request published from now on reaches us
        with open(env["CONTINUUM_READY_FILE"], "w") as f:
            json.dump({"app": "example", "model": f"busy loop, {work_s * 1000:g} ms", "weights": "none"}, f)

    client = connected_client("example-server")
    client.on_message = on_message
    client.on_subscribe = ready
    client.subscribe("continuum/+/request")
    signal.signal(signal.SIGTERM, lambda *_: client.disconnect())
    client.loop_forever()


def endpoint():
    env = os.environ
    name, rep = env["CONTINUUM_ENDPOINT"], int(env.get("CONTINUUM_REPETITION", "1"))
    rate, timeout = float(env["CONTINUUM_RATE"]), float(env.get("CONTINUUM_TIMEOUT_S", "10"))
    warmup, duration = float(env.get("CONTINUUM_WARMUP_S", "0")), float(env["CONTINUUM_DURATION_S"])
    payload = json.loads(env.get("CONTINUUM_PAYLOAD") or "{}")
    lo, hi = int(payload.get("min_bytes", 1000)), int(payload.get("max_bytes", 1000))
    rnd = random.Random(int(env.get("CONTINUUM_SEED", "1")))
    out = open(env["CONTINUUM_RECORDS"], "a", newline="")
    records = csv.DictWriter(out, FIELDS)
    if out.tell() == 0:
        records.writeheader()
    pending: dict[str, dict] = {}
    lock, stop = threading.Lock(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def on_message(_c, _u, m):
        t = time.time_ns()
        header, result = unpack(m.payload)
        with lock:
            row = pending.pop(header["request_id"], None)
            if row:
                row.update({k: v for k, v in header.items() if k.startswith("t_server")})
                row.update(status="ok", result=result.decode(), response_bytes=len(m.payload), t_received=t)
                records.writerow(row)
                out.flush()

    def expire(everything=False):
        with lock:
            for rid in [r for r, row in pending.items() if everything or time.time_ns() - row["t_published"] > timeout * 1e9]:
                records.writerow({**pending.pop(rid), "status": "unanswered" if everything else "timeout"})
            out.flush()

    subscribed = threading.Event()
    client = connected_client(f"{name}-r{rep}")
    client.on_message = on_message
    client.on_subscribe = lambda *_: subscribed.set()
    client.subscribe(f"continuum/{name}/response")
    client.loop_start()
    if not subscribed.wait(30):  # the broker's SUBACK: an answer sent from now on reaches us
        raise SystemExit("the broker never confirmed the subscription to the answers")
    t0 = time.time_ns()
    seq = 0
    while not stop.is_set() and seq / rate < warmup + duration:
        stop.wait(max(0.0, (t0 + seq / rate * 1e9 - time.time_ns()) / 1e9))
        t_drawn = time.time_ns()
        data = rnd.randbytes(rnd.randint(lo, hi))
        rid = f"{name}-{rep}-{seq}"
        row = {"repetition": rep, "endpoint": name, "request_id": rid, "seq": seq, "status": "timeout",
               "phase": "warmup" if seq / rate < warmup else "measure", "t_drawn": t_drawn, "t_pre_start": t_drawn,
               "t_pre_end": time.time_ns(), "send_rate": rate}
        with lock:
            row["t_published"] = time.time_ns()
            message = pack({"request_id": rid, "endpoint": name, "repetition": rep}, data)
            row["request_bytes"] = len(message)
            pending[rid] = row
        client.publish(f"continuum/{name}/request", message)
        seq += 1
        expire()
    while pending and not stop.is_set():
        expire()
        stop.wait(0.05)
    expire(everything=True)
    client.disconnect()  # first: it wakes paho's network thread, which loop_stop would otherwise wait out (up to 1 s)
    client.loop_stop()


if __name__ == "__main__":
    {"server": server, "endpoint": endpoint}[sys.argv[1]]()
