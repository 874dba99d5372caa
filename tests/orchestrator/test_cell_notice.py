"""Tutti's edge agent follows MQTT framing over TCP segments: one notice per
new PUBLISH, however the bytes are cut, never for retransmitted bytes."""

from __future__ import annotations

import struct

from continuum.cell.notice import Stream


def publish(body: int) -> bytes:
    """An MQTT PUBLISH header with a `body`-byte remaining length, then the body."""
    n, length = body, b""
    while True:
        b, n = n & 0x7F, n >> 7
        length += struct.pack("B", b | (0x80 if n else 0))
        if not n:
            break
    return b"\x30" + length + b"x" * body


def test_one_start_per_publish_however_segmented():
    data = publish(200_000) + b"\xc0\x00" + publish(10) + publish(300)  # PINGREQ between: not a request
    for cut in (1, 2, 3, 1448, 65_000):
        s, seq, starts = Stream(1000), 1000, 0
        for i in range(0, len(data), cut):
            starts += s.feed(seq, data[i:i + cut])
            seq += len(data[i:i + cut])
        assert starts == 3, cut


def test_retransmissions_do_not_count_and_a_gap_resyncs_on_the_next_publish():
    a, b = publish(3000), publish(500)
    s = Stream(0)
    assert s.feed(0, a[:1448]) == 1
    assert s.feed(0, a[:1448]) == 0  # retransmitted
    assert s.feed(2896, a[2896:]) == 0  # bytes 1448..2896 missed: out of sync
    assert s.feed(len(a), b) == 1  # a segment that starts with a PUBLISH header: back in sync
