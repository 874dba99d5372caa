"""The contract between continuum and a workload, for any language or image:
configuration comes in as CONTINUUM_* environment variables, records go out
as CSV files with the columns below. continuum's own apps follow it through
`driver.py`; `workloads/example/` follows it by hand in one file.

All timestamps are time.time_ns() on the host clock: every node of a run is a
namespace or container of one machine, so one-way latencies are exact."""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field

# One row per request, written by the endpoint as soon as the request is answered or times out.
RECORD_FIELDS = [
    "repetition", "endpoint", "request_id", "seq", "phase", "status", "request_bytes", "response_bytes", "result",
    "t_drawn", "t_pre_start", "t_pre_end", "t_published",
    "t_server_received", "t_server_start", "t_server_done", "t_server_published",
    "t_received", "send_rate",
]
# One row per request the server received: requests missing here were lost before the server.
SERVER_FIELDS = ["repetition", "endpoint", "request_id", "request_bytes", "t_server_received", "t_server_start",
                 "t_server_done", "t_server_published"]
# With SMEC's edge manager: one row per request the server received, with SMEC's
# estimates on the edge's clock (network: the request's uplink + its response's downlink).
SMEC_FIELDS = ["repetition", "endpoint", "request_id", "network_est_ns", "budget_ns", "dropped", "drop_reason"]
# One row per sending-rate change made by application-level congestion control.
RATE_FIELDS = ["t", "endpoint", "repetition", "rate", "reason", "latency_ms"]

# An app's SLO where neither [workload.apps] nor an edge system's table gives one (ms).
DEFAULT_SLO_MS = 100.0


def urgency_ms(slo_ms: float) -> float:
    """The urgency budget where none is given: a third of the SLO (SMEC: a request whose budget left is
    below it is urgent; its server's GPU stream priority and the manager's cores follow)."""
    return slo_ms / 3


class Env:
    """The CONTINUUM_* variables continuum sets and apps read: their names are
    defined here only (docs/workloads.md describes each one)."""

    BROKER = "CONTINUUM_BROKER"
    QOS = "CONTINUUM_QOS"
    TCP_NODELAY = "CONTINUUM_TCP_NODELAY"  # "1": MQTT clients set TCP_NODELAY ([workload] tcp_nodelay)
    SEED = "CONTINUUM_SEED"
    REPETITION = "CONTINUUM_REPETITION"
    PARAMS = "CONTINUUM_PARAMS"
    ENDPOINT = "CONTINUUM_ENDPOINT"
    RATE = "CONTINUUM_RATE"
    ARRIVALS = "CONTINUUM_ARRIVALS"  # constant, poisson or onoff
    ONOFF = "CONTINUUM_ONOFF"  # arrivals = onoff: JSON on_s, off_s, ratio, jitter, seed, epoch_ns (workloads/arrivals.py)
    RATE_STEPS = "CONTINUUM_RATE_STEPS"  # [[timeline]] load steps: JSON epoch_ns, steps [[t_s, rate], ...] (arrivals.py)
    RELOCATIONS = "CONTINUUM_RELOCATIONS"  # [[timeline]] relocations: JSON epoch_ns, moves [[t_s, "HOST:PORT", move_s], ...]
    BURST = "CONTINUUM_BURST"
    WARMUP_S = "CONTINUUM_WARMUP_S"
    DURATION_S = "CONTINUUM_DURATION_S"
    TIMEOUT_S = "CONTINUUM_TIMEOUT_S"
    PAYLOAD = "CONTINUUM_PAYLOAD"
    CONGESTION_CONTROL = "CONTINUUM_CONGESTION_CONTROL"
    RECORDS = "CONTINUUM_RECORDS"
    RATE_LOG = "CONTINUUM_RATE_LOG"
    THREADS = "CONTINUUM_THREADS"
    WORKERS = "CONTINUUM_WORKERS"  # server: requests processed at once (default 1)
    SERVER_LOG = "CONTINUUM_SERVER_LOG"
    READY_FILE = "CONTINUUM_READY_FILE"
    MODEL_CACHE = "CONTINUUM_MODEL_CACHE"
    APP = "CONTINUUM_APP"  # both: the application's name in the run (one of a mix's [workload.apps], or the app)
    ENDPOINTS = "CONTINUUM_ENDPOINTS"  # server: the endpoints it serves, comma-separated (unset: all of them)
    SMEC_EDGE = "CONTINUUM_SMEC_EDGE"  # HOST:PORT of the edge's SMEC timing (unset: SMEC off)
    SMEC_LOG = "CONTINUUM_SMEC_LOG"  # server: one row per request with SMEC's estimates
    SMEC_SLO_MS = "CONTINUUM_SMEC_SLO_MS"  # server: the app's SLO, for budgets (0: best effort, no budgets)
    SMEC_URGENCY_MS = "CONTINUUM_SMEC_URGENCY_MS"  # server: the app's urgency threshold (GPU stream priorities)
    ADMISSION = "CONTINUUM_ADMISSION"  # server, edge_tasks: [edge.admission] as JSON
    MOSAIC_AGENT = "CONTINUUM_MOSAIC_AGENT"  # server, edge_tasks: the socket of MOSAIC's root cgroup agent
    SMEC_EARLY_DROP = "CONTINUUM_SMEC_EARLY_DROP"  # server: 1 (default) drops a request whose budget is spent
    SMEC_MANAGER = "CONTINUUM_SMEC_MANAGER"  # server: the edge manager daemon's socket (told each budget)
    SHARED = "CONTINUUM_SHARED_SUBSCRIPTION"  # server: 1 when several servers share the requests (each served by one)

    @classmethod
    def names(cls) -> list[str]:
        return [v for k, v in vars(cls).items() if k.isupper()]


# An app whose answers are flows (`answers_as_flows = True` on both its sides: issue 41's flow workload): each
# answer comes on a TCP connection of its own, from the server to the endpoint's port ANSWER_PORT (at the
# request's "reply_to" address), framed as an MQTT answer (`pack`) and closed after it; its arrival time is its
# last byte's. So a transport under the app (TCP, or pDCell's shims) carries each answer as one flow.
ANSWER_PORT = 5300


def request_topic(endpoint: str) -> str:
    return f"continuum/{endpoint}/request"


def response_topic(endpoint: str) -> str:
    return f"continuum/{endpoint}/response"


def pack(header: dict, payload: bytes) -> bytes:
    """A message: 4-byte header length, JSON header (ids, timestamps), opaque payload."""
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("!I", len(h)) + h + payload


def unpack(message: bytes) -> tuple[dict, bytes]:
    (n,) = struct.unpack("!I", message[:4])
    return json.loads(message[4 : 4 + n]), message[4 + n :]


def _env(name: str, default: str | None = None) -> str:
    v = os.environ.get(name, default)
    if v is None:
        raise SystemExit(f"environment variable {name} is required (see docs/workloads.md)")
    return v


def _json(name: str) -> dict:
    raw = os.environ.get(name, "")
    try:
        return json.loads(raw) if raw else {}
    except json.JSONDecodeError as e:
        raise SystemExit(f"{name} is not valid JSON ({e}): {raw!r}") from None


@dataclass
class Common:
    broker_host: str
    broker_port: int
    qos: int
    seed: int
    repetition: int
    params: dict


def _common() -> Common:
    host, _, port = _env(Env.BROKER).rpartition(":")
    return Common(host or "127.0.0.1", int(port), int(_env(Env.QOS, "0")), int(_env(Env.SEED, "1")),
                  int(_env(Env.REPETITION, "1")), _json(Env.PARAMS))


@dataclass
class EndpointSettings(Common):
    endpoint: str = ""
    rate: float = 1.0
    arrivals: str = "constant"  # or "poisson", "onoff"
    onoff: dict = field(default_factory=dict)  # arrivals = "onoff": its schedule (workloads/arrivals.py)
    burst: int = 1
    warmup_s: float = 0.0
    duration_s: float = 10.0
    timeout_s: float = 10.0
    payload: dict = field(default_factory=dict)  # distribution, min_bytes, max_bytes, ...
    congestion_control: dict = field(default_factory=dict)  # empty: off
    records: str = ""
    rate_log: str = ""
    rate_steps: dict = field(default_factory=dict)  # [[timeline]] load steps (workloads/arrivals.py RateSteps)
    relocations: dict = field(default_factory=dict)  # [[timeline]] relocations (workloads/driver.py)

    @classmethod
    def from_env(cls) -> "EndpointSettings":
        c = _common()
        return cls(**vars(c), endpoint=_env(Env.ENDPOINT), rate=float(_env(Env.RATE)),
                   arrivals=_env(Env.ARRIVALS, "constant"), onoff=_json(Env.ONOFF), burst=int(_env(Env.BURST, "1")),
                   warmup_s=float(_env(Env.WARMUP_S, "0")), duration_s=float(_env(Env.DURATION_S)),
                   timeout_s=float(_env(Env.TIMEOUT_S, "10")), payload=_json(Env.PAYLOAD),
                   congestion_control=_json(Env.CONGESTION_CONTROL), records=_env(Env.RECORDS),
                   rate_log=_env(Env.RATE_LOG, ""), rate_steps=_json(Env.RATE_STEPS),
                   relocations=_json(Env.RELOCATIONS))


@dataclass
class ServerSettings(Common):
    threads: int = 1
    workers: int = 1
    server_log: str = ""
    ready_file: str = ""
    model_cache: str = ""

    @classmethod
    def from_env(cls) -> "ServerSettings":
        c = _common()
        return cls(**vars(c), threads=int(_env(Env.THREADS, "1")), workers=max(1, int(_env(Env.WORKERS, "1"))), server_log=_env(Env.SERVER_LOG),
                   ready_file=_env(Env.READY_FILE), model_cache=_env(Env.MODEL_CACHE, ""))
