"""SMEC's request-lifecycle calls (SPEC-smec, "Edge manager API"), for any
workload: the client side in the endpoint, the server side on the edge.

    client = Client("10.202.0.2", 47100)      # starts the endpoint's timing daemon
    header.update(client.request_sent())      # stamps t_ack_req into the request
    ...
    client.response_arrived(response_header)  # learns the response compensation

    edge = EdgeTiming(47100)                   # answers every endpoint's probes
    est = edge.request_arrived(header, rid)    # t_network (ns) of a request that just arrived
    budget = edge.processing_started(rid, app, slo_ns)   # SLO - (network + wait + median processing)
    if edge.drop_reason(rid, app, budget) == "budget": ...  # answer at once: dropped early
    edge.processing_ended(rid, app)
    response_header.update(edge.response_sent(header))

Stamps travel as a few header keys (smec_*), so an app's own message format
and the continuum contract are unchanged. Durations are on each side's
monotonic clock: nothing needs the clocks to agree."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import OrderedDict
from typing import Callable

from smec_edge.budget import ProcessingTimes, budget_ns, drop
from smec_edge.timing import ACK, PROBE, ClientClock, EdgeClock, Stamp
from smec_edge.unixpath import short

PROBE_PERIOD_S = 1.0


class Client:
    """The endpoint's timing daemon (a thread sending a probe every period
    and taking the ACKs) and the two client calls."""

    def __init__(self, edge_host: str, port: int, period_s: float = PROBE_PERIOD_S,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.clock, self.period_s = clock, period_s
        self.timing = ClientClock()
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect((edge_host, port))
        self.address = self.sock.getsockname()[0]  # how the edge tells this client apart
        self.sock.settimeout(0.05)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="smec-timing", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        next_probe = 0.0
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= next_probe:
                with self.lock:
                    probe = self.timing.probe()
                try:
                    self.sock.send(probe)
                except OSError:
                    pass  # no route yet, or a full buffer: the next probe will do
                next_probe = now + self.period_s
            try:
                data = self.sock.recv(64)
            except (TimeoutError, OSError):
                continue
            if len(data) == ACK.size:
                with self.lock:
                    self.timing.ack(data, self.clock())

    def request_sent(self) -> dict:
        """Header keys for a request leaving now (none before the first ACK)."""
        with self.lock:
            st = self.timing.request_sent(self.clock())
        return {} if st is None else {"smec_client": self.address, "smec_ack": st.ack_id, "smec_since_ns": st.since_ack_ns}

    def response_arrived(self, header: dict) -> None:
        if "smec_resp_ack" in header:
            with self.lock:
                self.timing.response_arrived(Stamp(header["smec_resp_ack"], header["smec_resp_since_ns"]), self.clock())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        self.sock.close()


class EdgeTiming:
    """The edge's side: answers every client's probes (a thread), estimates
    each request's network time, keeps processing times, computes budgets."""

    def __init__(self, port: int, bind: str = "0.0.0.0", clock: Callable[[], int] = time.monotonic_ns,
                 manager: str | None = None, app: str | None = None) -> None:
        """manager: the edge manager daemon's socket (manager.py), told each
        budget; app: this server's application, announced to it with this
        process's id (cores mode pins it, quota mode moves it into the app's cgroup)."""
        self.clock = clock
        self.manager = None
        if manager:
            self.manager = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.manager_path = short(manager)
            if app:
                try:
                    self.manager.sendto(f"hello {app} {os.getpid()}".encode(), self.manager_path)
                except OSError as e:  # served all the same, but the manager cannot place this server
                    print(f"smec: the edge manager at {manager} did not take this server's hello: {e}", flush=True)
        self.clients: dict[str, EdgeClock] = {}
        self.processing = ProcessingTimes()
        # request id -> [arrival, network estimate, processing start] (edge clock, ns)
        self.requests: OrderedDict[str, list] = OrderedDict()
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((bind, port))
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="smec-acks", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                data, addr = self.sock.recvfrom(64)
            except (TimeoutError, OSError):
                continue
            if len(data) != PROBE.size:
                continue
            with self.lock:
                ack = self.clients.setdefault(addr[0], EdgeClock()).probe(data, self.clock())
            try:
                self.sock.sendto(ack, addr)
            except OSError:
                pass

    def request_arrived(self, header: dict, request_id: str) -> int | None:
        """A request arrived now: its t_network (ns), None without a usable stamp."""
        now = self.clock()
        with self.lock:
            edge = self.clients.get(header.get("smec_client", ""))
            net = None
            if edge is not None and "smec_ack" in header:
                net = edge.network_ns(Stamp(header["smec_ack"], header["smec_since_ns"]), now)
            self.requests[request_id] = [now, net, None]
            while len(self.requests) > 4096:
                self.requests.popitem(last=False)
            return net

    def processing_started(self, request_id: str, app: str, slo_ns: int) -> int | None:
        """Processing starts now: the request's budget, SLO - (network + wait +
        the app's median processing time); None when its network time is unknown."""
        now = self.clock()
        with self.lock:
            r = self.requests.get(request_id)
            if r is None:
                return None
            r[2] = now
            b = None if r[1] is None else budget_ns(slo_ns, r[1], now - r[0], self.processing.median_ns(app))
        if b is not None and self.manager is not None:
            try:
                self.manager.sendto(f"budget {app} {b}".encode(), self.manager_path)
            except OSError:
                pass  # the manager is gone or busy: the request is still served
        return b

    def drop_reason(self, request_id: str, app: str, budget: int | None) -> str:
        """SMEC's early drop for a request about to be processed: "budget" (drop
        it: its budget is spent), "refresh" (spent, but the app's processing
        estimate is stale: process it to learn again, budget.STALE_NS) or ""
        (process it)."""
        if budget is None or not drop(budget):
            return ""
        with self.lock:
            if self.processing.stale(app, self.clock()):
                r = self.requests.get(request_id)
                if r is not None:
                    r.append("refresh")
                return "refresh"
        return "budget"

    def processing_ended(self, request_id: str, app: str) -> None:
        now = self.clock()
        with self.lock:
            r = self.requests.get(request_id)
            if r is not None and r[2] is not None:
                self.processing.add(app, now - r[2], now, restart=r[-1] == "refresh")

    def response_sent(self, header: dict) -> dict:
        """Header keys for the response to this request (T_ack_resp)."""
        with self.lock:
            edge = self.clients.get(header.get("smec_client", ""))
            st = edge.response_sent(self.clock()) if edge else None
        return {} if st is None else {"smec_resp_ack": st.ack_id, "smec_resp_since_ns": st.since_ack_ns}

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        self.sock.close()
