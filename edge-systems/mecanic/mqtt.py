"""Just enough of MQTT 3.1.1's framing (OASIS, section 2) for a NIC that
looks into PUBLISH packets on their way and answers some itself: a packet is
read whole (fixed header, remaining length, body) and passed on byte for
byte, or built anew. Nothing else of the protocol is interpreted."""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass

CONNECT, CONNACK, PUBLISH, PUBACK, SUBSCRIBE, SUBACK = 1, 2, 3, 4, 8, 9


def remaining_length(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n % 128, n // 128
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


async def read_packet(r: asyncio.StreamReader) -> bytes:
    """One whole packet (its fixed header included); IncompleteReadError at the end of the stream."""
    first = await r.readexactly(1)
    length, shift, raw = 0, 0, bytearray()
    while True:
        b = (await r.readexactly(1))[0]
        raw.append(b)
        length |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
        if len(raw) == 4:
            raise ValueError("an MQTT remaining length of more than 4 bytes")
    return first + bytes(raw) + await r.readexactly(length)


@dataclass(frozen=True)
class Publish:
    topic: str
    qos: int
    packet_id: int | None
    payload: bytes


def parse_publish(packet: bytes) -> Publish | None:
    """The PUBLISH in a whole packet (None: another packet type)."""
    if packet[0] >> 4 != PUBLISH:
        return None
    i = 1
    while packet[i] & 0x80:
        i += 1
    i += 1
    (n,) = struct.unpack("!H", packet[i:i + 2])
    topic = packet[i + 2:i + 2 + n].decode()
    qos = (packet[0] >> 1) & 3
    j = i + 2 + n
    pid = None
    if qos:
        (pid,) = struct.unpack("!H", packet[j:j + 2])
        j += 2
    return Publish(topic, qos, pid, packet[j:])


def publish(topic: str, payload: bytes) -> bytes:
    """A QoS 0 PUBLISH."""
    t = topic.encode()
    body = struct.pack("!H", len(t)) + t + payload
    return bytes([PUBLISH << 4]) + remaining_length(len(body)) + body


def puback(packet_id: int) -> bytes:
    return bytes([PUBACK << 4, 2]) + struct.pack("!H", packet_id)


def connect(client_id: str) -> bytes:
    """CONNECT, MQTT 3.1.1, a clean session, no keep-alive (the connection lives as long as the run)."""
    cid = client_id.encode()
    body = struct.pack("!H", 4) + b"MQTT" + bytes([4, 0x02]) + struct.pack("!H", 0) + struct.pack("!H", len(cid)) + cid
    return bytes([CONNECT << 4]) + remaining_length(len(body)) + body


def subscribe(packet_id: int, topic: str) -> bytes:
    """SUBSCRIBE to one topic filter at QoS 0."""
    t = topic.encode()
    body = struct.pack("!H", packet_id) + struct.pack("!H", len(t)) + t + b"\x00"
    return bytes([(SUBSCRIBE << 4) | 0x02]) + remaining_length(len(body)) + body
