"""The wire format shared by every workload's two sides: a request is a 4-byte
header length, a JSON header (ids and timestamps) and the opaque payload; a
response is JSON. All timestamps are time.time_ns() on one host clock (the
nodes are namespaces of one machine), so one-way latencies are exact."""

from __future__ import annotations

import json
import struct


def request_topic(endpoint: str) -> str:
    return f"continuum/{endpoint}/request"


def response_topic(endpoint: str) -> str:
    return f"continuum/{endpoint}/response"


def pack_request(header: dict, payload: bytes) -> bytes:
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("!I", len(h)) + h + payload


def unpack_request(message: bytes) -> tuple[dict, bytes]:
    (n,) = struct.unpack("!I", message[:4])
    return json.loads(message[4 : 4 + n]), message[4 + n :]
