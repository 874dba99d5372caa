"""Network latency without synchronised clocks, as SMEC estimates it.

A client daemon on each endpoint sends a probe about once a second (4-byte
compensation, 4-byte probe id); the edge answers each with a 12-byte ACK
(the probe id and the ACK's send time on the edge's clock) over the
downlink. When the app sends a request, the client stamps it with the id of
the last ACK it received and the time since (t_ack_req, client clock). The
edge knows when it sent that ACK, so T_ack_req (edge clock) is the time from
that ACK's departure to the request's arrival, and

    T_ack_req - t_ack_req = d_up(request) + d_down(ACK)

whatever the clocks' offset. A response is larger than an ACK, so its
downlink takes longer: the edge puts T_ack_resp (time since it sent its
last ACK) in the response, the client measures t_ack_resp (time since it
received that ACK) and t_comp = t_ack_resp - T_ack_resp = d_down(response)
- d_down(ACK), which it sends back in its next probe. The estimate of the
request's whole network time is then

    t_network = T_ack_req - t_ack_req + t_comp = d_up(request) + d_down(response).

Ids survive loss: an ACK the client never got is never referred to, and the
edge keeps the send times of its recent ACKs."""

from __future__ import annotations

import struct
from collections import OrderedDict
from dataclasses import dataclass

PROBE = struct.Struct("!iI")  # compensation (us, signed), probe id
ACK = struct.Struct("!IQ")  # probe id, ACK send time (edge clock, ns)
KEEP_ACKS = 64  # ACK send times the edge remembers per client (a minute of probes)


def probe_bytes(comp_us: int, probe_id: int) -> bytes:
    return PROBE.pack(max(-(2**31), min(2**31 - 1, comp_us)), probe_id & 0xFFFFFFFF)


def ack_bytes(probe_id: int, sent_ns: int) -> bytes:
    return ACK.pack(probe_id & 0xFFFFFFFF, sent_ns)


@dataclass(frozen=True)
class Stamp:
    """What request_sent adds to a request (and response_sent to a response)."""

    ack_id: int
    since_ack_ns: int  # t_ack_req (client) or T_ack_resp (edge)


class ClientClock:
    """The client side's view: the last ACK received, and the compensation
    learned from the last response, on the client's own clock."""

    def __init__(self) -> None:
        self.next_probe_id = 1
        self.last_ack: tuple[int, int] | None = None  # (id, received at, client ns)
        self.acks: OrderedDict[int, int] = OrderedDict()  # id -> received at
        self.comp_ns = 0

    def probe(self) -> bytes:
        """The next probe to send: it carries the current compensation."""
        pid = self.next_probe_id
        self.next_probe_id += 1
        return probe_bytes(round(self.comp_ns / 1000), pid)

    def ack(self, data: bytes, now_ns: int) -> None:
        """An ACK arrived (a late or repeated one is still a valid reference)."""
        pid, _sent = ACK.unpack(data)
        self.acks[pid] = now_ns
        while len(self.acks) > KEEP_ACKS:
            self.acks.popitem(last=False)
        if self.last_ack is None or pid >= self.last_ack[0]:
            self.last_ack = (pid, now_ns)

    def request_sent(self, now_ns: int) -> Stamp | None:
        """t_ack_req for a request leaving now (None before the first ACK)."""
        if self.last_ack is None:
            return None
        return Stamp(self.last_ack[0], now_ns - self.last_ack[1])

    def response_arrived(self, stamp: Stamp | None, now_ns: int) -> int | None:
        """Learn t_comp from a response stamped by the edge; returns it (ns)."""
        if stamp is None or stamp.ack_id not in self.acks:
            return None
        t_ack_resp = now_ns - self.acks[stamp.ack_id]
        self.comp_ns = t_ack_resp - stamp.since_ack_ns
        return self.comp_ns


class EdgeClock:
    """The edge's side for one client: when it sent each ACK, and the
    client's latest compensation, on the edge's clock."""

    def __init__(self) -> None:
        self.sent: OrderedDict[int, int] = OrderedDict()  # ack id -> sent at (edge ns)
        self.comp_ns = 0

    def probe(self, data: bytes, now_ns: int) -> bytes:
        """A probe arrived: remember its compensation; the ACK to send back now."""
        comp_us, pid = PROBE.unpack(data)
        self.comp_ns = comp_us * 1000
        self.sent[pid] = now_ns
        while len(self.sent) > KEEP_ACKS:
            self.sent.popitem(last=False)
        return ack_bytes(pid, now_ns)

    def network_ns(self, stamp: Stamp | None, arrived_ns: int) -> int | None:
        """t_network of a request stamped `stamp` that arrived now (None:
        no stamp, or it refers to an ACK this edge no longer knows)."""
        if stamp is None or stamp.ack_id not in self.sent:
            return None
        return arrived_ns - self.sent[stamp.ack_id] - stamp.since_ack_ns + self.comp_ns

    def response_sent(self, now_ns: int) -> Stamp | None:
        """T_ack_resp for a response leaving now: time since the last ACK sent."""
        if not self.sent:
            return None
        pid = next(reversed(self.sent))
        return Stamp(pid, now_ns - self.sent[pid])
