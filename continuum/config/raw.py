"""The experiment file exactly as written: every section and key the TOML may
hold, with types and bounds. Unknown keys are errors (a typo must never be
silently ignored). Presets, trace names and host facts are resolved later, in
`resolve.py`, so this layer stays a plain description of the file."""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import Annotated, Any, Literal, Optional, Union, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from srsran_integration.settings import Srsran
from workloads import congestion, contract

# mahimahi-link's queue disciplines and the arguments each takes (src/queue.rs; tests/orchestrator/test_queue_args.py)
QUEUE_ARGS = {
    "infinite": (),
    "droptail": ("packets", "bytes"),
    "drophead": ("packets", "bytes"),
    "codel": ("packets", "bytes", "target", "interval"),
    "pie": ("packets", "bytes", "qdelay_ref", "max_burst"),
}
Queue = Literal["infinite", "droptail", "drophead", "codel", "pie"]
QUEUES: tuple[str, ...] = typing.get_args(Queue)
assert set(QUEUES) == set(QUEUE_ARGS)
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


def parse_memory(value: str | int) -> int:
    """'512M', '1.5G', '800K' or a byte count -> bytes."""
    if isinstance(value, bool):
        raise ValueError("expected a size like '512M', '2G' or a number of bytes")
    if isinstance(value, int):
        n = value
    else:
        s = str(value).strip().upper().removesuffix("IB").removesuffix("B")
        unit = s[-1:] if s[-1:] in UNITS and s[-1:] != "" else ""
        try:
            n = int(float(s[: len(s) - len(unit)]) * UNITS[unit])
        except (ValueError, OverflowError):  # OverflowError: '1e999G'
            raise ValueError(f"{value!r} is not a size; expected e.g. '512M', '2G' or a number of bytes") from None
    if n < 16 << 20:
        raise ValueError(f"{value!r} is below the 16M a node needs to start a process")
    return n


def _memory(v: Union[int, str]) -> Union[int, str]:
    parse_memory(v)
    return v


# A size as written ("512M", "2G" or bytes), checked where it is read.
Memory = Annotated[Union[int, str], AfterValidator(_memory)]


class Experiment(Strict):
    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    seed: int = Field(default=1, ge=0)
    duration_s: float = Field(gt=0, le=86400)
    warmup_s: float = Field(default=5.0, ge=0, le=3600)
    repetitions: int = Field(default=1, ge=1, le=100)
    output: str = "runs"


HOST_ROLES = ("endpoint", "edge", "cloud", "link")


class Host(Strict):
    """[provider.hosts.NAME]: a machine of the hosts provider."""

    address: str = Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9][A-Za-z0-9.:-]*$")
    user: str = Field(default="root", min_length=1, max_length=32, pattern=r"^[a-z_][a-z0-9_-]*$")
    port: int = Field(default=22, ge=1, le=65535)
    key: Optional[str] = None  # SSH private key; None: the user's agent and ~/.ssh
    role: Union[Literal["endpoint", "edge", "cloud", "link"], list[Literal["endpoint", "edge", "cloud", "link"]]]


class Provider(Strict):
    kind: str = "netns"
    # kind = "hosts": the machines, by name; how their SSH host keys are trusted
    # (known: ~/.ssh/known_hosts, strictly; first-use: each run learns them,
    # for machines made for the run); whether site.yml provisions them first.
    hosts: dict[str, Host] = {}
    host_keys: Literal["known", "first-use"] = "known"
    provision: bool = True
    # kind = "hosts": what starts the workloads: continuum itself over SSH
    # ("processes"), or the machines' k3s cluster, as pods ("k3s"), whose API
    # `k3s kubectl` reaches on the machine named k3s_server.
    engine: Literal["processes", "k3s"] = "processes"
    k3s_server: Optional[str] = None
    # kind = "qemu": the VMs' CPU model. auto: the host's under KVM; under TCG "max", every
    # instruction-set extension QEMU emulates (AVX2: TensorFlow's wheels die of SIGILL without
    # AVX); "qemu64": SSE2 only, a TCG guest ~20% faster, for code built without AVX.
    vm_cpu: Literal["auto", "max", "qemu64"] = "auto"
    # kind = "qemu": who runs the VMs. "qemu": continuum starts QEMU itself; "libvirt": transient
    # libvirt domains (created, never defined) named by the run, for labs that manage VMs with libvirt.
    vm_manager: Literal["qemu", "libvirt"] = "qemu"


class NodeGroup(Strict):
    count: int = Field(default=1, ge=0, le=64)
    cpus: float = Field(default=1.0, gt=0, le=256)  # a CFS quota in CPUs per period, Docker's --cpus
    memory: Memory = "1G"
    # The CFS period the quota is given per (Docker's --cpu-period). Default 100 ms; with
    # speed < 1, 10 ms (longer where the kernel's 1-ms minimum quota needs it; docs/experiment-file.md).
    cpu_period_us: int | None = Field(default=None, ge=1000, le=1_000_000)
    # Emulate cores this much slower: the quota is cpus x speed per a short period, so each
    # request is stretched by 1/speed rather than run at full speed and then throttled.
    speed: float = Field(default=1.0, gt=0, le=1)
    # The nodes' TCP congestion control (the kernel's name: cubic, bbr, reno); None: the machine's default,
    # recorded in the manifest. It shapes an upload's latency (BBR paces, and probes its RTT every 10 s).
    tcp_congestion_control: str | None = None

    @field_validator("tcp_congestion_control")
    @classmethod
    def _cc_name(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[a-z0-9_]{1,16}", v):
            raise ValueError(f"{v!r} is not a congestion control's name: the kernel's, e.g. cubic, bbr or reno "
                             "(this machine's: /proc/sys/net/ipv4/tcp_available_congestion_control)")
        return v


class Nodes(Strict):
    endpoint: NodeGroup = NodeGroup(count=1, cpus=1.0, memory="512M")
    edge: NodeGroup = NodeGroup(count=1, cpus=1.0, memory="2G")
    cloud: NodeGroup = NodeGroup(count=0, cpus=2.0, memory="2G")


class Mobile(Strict):
    mode: Literal["emulated", "srsran"] = "emulated"
    srsran: Srsran | None = None
    preset: str | None = None
    uplink: str | None = None
    downlink: str | None = None
    # Workload-aware replay (CellReplay): a light trace (base delay and packet-train offsets) in front of
    # each direction's trace. "auto": where the trace's archive entry has a light part, or uplink_light /
    # downlink_light name one; "plain": Mahimahi replay of the traces only.
    replay: Literal["auto", "plain"] = "auto"
    # The uplink access procedure of a real cell (a preset of presets.ACCESS): each endpoint's uplink as a
    # one-UE cell with SR/BSR signalling at the preset's timings; None: the trace alone.
    access: str | None = None
    uplink_light: str | None = None
    downlink_light: str | None = None
    uplink_queue: Queue = "infinite"
    uplink_queue_args: str = ""
    downlink_queue: Queue = "infinite"
    downlink_queue_args: str = ""
    uplink_loss: float = Field(default=0.0, ge=0, le=1)
    downlink_loss: float = Field(default=0.0, ge=0, le=1)
    bypass: list[str] = []
    ms_bursts: bool = False
    # Who cuts TCP/UDP super-frames into MTU packets: the hosts before the link ("emulator": their
    # offloads off, the emulator sees MTU frames), or nobody before it ("kernel": offloads on and
    # mahimahi-link --gso, which charges each segment as mm-link would; far less CPU per Gbit/s).
    # "auto": kernel where the provider builds it (netns), emulator elsewhere (qemu, hosts).
    segmentation: Literal["auto", "emulator", "kernel"] = "auto"
    # Forwarding threads of the one emulator process that serves every endpoint's link (mahimahi-link
    # --threads): links are dealt out, a shared cell's members stay on one thread. One thread carries
    # ~10 Gbit/s; more only help with several endpoints and spare cores.
    emulator_threads: int = Field(default=1, ge=1, le=256)
    # Which emulator replays the traces: this project's mahimahi-link, or upstream Mahimahi's
    # mm-link with the patches of mahimahi-patches/ (built by mahimahi-patches/build), one per
    # endpoint, to check a result on the original; features only mahimahi-link has are refused.
    emulator: Literal["mahimahi-link", "mahimahi"] = "mahimahi-link"


class Core(Strict):
    edge: Union[str, float] = "base_edge"
    cloud: Union[str, float] = "eu_central_1"
    jitter_ms: float = Field(default=0.0, ge=0, le=1000)
    mechanism: Literal["auto", "mahimahi-link", "netem"] = "auto"


class Payload(Strict):
    """Request payload sizes; each app builds its data bank to follow them."""

    distribution: Literal["uniform", "fixed", "normal", "lognormal"] = "uniform"
    min_bytes: int | None = Field(default=None, ge=1, le=100_000_000)
    max_bytes: int | None = Field(default=None, ge=1, le=100_000_000)
    mean_bytes: int | None = Field(default=None, ge=1, le=100_000_000)
    sd_bytes: float | None = Field(default=None, gt=0)
    sigma: float | None = Field(default=None, gt=0, le=5)


# The rule's defaults are the endpoint's own (workloads/congestion.py), defined there only.
_CC: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(congestion.CongestionControl) if f.name != "base_rate"}


class CongestionControl(Strict):
    """The thesis' application-level rule: x factor while e2e > threshold, restore after."""

    enabled: bool = False
    threshold_ms: float = Field(default=_CC["threshold_ms"], gt=0)
    factor: float = Field(default=_CC["factor"], gt=0, lt=1)
    hold_s: float = Field(default=_CC["hold_s"], ge=0)
    restore: Literal["reset", "double", "additive"] = _CC["restore"]  # congestion.RESTORE (a test holds them equal)
    step: float = Field(default=_CC["step"], ge=0)
    min_rate: float = Field(default=_CC["min_rate"], ge=0)


class Custom(Strict):
    """A bring-your-own app: an image and/or a command per side (see docs/workloads.md)."""

    endpoint_image: str | None = None
    server_image: str | None = None
    endpoint_command: list[str] = []
    server_command: list[str] = []
    environment: dict[str, str] = {}


class OnOff(Strict):
    """arrivals = "onoff": Poisson arrivals whose rate switches between a burst
    (on_s long, `ratio` times the calm rate) and a calm period (off_s long,
    each drawn within +-jitter of it), as MOSAIC's `burst` pattern (5 s at 8x
    every ~20 s) and SMEC's dynamic workload. The stated rate (or utilisation)
    is the long-run mean; every endpoint of a run bursts at the same times."""

    on_s: float = Field(default=5.0, gt=0, le=3600)
    off_s: float = Field(default=15.0, gt=0, le=3600)
    ratio: float = Field(default=8.0, ge=1, le=1e6)
    jitter: float = Field(default=0.2, ge=0, lt=1)


class Workload(Strict):
    app: str = "image_classification"
    offload: Literal["edge", "cloud"] = "edge"
    runtime: Literal["process", "container"] = "process"
    rate: float = Field(default=1.0, gt=0, le=10000)  # requests per second per endpoint
    # Or the load as a share of what the offload node can serve of this app (measured by
    # calibration): the app's endpoints together offer utilisation x capacity requests/s.
    utilisation: float | None = Field(default=None, gt=0, le=100)
    arrivals: Literal["constant", "poisson", "onoff"] = "constant"
    onoff: OnOff = OnOff()
    burst: int = Field(default=1, ge=1, le=1000)
    timeout_s: float = Field(default=10.0, gt=0, le=3600)
    qos: int = Field(default=0, ge=0, le=2)
    # MQTT without Nagle: the broker (Mosquitto's set_tcp_nodelay) and the workload's clients (TCP_NODELAY on
    # their sockets) send each message at once. Off (both their defaults), a small message waits while the
    # previous one on that connection is unacknowledged: an answer that follows another within a round trip
    # plus the receiver's delayed ACK waits that long. Shared by all apps.
    tcp_nodelay: bool = False
    payload: Payload = Payload()
    congestion_control: CongestionControl = CongestionControl()
    custom: Custom | None = None
    params: dict[str, Union[int, float, str, bool]] = {}
    run_as_root: bool = False  # process-mode workloads run as `nobody` unless this is set
    workers: int = Field(default=1, ge=1, le=64)  # requests the server processes at once
    apps: dict[str, "AppGroup"] = {}  # a mix: each group's endpoints run its app, with its own server


class AppGroup(Strict):
    """One application of a mix ([workload.apps.NAME]): `endpoints` endpoints
    run it against its own server on the offload node. Unset keys are
    [workload]'s; offload, runtime, qos and run_as_root are shared by all."""

    app: str
    endpoints: int = Field(default=1, ge=1, le=64)
    rate: float | None = Field(default=None, gt=0, le=10000)
    utilisation: float | None = Field(default=None, gt=0, le=100)  # of the node's capacity for this app alone
    arrivals: Literal["constant", "poisson", "onoff"] | None = None
    onoff: OnOff | None = None
    burst: int | None = Field(default=None, ge=1, le=1000)
    timeout_s: float | None = Field(default=None, gt=0, le=3600)
    payload: Payload | None = None
    congestion_control: CongestionControl | None = None
    custom: Custom | None = None
    params: dict[str, Union[int, float, str, bool]] | None = None
    workers: int | None = Field(default=None, ge=1, le=64)
    slo_ms: float | None = Field(default=None, gt=0, le=60000)  # default edge.manager.slo_ms
    urgency_ms: float | None = Field(default=None, gt=0, le=60000)  # SMEC: urgent below this budget (default SLO/3)
    best_effort: bool = False  # no SLO: SMEC neither drops nor hurries it; counted by throughput


Workload.model_rebuild()


# The shared cell's MAC schedulers (mahimahi-link's src/cell/; tests/orchestrator/test_facts.py): rr, pf
# and smec schedule either direction; tutti only the uplink (it learns request starts from the edge's
# notices), mrfs only the downlink (it orders UEs by the flow sizes pDCell's CU tells it: [transport]).
DownlinkScheduler = Literal["rr", "pf", "smec", "mrfs"]
UplinkScheduler = Literal["rr", "pf", "smec", "tutti"]
# The shared cell's MAC schedulers by name (mahimahi-link/src/cell/schedulers.rs is the other side,
# tests/orchestrator/test_facts.py holds them equal); "smec" and "tutti" here are the papers'
# MAC schedulers, the cell's own, not the edge systems of the same names.
DOWNLINK_SCHEDULERS: tuple[str, ...] = get_args(DownlinkScheduler)
UPLINK_SCHEDULERS: tuple[str, ...] = get_args(UplinkScheduler)
# Uplink schedulers that learn a request's start from the edge's notices (their port: --cell-notice-port),
# and those whose log dates each request's start (its estimate, checked in the cell's results).
NOTICE_SCHEDULERS: tuple[str, ...] = ("tutti",)
ESTIMATING_SCHEDULERS: tuple[str, ...] = ("smec", "tutti")
SCHEDULERS: tuple[str, ...] = tuple(dict.fromkeys((*UPLINK_SCHEDULERS, *DOWNLINK_SCHEDULERS)))


class CellUe(Strict):
    """One member's class and SLO, where it differs from the cell's defaults."""

    class_: Literal["lc", "be"] | None = Field(default=None, alias="class")
    slo_ms: float | None = Field(default=None, gt=0, le=60000)
    uplink: str | None = None  # this UE's own channel (archive name or file), else [mobile]'s
    downlink: str | None = None


class Bulk(Strict):
    """Best-effort UEs that move a file as fast as the cell lets them (iperf3
    TCP to the offload target), the traffic a latency-critical UE competes with."""

    count: int = Field(default=0, ge=0, le=32)
    direction: Literal["uplink", "downlink"] = "uplink"
    cpus: float = Field(default=0.5, gt=0, le=256)
    memory: Memory = "256M"


class Cell(Strict):
    """A shared cell (docs/cell.md): its members contend for one cell's
    resource blocks under a MAC scheduler, per direction; endpoints outside
    it keep private links."""

    uplink: Literal[UplinkScheduler, "private"] = "pf"
    downlink: Literal[DownlinkScheduler, "private"] = "pf"
    slot_us: Literal[125, 250, 500, 1000] = 500
    blocks: int = Field(default=51, ge=1, le=275)
    uplink_signalling: bool = True
    sr_period_ms: float = Field(default=10.0, gt=0, le=320)
    k2_slots: int = Field(default=4, ge=0, le=32)
    sr_grant_blocks: int = Field(default=2, ge=1, le=275)
    periodic_bsr_ms: float = Field(default=10.0, ge=0, le=10240)  # periodicBSR-Timer; 0: a BSR in every transmission
    be_starvation_ms: float = Field(default=20.0, gt=0, le=10000)
    pf_alpha: float = Field(default=1.0, ge=0, le=10)  # pf: largest r^alpha / R^beta first
    pf_beta: float = Field(default=1.0, ge=0, le=10)
    pf_window_ms: float = Field(default=50.0, gt=0, le=50000)  # pf: R's moving average window
    members: list[str] | None = None
    class_: Literal["lc", "be"] = Field(default="lc", alias="class")
    slo_ms: float = Field(default=contract.DEFAULT_SLO_MS, gt=0, le=60000)
    ue: dict[str, CellUe] = {}
    bulk: Bulk = Bulk()


class CellSite(Strict):
    """One of several cells ([cells.NAME], docs/cell.md "Several cells"): [cell] holds what
    they share (the slot clock, signalling, classes, bulk UEs); each cell its own schedulers,
    blocks, the UEs that start in it and the channel a UE has while in it."""

    uplink: Literal[UplinkScheduler, "private"] | None = None  # default: [cell]'s
    downlink: Literal[DownlinkScheduler, "private"] | None = None
    blocks: int | None = Field(default=None, ge=1, le=275)
    members: list[str] = []  # the UEs that start in this cell
    uplink_trace: str | None = None  # a UE's channel in this cell (archive name or file); default: its own
    downlink_trace: str | None = None


class Calibration(Strict):
    """How each app's service time on its offload node is measured (docs/calibration.md):
    back to back, in the node's cgroup, at the server's concurrency."""

    # auto: when some load is a utilisation (else a cached result is only recorded);
    # always: every run; the cache answers when the node, app and packages are unchanged.
    when: Literal["auto", "always"] = "auto"
    cache: bool = True
    warmup_requests: int = Field(default=5, ge=0, le=1000)
    requests: int = Field(default=40, ge=5, le=100_000)  # at least this many measured...
    min_s: float = Field(default=3.0, ge=0, le=600)  # ...and for at least this long (many CFS periods)
    max_s: float = Field(default=60.0, gt=0, le=3600)  # then stop, with what was measured


class TimelineEntry(Strict):
    """One change at t_s of every repetition ([[timeline]], docs/experiment-file.md):
    exactly one of outage_s, uplink/downlink (a trace switch) and core_delay_ms."""

    t_s: float = Field(ge=0, le=86400)  # seconds from the repetition's start (its warm-up included)
    ue: str | list[str] = "all"  # an endpoint, a [workload.apps] group, a list of them, or "all"
    outage_s: float | None = Field(default=None, gt=0, le=3600)  # nothing delivered, either direction
    queue: Literal["keep", "flush"] = "keep"  # an outage: what is queued waits for the link, or is lost
    uplink: str | None = None  # switch to this trace (archive name or file)
    downlink: str | None = None
    phase: Literal["restart", "aligned"] = "restart"  # the new trace from its start, or at the repetition's phase
    core_delay_ms: float | None = Field(default=None, ge=0, le=10000)  # one-way, from then on
    tier: Literal["edge", "cloud"] | None = None  # core_delay_ms: to this tier (default: the app's offload tier)
    node: str | None = None  # core_delay_ms: to this one edge or cloud node only (its tier's others keep theirs)
    rate: float | None = Field(default=None, gt=0, le=10000)  # a load step: requests/s per endpoint from then on
    utilisation: float | None = Field(default=None, gt=0, le=100)  # ... or as the app's [workload] utilisation
    # a recorded drive's handovers (an archive entry converted from a G-NetTrack log: irish-5g-*), each an
    # outage of interruption_ms at its recorded time (t_s on: those at or after it), its queue by `queue`
    handovers: str | None = None
    interruption_ms: float = Field(default=50.0, gt=0, le=10000)
    # handovers: each moves the UEs to the cell of the log's new cell ID ([cells.ID]) instead of an outage of their link
    to_cells: bool = False
    # the UEs' service moves to this edge or cloud node: stop-and-copy, state_bytes over the core (modelled:
    # the two tiers' one-way delays plus state_bytes at core_rate_mbps), requests drawn meanwhile held
    relocate: str | None = None
    state_bytes: int = Field(default=0, ge=0, le=10**12)
    core_rate_mbps: float = Field(default=1000.0, gt=0, le=1e6)
    # the UEs leave their cell for this one of [cells.NAME]: interruption_ms with nothing delivered, the queue
    # forwarded (queue = "keep") or lost, then the new cell schedules them with their channel there (phase: aligned)
    handover: str | None = None


class ExperimentFile(Strict):
    experiment: Experiment
    provider: Provider = Provider()
    nodes: Nodes = Nodes()
    mobile: Mobile = Mobile()
    core: Core = Core()
    workload: Workload = Workload()
    cell: Cell | None = None
    cells: dict[str, CellSite] = {}  # [cells.NAME]: several cells, [cell] their shared settings
    # [edge.SECTION]: each table belongs to an edge system (continuum/config/edge.py), checked by its model;
    # so does a top-level table an edge system owns (EdgeSection.table: [transport], pDCell's)
    edge: dict[str, Any] = {}
    calibration: Calibration = Calibration()
    timeline: list[TimelineEntry] = []  # [[timeline]]: an array of tables


def queue_args_problems(kind: str, args: str) -> list[str]:
    """What is wrong with an mm-link queue-args string for this discipline
    (empty: nothing). The emulator's rules (src/queue.rs), which
    tests/orchestrator/test_queue_args.py holds this to."""
    problems = []
    allowed = QUEUE_ARGS[kind]
    values: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in args.split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            problems.append(f"{part!r} is not KEY=VALUE")
        elif key not in allowed:
            valid = ", ".join(allowed) or "none"
            problems.append(f"queue {kind} does not take {key!r}; valid: {valid}")
        elif not re.fullmatch(r"\+?[0-9]+", value) or int(value) >= 1 << 64:
            problems.append(f"{key}={value!r}: expected a whole number")
        else:
            values.setdefault(key, int(value))
    if problems:
        return problems
    if kind in ("droptail", "drophead") and not (values.get("packets") or values.get("bytes")):
        problems.append(f"queue {kind} needs a limit: packets=N and/or bytes=N (N > 0)")
    if kind == "codel" and not (values.get("target") and values.get("interval")):
        problems.append("queue codel needs target=MS, interval=MS (both > 0)")
    if kind == "pie" and not ("qdelay_ref" in values and "max_burst" in values and values["qdelay_ref"] > 0):
        problems.append("queue pie needs qdelay_ref=MS (> 0), max_burst=MS")
    return problems
