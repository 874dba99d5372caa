"""The two sides every continuum app shares; an app only supplies its data
(`Endpoint.draw`, `Endpoint.preprocess`) and its model (`Server.process`).

Endpoint: open-loop. Requests leave on schedule (constant or Poisson
arrivals, optionally in bursts) whether or not earlier ones were answered,
so a congested link shows up as growing latency, as in the thesis. Each
request's row is written the moment it is answered or times out.

Server: paho's network thread timestamps each request the moment it arrives
and queues it; one worker processes in arrival order. Time spent waiting for
the model therefore counts as server time (M4), never as uplink time (M1)."""

from __future__ import annotations

import csv
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from workloads import arrivals, congestion, contract, flow_answers
from workloads.contract import EndpointSettings, ServerSettings

# paho-mqtt 1.6 imports dnspython where it is installed (Debian's, which the workloads' environment sees) for
# connect_srv alone, which nothing here calls: 0.6 s of every endpoint's and server's start on these machines,
# on the path of every run. Hidden for that import only (None in sys.modules makes it fail); paho then sets
# HAVE_DNS = False, and `import dns` works again afterwards for any app that wants it.
_dns = sys.modules.get("dns")
sys.modules["dns"] = None  # type: ignore[assignment]
try:
    import paho.mqtt.client as mqtt
finally:
    if _dns is None:
        del sys.modules["dns"]
    else:
        sys.modules["dns"] = _dns


class EndpointApp(Protocol):
    def __init__(self, settings: EndpointSettings) -> None: ...
    def draw(self, seq: int) -> object: ...
    def preprocess(self, item: object) -> bytes: ...


class ServerApp(Protocol):
    info: dict  # model, framework, weights, versions: recorded in the manifest

    def __init__(self, settings: ServerSettings) -> None: ...
    def process(self, payload: bytes) -> bytes: ...


def connect(client: mqtt.Client, host: str, port: int, timeout: float = 30.0) -> None:
    """The broker may still be starting: retry until it accepts."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.connect(host, port, keepalive=60)
            if os.environ.get(contract.Env.TCP_NODELAY) == "1":  # each message at once, not after the last one's ACK
                client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _stop_event() -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return stop


class _CsvLog:
    def __init__(self, path: str, fields: list[str]) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._f = open(path, "a", newline="")
        self._w = csv.DictWriter(self._f, fields)
        self._lock = threading.Lock()
        if self._f.tell() == 0:
            self._w.writeheader()

    def write(self, row: dict) -> None:
        with self._lock:  # a server's workers share its logs
            self._w.writerow(row)
            self._f.flush()

    def close(self) -> None:
        self._f.close()


class _Requests:
    """The endpoint's requests in flight, each recorded once: answered, dropped early, timed out or
    left unanswered; and congestion control, fed by the answers since its last rate change."""

    def __init__(self, s: EndpointSettings, cc: congestion.CongestionControl | None):
        self.s, self.cc = s, cc
        self.lock = threading.Lock()
        self.pending: dict[str, dict] = {}
        self.records = _CsvLog(s.records, contract.RECORD_FIELDS)
        self.rates = _CsvLog(s.rate_log, contract.RATE_FIELDS) if s.rate_log and cc else None
        self.fresh: list[float] = []  # latencies of answers since the last rate change: the evidence for the next one
        self.header: dict = {}  # more for every request's header (answers as flows: where to send them)

    def adapt(self, now_ns: int) -> None:
        """Congestion control, on fresh evidence only: a request pending for longer
        than the threshold (no answer may come at all), else the latest answer
        since the last change. With neither, the rate stays as it is. Under the lock."""
        cc = self.cc
        if cc is None:
            return
        oldest_ms = (now_ns - min((r["t_drawn"] for r in self.pending.values()), default=now_ns)) / 1e6
        if oldest_ms > cc.threshold_ms:
            signal_ms = oldest_ms
        elif self.fresh:
            signal_ms = self.fresh[-1]
        else:
            return
        why = cc.update(now_ns / 1e9, signal_ms)
        if why:
            self.fresh.clear()
            if self.rates:
                self.rates.write({"t": now_ns, "endpoint": self.s.endpoint, "repetition": self.s.repetition, "rate": cc.rate,
                                  "reason": why, "latency_ms": round(signal_ms, 3)})

    def answered(self, header: dict, result: bytes, size: int, t: int) -> None:
        with self.lock:
            row = self.pending.pop(header["request_id"], None)
            if row is None:
                return  # answered after its timeout: already recorded as a timeout
            row.update({k: header[k] for k in ("t_server_received", "t_server_start", "t_server_done", "t_server_published")})
            row.update({"status": "early_drop" if header.get("smec_dropped") else "ok",
                        # a binary answer (a file, a JPEG) as text a CSV reader takes: no control characters
                        "result": "".join(c if c.isprintable() else " " for c in result[:64].decode("utf-8", "replace")),
                        "response_bytes": size, "t_received": t})
            self.records.write(row)
            self.fresh.append((t - row["t_drawn"]) / 1e6)
            self.adapt(t)

    def expire(self, now_ns: int, everything: bool = False) -> None:
        with self.lock:
            for rid in [r for r, row in self.pending.items() if everything or now_ns - row["t_published"] > self.s.timeout_s * 1e9]:
                row = self.pending.pop(rid)
                row["status"] = "timeout" if not everything else "unanswered"
                self.records.write(row)

    def close(self) -> None:
        self.records.close()
        if self.rates:
            self.rates.close()


def _subscribed(client: mqtt.Client, host: str, port: int, topics: list[tuple[str, int]]) -> None:
    """Connected and subscribed (acknowledged by the broker), the network thread running."""
    done = threading.Event()
    client.on_subscribe = lambda *_: done.set()
    client.on_connect = lambda c, *_: c.subscribe(topics)
    connect(client, host, port)
    client.loop_start()
    if not done.wait(30):
        raise SystemExit(f"no subscription acknowledged by the broker at {host}:{port} within 30 s")


def run_endpoint(app_cls: type[EndpointApp]) -> int:
    s = EndpointSettings.from_env()
    app = app_cls(s)
    stop = _stop_event()
    rng = np.random.default_rng(s.seed + 7919 * s.repetition)
    cc = congestion.from_settings(s.rate, s.congestion_control)
    req = _Requests(s, cc)
    smec = _smec_client()

    def on_message(_c, _u, m) -> None:
        t = time.time_ns()
        header, result = contract.unpack(m.payload)
        timing = moves.timing_of(header.get("request_id"), smec)
        if timing:
            timing.response_arrived(header)
        req.answered(header, result, len(m.payload), t)

    client = mqtt.Client(client_id=f"{s.endpoint}-r{s.repetition}", clean_session=True)
    client.on_message = on_message
    _subscribed(client, s.broker_host, s.broker_port, [(contract.response_topic(s.endpoint), s.qos)])
    moves = _Moves(s, on_message, client, smec)
    flows = None
    if getattr(app, "answers_as_flows", False):
        flows = flow_answers.Listener(lambda header, head, size, t: req.answered(header, head, size, t))
        req.header = {"reply_to": flow_answers.own_address(s.broker_host, s.broker_port)}

    if s.arrivals == "onoff" and not s.onoff:
        raise SystemExit(f"arrivals = onoff needs its schedule in {contract.Env.ONOFF}")
    bursts = arrivals.OnOff.from_settings(s.onoff) if s.arrivals == "onoff" else None
    steps = arrivals.RateSteps.from_settings(s.rate, s.rate_steps) if s.rate_steps else None
    t0 = time.time_ns()
    warm_end = t0 + s.warmup_s * 1e9
    end = t0 + (s.warmup_s + s.duration_s) * 1e9
    last_send, unit_gap, seq = float(t0), 0.0, 0
    while not stop.is_set():
        # The next send is one gap after the last at the current rate; congestion control
        # may change the rate while we wait, so the wait is re-planned every 100 ms.
        moves.release(time.time_ns(), req)  # a relocation's held requests, once the service is there
        rate = cc.rate if cc else s.rate
        if steps is not None:  # [[timeline]] load steps (not with cc or bursts: the file's checks)
            due = steps.after(last_send, unit_gap)
        else:
            due = bursts.after(last_send, unit_gap / rate) if bursts else last_send + unit_gap * 1e9 / rate
        now = time.time_ns()
        if due > now:
            if stop.wait(min(0.1, (due - now) / 1e9, *([max(0.0, (moves.held_until - now) / 1e9)] if moves.held else []))):
                break
            with req.lock:
                req.adapt(time.time_ns())
            req.expire(time.time_ns())
            continue
        if due >= end:
            break
        last_send = due
        for _ in range(max(1, s.burst)):
            row, payload = _prepare(app, s, seq, warm_end, steps.rate_at(due) if steps else rate)
            to, held = moves.client_at(row["t_drawn"], client)
            if held:  # drawn while the service moves: it waits at the endpoint for the move's end
                moves.hold(row, payload)
            else:
                moves.release(time.time_ns(), req)  # those held before it go first
                _publish(to, s, req, moves.timing_for(to, row), row, payload)
            seq += 1
        unit_gap = rng.exponential(1.0) if s.arrivals in ("poisson", "onoff") else 1.0  # in units of 1/rate
        req.expire(time.time_ns())

    # Every request gets its full timeout for an answer (held ones once the move is over).
    while moves.held and not stop.is_set():
        stop.wait(max(0.0, min(0.05, (moves.held_until - time.time_ns()) / 1e9)))
        moves.release(time.time_ns(), req)
    while req.pending and not stop.is_set():
        req.expire(time.time_ns())
        stop.wait(0.05)
    req.expire(time.time_ns(), everything=True)  # stopped early: still unanswered
    for c in dict.fromkeys((client, *moves.clients.values())):
        c.disconnect()  # first: it wakes the network thread, which loop_stop would otherwise wait out (up to 1 s)
        c.loop_stop()
    for timing in moves.timings():
        timing.close()
    if flows is not None:
        flows.close()
    req.close()
    return 0


class _Moves:
    """[[timeline]] relocations, stop-and-copy: from a move's start until its end (the state's
    transfer, modelled by the orchestrator) requests are drawn as usual but held here; at the end
    they go, with every later one, to the new node's broker (connected and subscribed at the start,
    so the switch costs no connection). Answers from the old node still arrive. With SMEC's timing
    (its early drops and budgets), the endpoint's timing client follows the service too: one per
    node, each request's answer given to the client its request went with."""

    def __init__(self, s: EndpointSettings, on_message, first: mqtt.Client, smec=None) -> None:
        epoch = int(s.relocations.get("epoch_ns", 0))
        self.moves = [(epoch + int(t * 1e9), hp, epoch + int(t * 1e9) + int(m * 1e9)) for t, hp, m in s.relocations.get("moves", [])]
        # a move back to the first node uses the first connection: a second subscription there
        # would have the broker send every answer twice, each handled by its own network thread
        self.clients: dict[str, mqtt.Client] = {f"{s.broker_host}:{s.broker_port}": first}
        self.held: list[tuple[dict, bytes]] = []
        self.held_until = 0  # ns: when the held requests go (0: none held)
        self.held_to: mqtt.Client | None = None
        for _, hp, _ in self.moves:
            if hp not in self.clients:
                host, _, port = hp.rpartition(":")
                c = mqtt.Client(client_id=f"{s.endpoint}-r{s.repetition}-{host}", clean_session=True)
                c.on_message = on_message
                _subscribed(c, host, int(port), [(contract.response_topic(s.endpoint), s.qos)])
                self.clients[hp] = c
        self.s = s
        # SMEC's timing client per node (its port: the first one's), and which one each request went with
        self.smec: dict[int, object] = {id(first): smec} if smec else {}
        if smec:
            port = int(os.environ[contract.Env.SMEC_EDGE].rpartition(":")[2])
            from smec_edge.api import Client

            for hp, c in self.clients.items():
                if id(c) not in self.smec:
                    self.smec[id(c)] = Client(hp.rpartition(":")[0], port)
        self.sent_with: dict[str, object] = {}

    def timing_for(self, client: mqtt.Client, row: dict):
        """The SMEC timing client of the node this request goes to (None: no SMEC)."""
        timing = self.smec.get(id(client))
        if timing is not None:
            self.sent_with[row["request_id"]] = timing
        return timing

    def timing_of(self, rid: str | None, first):
        """The timing client an answer's request went with."""
        return self.sent_with.pop(rid, first) if rid is not None and self.sent_with else first

    def timings(self) -> list:
        return list(dict.fromkeys(self.smec.values()))

    def client_at(self, t: int, first: mqtt.Client) -> tuple[mqtt.Client, bool]:
        """Where a request drawn at t goes, and whether it waits for a move in progress."""
        to = first
        for start, hp, end in self.moves:
            if t >= end:
                to = self.clients[hp]
            elif t >= start:
                self.held_until, self.held_to = end, self.clients[hp]
                return self.clients[hp], True
        return to, False

    def hold(self, row: dict, payload: bytes) -> None:
        self.held.append((row, payload))

    def release(self, now: int, req: "_Requests") -> None:
        if self.held and now >= self.held_until and self.held_to is not None:
            for row, payload in self.held:
                _publish(self.held_to, self.s, req, self.timing_for(self.held_to, row), row, payload)
            self.held = []


def _prepare(app: EndpointApp, s: EndpointSettings, seq: int, warm_end: float, rate: float) -> tuple[dict, bytes]:
    """One request drawn and pre-processed (warm-up when drawn before `warm_end`): its row and its message."""
    t_drawn = time.time_ns()
    item = app.draw(seq)
    t_pre_start = time.time_ns()
    payload = app.preprocess(item)
    t_pre_end = time.time_ns()
    rid = f"{s.endpoint}-{s.repetition}-{seq}"
    row = {"repetition": s.repetition, "endpoint": s.endpoint, "request_id": rid, "seq": seq,
           "phase": "warmup" if t_drawn < warm_end else "measure", "status": "timeout",
           "t_drawn": t_drawn, "t_pre_start": t_pre_start, "t_pre_end": t_pre_end,
           "send_rate": rate}
    return row, payload


def _publish(client: mqtt.Client, s: EndpointSettings, req: _Requests, smec, row: dict, payload: bytes) -> None:
    """A prepared request framed (its publication time in the header), recorded as pending, published."""
    with req.lock:
        row["t_published"] = time.time_ns()
        message = contract.pack({"request_id": row["request_id"], "endpoint": s.endpoint, "repetition": s.repetition,
                                 "t_published": row["t_published"], **req.header, **(smec.request_sent() if smec else {})}, payload)
        row["request_bytes"] = len(message)
        req.pending[row["request_id"]] = row
    client.publish(contract.request_topic(s.endpoint), message, qos=s.qos)


def _smec_client():
    """SMEC's client timing daemon when the run has SMEC's edge manager."""
    edge = os.environ.get(contract.Env.SMEC_EDGE)
    if not edge:
        return None
    from smec_edge.api import Client

    host, _, port = edge.rpartition(":")
    return Client(host, int(port))


class _Edge:
    """SMEC's part of a server, when the run has it: its timing (probes answered, arrivals and
    processing timed), each request's budget, early drops, and its log."""

    def __init__(self, name: str):
        self.name = name
        self.smec, self.log, self.slo_ns = _smec_edge()
        self.urgency_ns = int(float(os.environ.get(contract.Env.SMEC_URGENCY_MS, "0")) * 1e6)
        self.drop = os.environ.get(contract.Env.SMEC_EARLY_DROP, "1") == "1"

    def started(self, rid: str) -> tuple[int | None, str]:
        """The request's budget as its processing starts, and why it is dropped early ("budget") or not."""
        smec = self.smec
        budget = smec.processing_started(rid, self.name, self.slo_ns) if smec and self.slo_ns else None
        # SMEC's early drop: a request whose budget is spent cannot make its SLO;
        # the client is told at once (an empty answer marked smec_dropped).
        return budget, smec.drop_reason(rid, self.name, budget) if smec and self.drop else ""

    def ended(self, header: dict, budget: int | None, reason: str) -> dict:
        """What the answer's header carries for SMEC's client, with the request's row of SMEC's log written."""
        dropped = reason == "budget"
        extra: dict = {"smec_dropped": True} if dropped else {}
        smec = self.smec
        if smec:
            if not dropped:
                smec.processing_ended(header["request_id"], self.name)
            extra.update(smec.response_sent(header))
            with smec.lock:
                net = smec.requests.get(header["request_id"], [None, None])[1]
            self.log.write({"repetition": header["repetition"], "endpoint": header["endpoint"], "request_id": header["request_id"],
                            "network_est_ns": net, "budget_ns": budget, "dropped": int(dropped), "drop_reason": reason})
        return extra

    def close(self) -> None:
        if self.smec:
            self.smec.close()
            self.log.close()


def run_server(app_cls: type[ServerApp]) -> int:
    s = ServerSettings.from_env()
    app = app_cls(s)
    stop = _stop_event()
    inbox: queue.Queue = queue.Queue()
    log = _CsvLog(s.server_log, contract.SERVER_FIELDS)
    name = os.environ.get(contract.Env.APP, "app")
    edge = _Edge(name)

    def on_request(_c, _u, m) -> None:
        t = time.time_ns()
        if edge.smec:  # the arrival, timed where it happens (the network thread)
            header, _ = contract.unpack(m.payload)
            edge.smec.request_arrived(header, header["request_id"])
        inbox.put((t, m.payload))

    served_endpoints = [e for e in os.environ.get(contract.Env.ENDPOINTS, "").split(",") if e] or ["+"]
    client = mqtt.Client(client_id=f"server-{name}-{s.repetition}", clean_session=True)
    client.on_message = on_request
    # ready means subscribed: a request sent now is not lost
    # several servers on several nodes share one broker's requests: an MQTT shared subscription gives each to one of them
    share = f"$share/{name}/" if os.environ.get(contract.Env.SHARED) == "1" else ""
    _subscribed(client, s.broker_host, s.broker_port, [(share + contract.request_topic(e), s.qos) for e in served_endpoints])
    tmp = Path(s.ready_file + ".tmp")
    tmp.write_text(json.dumps(app.info))
    tmp.replace(s.ready_file)  # whole or absent: the orchestrator reads it as soon as it exists
    print(f"server ready: {json.dumps(app.info)}", flush=True)
    served = [0]
    count = threading.Lock()
    as_flows = getattr(app, "answers_as_flows", False)
    senders: list[threading.Thread] = []
    answers = _CsvLog(str(Path(s.server_log).with_name(Path(s.server_log).name.replace("server-", "answers-", 1))),
                      ["request_id", "bytes", "tcp_retransmissions"]) if as_flows else None

    def work() -> None:
        """One worker: takes the next request, processes it, answers."""
        while not stop.is_set():
            try:
                t_recv, message = inbox.get(timeout=0.2)
            except queue.Empty:
                continue
            t_start = time.time_ns()
            header, payload = contract.unpack(message)
            budget, reason = edge.started(header["request_id"])
            if reason == "budget":
                result = b""
            elif edge.smec and hasattr(app, "process_with_budget"):  # SMEC's GPU path: the stream follows the budget
                result = app.process_with_budget(payload, budget, edge.urgency_ns)
            else:
                result = app.process(payload)
            t_done = time.time_ns()
            extra = edge.ended(header, budget, reason)
            answer = {"request_id": header["request_id"], "t_server_received": t_recv, "t_server_start": t_start,
                      "t_server_done": t_done, "t_server_published": time.time_ns()}
            if answers is not None:  # answers as flows: each on its own connection, side by side (the next request does not wait)
                sender = threading.Thread(target=_send_flow, args=(header, contract.pack({**answer, **extra}, result), answers), daemon=True)
                sender.start()
                senders[:] = [t for t in senders if t.is_alive()] + [sender]
            else:
                client.publish(contract.response_topic(header["endpoint"]), contract.pack({**answer, **extra}, result), qos=s.qos)
            log.write({"repetition": header["repetition"], "endpoint": header["endpoint"], "request_bytes": len(message), **answer})
            with count:
                served[0] += 1

    queueing = _run_workers(app, s, work, stop)
    for sender in senders:  # answers still on their way: their transfers end with the run's teardown at the latest
        sender.join(0.5)
    if answers is not None:
        answers.close()
    client.disconnect()  # before loop_stop, as the endpoint does
    client.loop_stop()
    log.close()
    if hasattr(app, "close") and not queueing:  # an app with its own processes and records to finish
        app.close()
    edge.close()
    print(f"server stopped after {served[0]} requests", flush=True)
    return 0


def _send_flow(header: dict, message: bytes, log: _CsvLog) -> None:
    """One answer as a flow; its row in answers-NODE.csv: request_id, bytes, the segments its TCP sent again."""
    try:
        again = flow_answers.send(header["reply_to"], message)
    except (OSError, KeyError) as e:  # the request then times out at the endpoint, which records it
        print(f"answer to {header.get('request_id')} not delivered: {e}", flush=True)
        return
    try:
        log.write({"request_id": header["request_id"], "bytes": len(message), "tcp_retransmissions": again})
    except ValueError:  # the server stopped meanwhile (its log closed): the answer is the endpoint's record still
        pass


def _run_workers(app: ServerApp, s: ServerSettings, work: Callable[[], None], stop: threading.Event) -> bool:
    """CONTINUUM_WORKERS requests at once (default 1: one at a time, in arrival order), until the stop; an
    app that queues work itself (edge_tasks: MOSAIC's executor) asks for as many as may wait at once: then
    every worker is a thread, as any may wait long in the app, and this one only waits for the stop. Such an
    app closes first: that answers the requests still waiting in it (their threads return) and writes its
    records within the runner's grace period. Returns whether the app queues (it is closed already)."""
    close = getattr(app, "close", None)
    queueing = close is not None and getattr(app, "concurrency", 1) > 1
    workers = [threading.Thread(target=work, name=f"worker-{i}", daemon=True)
               for i in range(0 if queueing else 1, max(s.workers, getattr(app, "concurrency", 1)))]
    for t in workers:
        t.start()
    if queueing:
        while not stop.wait(0.2):
            pass
        assert close is not None
        close()
    else:
        work()
    end = time.monotonic() + 5  # for all of them together
    for t in workers:
        t.join(timeout=max(0.0, end - time.monotonic()))
    return queueing


def _smec_edge():
    """SMEC's edge timing (answers the endpoints' probes), its log and the app's SLO, when the run has it."""
    edge = os.environ.get(contract.Env.SMEC_EDGE)
    if not edge:
        return None, None, 0
    from smec_edge.api import EdgeTiming

    _, _, port = edge.rpartition(":")
    return (EdgeTiming(int(port), manager=os.environ.get(contract.Env.SMEC_MANAGER) or None,
                       app=os.environ.get(contract.Env.APP, "app")),
            _CsvLog(os.environ[contract.Env.SMEC_LOG], contract.SMEC_FIELDS),
            int(float(os.environ.get(contract.Env.SMEC_SLO_MS, str(contract.DEFAULT_SLO_MS))) * 1e6))
