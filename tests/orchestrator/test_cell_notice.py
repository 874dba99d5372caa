"""Tutti's edge agent follows MQTT framing over TCP segments: one notice per
PUBLISH, when its last byte arrives, however the bytes are cut, never for
retransmitted bytes."""

from __future__ import annotations

import struct

from continuum.cell.notice import Stream


def publish(body: int, topic: bytes = b"continuum/endpoint0/request") -> bytes:
    """An MQTT PUBLISH (QoS 0): header, remaining length, topic, then payload up to `body` bytes in all."""
    body = max(body, len(topic) + 2)
    n, length = body, b""
    while True:
        b, n = n & 0x7F, n >> 7
        length += struct.pack("B", b | (0x80 if n else 0))
        if not n:
            break
    return b"\x30" + length + len(topic).to_bytes(2, "big") + topic + b"x" * (body - len(topic) - 2)


def test_one_notice_per_publish_at_its_last_byte_however_segmented():
    data = publish(200_000) + b"\xc0\x00" + publish(10) + publish(300)  # PINGREQ between: not a request
    first_end = len(publish(200_000))
    for cut in (1, 2, 3, 1448, 65_000):
        s, seq, ends, at = Stream(1000), 1000, 0, []
        for i in range(0, len(data), cut):
            n = s.feed(seq, data[i:i + cut])
            ends += n
            at += [i + cut] * n
            seq += len(data[i:i + cut])
        assert ends == 3, cut
        assert first_end <= at[0] < first_end + cut, cut  # the segment holding the first request's last byte


def test_retransmissions_do_not_count_and_a_gap_resyncs_on_the_next_publish():
    a, b = publish(3000), publish(500)
    s = Stream(0)
    assert s.feed(0, a[:1448]) == 0
    assert s.feed(0, a[:1448]) == 0  # retransmitted
    assert s.feed(2896, a[2896:]) == 0  # bytes 1448..2896 missed: out of sync, that request is lost to it
    assert s.feed(len(a), b) == 1  # a segment that starts with a PUBLISH header: back in sync
    s = Stream(0)
    s.feed(0, a[:100])
    tail = a[200:] + b  # a gap, then the rest of one request and a whole next one in one segment
    assert s.feed(200, tail) == 1  # found where the next PUBLISH starts inside the segment
