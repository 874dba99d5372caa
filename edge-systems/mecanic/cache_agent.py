"""MECaNIC's response caching (docs/mecanic.md, "Response caching"), for the
workloads' MQTT requests: the NIC holds the response to a request it has
seen answered, and answers the same request again itself, so that it never
reaches the host's server.

It runs in the node's network namespace but outside the node's cgroup (the
NIC's own processor, not the host's CPUs), and takes the node's MQTT
connections from outside (the node's nat table redirects them here); every
packet goes on to the node's broker byte for byte, except a PUBLISH of a
request whose answer it holds: that one it answers with a PUBLISH of the
response on the client's own connection (and a PUBACK at QoS 1), with the
NIC's times in the server's fields and `nic_cache: "hit"` in the header.

Answers may also be installed before the run (--entry PREFIX=FILE: a request
whose payload starts with PREFIX is answered with FILE's bytes, from the first
one on: the paper's pre-fetched content). Otherwise, what makes two requests
the same: their payload (the app's input; the
workloads' wire format, docs/workloads.md: a 4-byte header length, a JSON
header, the payload), by SHA-256. A response is learned from the server's
answer to the first such request (the host stores it, in the paper's words),
unless it is empty or an early drop. Least recently used answers go first
when the cache is full.

With --origin (another node's broker, whose server serves the same app), a
miss is not sent on to the host: the NIC fetches the answer from the origin,
answers the client with it and keeps it (outcome fetched). The network between
the node and the origin is not emulated (only the endpoints' packets cross the
emulator): --origin-delay-ms holds each fetch that long before it leaves and
again when its answer returns, the core network's one-way delay, modelled.

One line per decision to --log (CSV): t_ns, endpoint, request_id, outcome
(hit, miss: sent on to the host, stored: an answer learned; installed: an
entry's), key (its first 16 hex digits, or the entry's prefix), bytes."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import hashlib
import json
import os
import signal
import struct
import sys
import time
from collections import OrderedDict
from pathlib import Path

from mecanic import mqtt

REQUEST, RESPONSE = "/request", "/response"  # the workloads' topics: continuum/ENDPOINT/request|response


def unpack(message: bytes) -> tuple[dict, bytes]:
    (n,) = struct.unpack("!I", message[:4])
    return json.loads(message[4:4 + n]), message[4 + n:]


def pack(header: dict, payload: bytes) -> bytes:
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("!I", len(h)) + h + payload


class Origin:
    """One MQTT connection to the origin's broker: requests published there, answers matched by request id."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.w: asyncio.StreamWriter | None = None
        self.waiting: dict[str, asyncio.Future] = {}
        self.delay_s = delay_s

    async def open(self, host: str, port: int) -> None:
        r, self.w = await asyncio.open_connection(host, port)
        self.w.write(mqtt.connect(f"mecanic-nic-{os.getpid()}"))
        if (await mqtt.read_packet(r))[0] >> 4 != mqtt.CONNACK:
            raise ConnectionError(f"the origin's broker at {host}:{port} did not accept the connection")
        self.w.write(mqtt.subscribe(1, "continuum/+" + RESPONSE))
        if (await mqtt.read_packet(r))[0] >> 4 != mqtt.SUBACK:
            raise ConnectionError(f"the origin's broker at {host}:{port} did not acknowledge the subscription")
        asyncio.create_task(self._answers(r))

    async def _answers(self, r: asyncio.StreamReader) -> None:
        while True:
            p = mqtt.parse_publish(await mqtt.read_packet(r))
            if p is not None and p.topic.endswith(RESPONSE):
                header, result = unpack(p.payload)
                f = self.waiting.pop(str(header.get("request_id")), None)
                if f is not None and not f.done():
                    f.set_result((header, result))

    async def fetch(self, topic: str, message: bytes, request_id: str) -> tuple[dict, bytes]:
        assert self.w is not None
        f: asyncio.Future = asyncio.get_running_loop().create_future()
        self.waiting[request_id] = f
        await asyncio.sleep(self.delay_s)  # the way there (modelled)
        self.w.write(mqtt.publish(topic, message))
        answer = await f
        await asyncio.sleep(self.delay_s)  # and back
        return answer


class Cache:
    """Answers by request key, least recently used out first, at most `capacity` bytes."""

    def __init__(self, capacity: int, log, entries: list[tuple[bytes, bytes]] | None = None):
        self.capacity, self.size, self.log = capacity, 0, log
        self.answers: OrderedDict[bytes, bytes] = OrderedDict()
        self.waiting: dict[str, bytes] = {}  # request id -> its key, until the server answers
        self.entries = entries or []  # (request prefix, answer), installed: never evicted
        self.capacity -= sum(len(a) for _, a in self.entries)

    def installed(self, payload: bytes) -> tuple[bytes, bytes] | None:
        """The installed entry (its prefix, its answer) whose prefix the payload starts with."""
        return next(((p, a) for p, a in self.entries if payload.startswith(p)), None)

    def note(self, endpoint: str, request_id: str, outcome: str, key: bytes, size: int) -> None:
        self.log.writerow([time.time_ns(), endpoint, request_id, outcome, key.hex()[:16], size])

    def lookup(self, key: bytes) -> bytes | None:
        if key in self.answers:
            self.answers.move_to_end(key)
            return self.answers[key]
        return None

    def store(self, key: bytes, answer: bytes) -> bool:
        if len(answer) > self.capacity or key in self.answers:
            return False
        self.answers[key] = answer
        self.size += len(answer)
        while self.size > self.capacity:
            _, old = self.answers.popitem(last=False)
            self.size -= len(old)
        return True


async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter, broker: tuple[str, int], cache: Cache,
                endpoints: frozenset[str], origin: Origin | None) -> None:
    try:
        up_r, up_w = await asyncio.open_connection(*broker)
    except OSError:
        client_w.close()
        return

    async def to_broker() -> None:
        while True:
            packet = await mqtt.read_packet(client_r)
            p = mqtt.parse_publish(packet)
            if p is not None and p.topic.endswith(REQUEST) and (not endpoints or p.topic.split("/")[-2] in endpoints):
                t_received = time.time_ns()
                header, payload = unpack(p.payload)
                entry = cache.installed(payload)
                key = entry[0] if entry else hashlib.sha256(payload).digest()
                answer = entry[1] if entry else cache.lookup(key)
                rid, endpoint = str(header.get("request_id")), str(header.get("endpoint"))
                if answer is not None:
                    t = time.time_ns()
                    reply = {"request_id": header["request_id"], "t_server_received": t_received, "t_server_start": t,
                             "t_server_done": t, "t_server_published": time.time_ns(), "nic_cache": "hit"}
                    client_w.write(mqtt.publish(p.topic[:-len(REQUEST)] + RESPONSE, pack(reply, answer)))
                    if p.qos == 1 and p.packet_id is not None:
                        client_w.write(mqtt.puback(p.packet_id))
                    cache.note(endpoint, rid, "hit", key, len(answer))
                    continue
                if origin is not None:  # fetched by the NIC from the origin, answered by the NIC: the host never sees it
                    asyncio.create_task(fetch(p, header, key, endpoint, rid, t_received))
                    if p.qos == 1 and p.packet_id is not None:
                        client_w.write(mqtt.puback(p.packet_id))
                    continue
                cache.waiting[rid] = key
                cache.note(endpoint, rid, "miss", key, len(payload))
            up_w.write(packet)
            await up_w.drain()

    async def fetch(p: mqtt.Publish, header: dict, key: bytes, endpoint: str, rid: str, t_received: int) -> None:
        assert origin is not None
        answer_header, result = await origin.fetch(p.topic, p.payload, rid)
        if result and not answer_header.get("smec_dropped"):
            cache.store(key, result)
        t = time.time_ns()
        reply = {"request_id": header["request_id"], "t_server_received": t_received, "t_server_start": t, "t_server_done": t,
                 "t_server_published": time.time_ns(), "nic_cache": "fetched"}
        client_w.write(mqtt.publish(p.topic[:-len(REQUEST)] + RESPONSE, pack(reply, result)))
        cache.note(endpoint, rid, "fetched", key, len(result))

    async def to_client() -> None:
        while True:
            packet = await mqtt.read_packet(up_r)
            p = mqtt.parse_publish(packet)
            if p is not None and p.topic.endswith(RESPONSE):
                header, result = unpack(p.payload)
                rid = str(header.get("request_id"))
                key = cache.waiting.pop(rid, None)
                if key is not None and result and not header.get("smec_dropped") and cache.store(key, result):
                    cache.note(p.topic.split("/")[-2], rid, "stored", key, len(result))
            client_w.write(packet)
            await client_w.drain()

    tasks = [asyncio.create_task(to_broker()), asyncio.create_task(to_client())]
    with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, ValueError):
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for t in tasks:
        t.cancel()
    for w in (client_w, up_w):
        w.close()


async def main_async(args: argparse.Namespace) -> None:
    host, _, port = args.broker.rpartition(":")
    with open(args.log, "a", newline="", buffering=1) as f:
        log = csv.writer(f)
        if f.tell() == 0:
            log.writerow(["t_ns", "endpoint", "request_id", "outcome", "key", "bytes"])
        entries = []
        for e in args.entry:
            prefix, _, path = e.partition("=")
            entries.append((bytes.fromhex(prefix), Path(path).read_bytes()))
        cache = Cache(int(args.capacity_mb * 1e6), log, entries)
        for prefix, answer in entries:
            cache.note("-", "-", "installed", prefix, len(answer))
        endpoints = frozenset(e for e in args.endpoints.split(",") if e)
        origin = None
        if args.origin:
            origin = Origin(args.origin_delay_ms / 1000)
            o_host, _, o_port = args.origin.rpartition(":")
            await origin.open(o_host, int(o_port))
        server = await asyncio.start_server(lambda r, w: serve(r, w, (host, int(port)), cache, endpoints, origin), "0.0.0.0", args.port)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        tmp = Path(str(args.ready) + ".tmp")
        tmp.write_text(str(os.getpid()))
        tmp.replace(args.ready)
        print(f"cache agent: listening on :{args.port}, the host's broker at {args.broker}, {args.capacity_mb:g} MB", flush=True)
        async with server:
            await stop.wait()
        print(f"cache agent: {len(cache.answers)} answers held, {cache.size} bytes", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True, help="where the node's nat table sends its MQTT connections")
    p.add_argument("--broker", default="127.0.0.1:1883", help="the node's broker")
    p.add_argument("--capacity-mb", type=float, default=64.0)
    p.add_argument("--endpoints", default="", help="only these endpoints' requests (comma-separated; default: everyone's)")
    p.add_argument("--origin", default="", help="HOST:PORT: another node's broker, where a miss is fetched from")
    p.add_argument("--origin-delay-ms", type=float, default=0.0, help="the core network's one-way delay to the origin (modelled)")
    p.add_argument("--entry", action="append", default=[], help="PREFIXHEX=FILE: an answer installed before the run")
    p.add_argument("--log", required=True)
    p.add_argument("--ready", required=True, help="written once listening")
    args = p.parse_args(argv)
    asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
