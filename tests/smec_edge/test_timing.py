"""SMEC's clock-free network estimate, exact under any clock offset: two
clocks, delays chosen per message, and the estimate must equal the
request's uplink plus its response's downlink."""

from __future__ import annotations

import random

import pytest

from smec_edge.timing import ACK, PROBE, ClientClock, EdgeClock, Stamp

MS = 1_000_000


@pytest.mark.parametrize("offset_ns", [0, 5 * 10**12, -(3 * 10**9) + 12345])
def test_estimate_is_uplink_plus_response_downlink_whatever_the_offset(offset_ns):
    rng = random.Random(offset_ns)
    client, edge = ClientClock(), EdgeClock()
    t = 10**12  # true time; the client reads t + offset, the edge reads t
    errors = []
    for k in range(200):
        if k % 10 == 0:  # a probe about every second (requests at 10 per second)
            probe = client.probe()
            assert len(probe) == PROBE.size == 8
            t_probe_arrives = t + rng.randint(1, 20) * MS
            ack = edge.probe(probe, t_probe_arrives)
            assert len(ack) == ACK.size == 12
            client.ack(ack, t_probe_arrives + rng.randint(2, 8) * MS + offset_ns)
        t += 100 * MS
        stamp = client.request_sent(t + offset_ns)
        up = rng.randint(5, 300) * MS
        est = edge.network_ns(stamp, t + up)
        down = rng.randint(3, 60) * MS
        t_resp = t + up + rng.randint(1, 30) * MS
        client.response_arrived(edge.response_sent(t_resp), t_resp + down + offset_ns)
        if est is not None and k > 20:
            errors.append(abs(est - (up + down)))
    # the compensation is learned from the previous response: the estimate is
    # exact up to how much the response downlinks differ from one to the next
    assert len(errors) > 150
    assert max(errors) <= 60 * MS


def test_with_steady_delays_the_estimate_is_exact():
    client, edge = ClientClock(), EdgeClock()
    offset, up, ack_down, resp_down = 777 * MS, 40 * MS, 4 * MS, 9 * MS
    t = 0
    client.ack(edge.probe(client.probe(), t + 2 * MS), t + 2 * MS + ack_down + offset)
    for _ in range(3):
        t += 100 * MS
        est = edge.network_ns(client.request_sent(t + offset), t + up)
        client.response_arrived(edge.response_sent(t + up + 5 * MS), t + up + 5 * MS + resp_down + offset)
        client.ack(edge.probe(client.probe(), t + 50 * MS), t + 50 * MS + ack_down + offset)
    assert est == up + resp_down


def test_lost_probes_and_acks_leave_the_estimator_working():
    client, edge = ClientClock(), EdgeClock()
    assert client.request_sent(0) is None  # nothing to refer to yet
    assert edge.network_ns(None, 0) is None
    edge.probe(client.probe(), 1 * MS)  # its ACK is lost
    ack2 = edge.probe(client.probe(), 1000 * MS)
    client.ack(ack2, 1003 * MS)
    stamp = client.request_sent(1100 * MS)
    assert stamp == Stamp(2, 97 * MS)
    assert edge.network_ns(stamp, 1130 * MS) == 130 * MS - 97 * MS
    assert edge.network_ns(Stamp(99, 0), 1130 * MS) is None  # an id the edge never sent
