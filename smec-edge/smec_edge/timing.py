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
- d_down(ACK), which it sends back in its next probe (see ClientClock for
how the reference ACK and the compensation are chosen). The estimate of the
request's whole network time is then

    t_network = T_ack_req - t_ack_req + t_comp = d_up(request) + d_down(response).

Ids survive loss: an ACK the client never got is never referred to, and the
edge keeps the send times of its recent ACKs."""

from __future__ import annotations

import statistics
import struct
from collections import OrderedDict, deque
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


COMP_HISTORY = 10  # responses whose compensation the client's median is taken over
REFERENCE_ACKS = 16  # recent ACKs the client picks its reference from


class ClientClock:
    """The client side's view, on its own clock.

    Two refinements of the bare method, both from what an ACK carries (its
    send time on the edge's clock): the reference for a request is, of the
    last 16 ACKs, the one whose downlink was quickest (least receive time
    minus send time: the clocks' offset is the same for all), since an ACK
    caught behind a downlink burst would add that burst to every estimate
    until the next probe; and the compensation is measured against that
    same quickest ACK and sent as the median of the last 10 responses', so
    one response delayed by a burst does not skew the next second's
    estimates either."""

    def __init__(self) -> None:
        self.next_probe_id = 1
        self.acks: OrderedDict[int, tuple[int, int]] = OrderedDict()  # id -> (received at, client ns; sent at, edge ns)
        self.comps: deque[int] = deque(maxlen=COMP_HISTORY)
        self.comp_ns = 0

    def probe(self) -> bytes:
        """The next probe to send: it carries the current compensation."""
        pid = self.next_probe_id
        self.next_probe_id += 1
        return probe_bytes(round(self.comp_ns / 1000), pid)

    def ack(self, data: bytes, now_ns: int) -> None:
        """An ACK arrived (a late or repeated one is still a valid reference)."""
        pid, sent = ACK.unpack(data)
        self.acks[pid] = (now_ns, sent)
        while len(self.acks) > REFERENCE_ACKS:
            self.acks.popitem(last=False)

    def _quickest(self) -> tuple[int, int, int] | None:
        """(id, received at, receive - send) of the recent ACK with the quickest downlink."""
        if not self.acks:
            return None
        pid, (recv, sent) = min(self.acks.items(), key=lambda kv: (kv[1][0] - kv[1][1], -kv[0]))
        return pid, recv, recv - sent

    def request_sent(self, now_ns: int) -> Stamp | None:
        """t_ack_req for a request leaving now (None before the first ACK)."""
        q = self._quickest()
        return None if q is None else Stamp(q[0], now_ns - q[1])

    def response_arrived(self, stamp: Stamp | None, now_ns: int) -> int | None:
        """Learn t_comp from a response stamped by the edge (T_ack_resp after
        its ACK `stamp.ack_id`); returns the compensation now in use (ns)."""
        q = self._quickest()
        if stamp is None or q is None or stamp.ack_id not in self.acks:
            return None
        sent = self.acks[stamp.ack_id][1]
        # (response's downlink + offset) - (quickest ACK's downlink + offset)
        self.comps.append((now_ns - sent - stamp.since_ack_ns) - q[2])
        self.comp_ns = int(statistics.median(self.comps))
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
