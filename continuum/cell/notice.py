"""Tutti's signal: the edge tells the RAN that a UE's request arrived.

Runs on the offload target (root: a raw socket). It follows each endpoint's
MQTT connection to the broker byte by byte and, when the last byte of a
PUBLISH (a request) arrives, sends one small UDP datagram to that UE's
address on the notice port: the edge server's "request arrived" (Tutti, as
../shared/design/SPEC-smec.md describes it). The datagram crosses the core
back to the ran namespace, where mahimahi-link takes it
(--cell-notice-port) and hands it to the Tutti scheduler as the request's
start. So the RAN learns a start late by the request's whole uplink time
plus the core delay both ways, which is Tutti's cost for uplink-heavy apps.

Each notice is logged (raw/notices.csv: t_ns, endpoint address) so the
results can compare it with the true send time."""

from __future__ import annotations

import argparse
import signal
import socket
import struct
import sys
import time

ETH_P_IP = 0x0800
MQTT_PUBLISH = 3


class Stream:
    """One TCP connection's MQTT framing: where the next control packet starts."""

    def __init__(self, seq: int) -> None:
        self.next_seq = seq
        self.remaining = 0  # body bytes of the current control packet still to come
        self.header = b""  # a fixed header split across segments
        self.publish = False  # the current control packet is a PUBLISH
        self.synced = True

    def feed(self, seq: int, data: bytes) -> int:
        """Consume a segment; returns how many PUBLISH packets end in it."""
        if seq != self.next_seq:
            if (seq - self.next_seq) % (1 << 32) > 1 << 31:
                return 0  # a retransmission of bytes already seen
            self.synced = False  # bytes were missed: wait for a segment that starts a packet
        self.next_seq = (seq + len(data)) % (1 << 32)
        if not self.synced:
            start = publish_start(data)
            if start is None:
                return 0
            data = data[start:]
            self.synced, self.remaining, self.header = True, 0, b""
        ends = 0
        i = 0
        while i < len(data):
            if self.remaining:
                take = min(self.remaining, len(data) - i)
                self.remaining -= take
                i += take
                ends += self.publish and not self.remaining
                continue
            self.header += data[i:i + 1]
            i += 1
            if len(self.header) >= 2 and not self.header[-1] & 0x80:  # the length's last byte
                length, shift = 0, 0
                for b in self.header[1:]:
                    length |= (b & 0x7F) << shift
                    shift += 7
                self.publish = self.header[0] >> 4 == MQTT_PUBLISH
                ends += self.publish and not length
                self.remaining, self.header = length, b""
            elif len(self.header) > 5:
                self.synced, self.header = False, b""  # not MQTT framing after all
                return ends
        return ends


def publish_start(data: bytes) -> int | None:
    """Where a PUBLISH plausibly starts in bytes seen after a gap: a PUBLISH
    type byte, a remaining length, then a 1-255 byte printable topic that
    fits in it (continuum's are continuum/NAME/request). None: not here."""
    for i in range(len(data)):
        if data[i] >> 4 != MQTT_PUBLISH:
            continue
        length, shift, j = 0, 0, i + 1
        while j < len(data) and j - i <= 4:
            length |= (data[j] & 0x7F) << shift
            shift += 7
            j += 1
            if not data[j - 1] & 0x80:
                break
        else:
            continue
        if j + 2 > len(data):
            continue
        topic_len = int.from_bytes(data[j:j + 2], "big")
        topic = data[j + 2:j + 2 + topic_len]
        if 0 < topic_len < 256 and topic_len + 2 <= length and len(topic) == topic_len and all(32 < c < 127 for c in topic):
            return i
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iface", required=True)
    ap.add_argument("--mqtt-port", type=int, required=True)
    ap.add_argument("--notice-port", type=int, required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    # Bulk uploads cross this interface too: a deep buffer, so a busy moment
    # loses no request's segments (a lost one costs that request its notice).
    rx.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE (root)
    rx.bind((a.iface, 0))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    streams: dict[tuple[bytes, int], Stream] = {}
    with open(a.log, "w", buffering=1) as log:
        log.write("t_ns,endpoint\n")
        while True:
            frame, addr = rx.recvfrom(65536)
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            ip = frame[14:]
            if len(ip) < 20 or ip[9] != 6:
                continue
            ihl = (ip[0] & 0x0F) * 4
            total = struct.unpack("!H", ip[2:4])[0]
            tcp = ip[ihl:total]
            if len(tcp) < 20:
                continue
            sport, dport, seq = struct.unpack("!HHI", tcp[:8])
            if dport != a.mqtt_port:
                continue
            flags = tcp[13]
            key = (ip[12:16], sport)
            if flags & 0x02:  # SYN: a new connection; its data starts at seq + 1
                streams[key] = Stream((seq + 1) % (1 << 32))
                continue
            payload = tcp[(tcp[12] >> 4) * 4:]
            stream = streams.get(key)
            if not payload or stream is None:
                continue
            t = time.time_ns()
            if stream.feed(seq, payload):
                src = socket.inet_ntoa(ip[12:16])
                tx.sendto(b"start", (src, a.notice_port))
                log.write(f"{t},{src}\n")


if __name__ == "__main__":
    raise SystemExit(main())
