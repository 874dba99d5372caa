"""The experiment as the rest of the orchestrator sees it: typed, frozen,
resolved (traces found, presets applied, defaults filled). Built by
continuum/config/resolve.py from the file's sections; nothing here reads a file."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from continuum.traces import TraceRef
from srsran_integration import lte
from srsran_integration.settings import SrsranSpec

ROLES = ("endpoint", "edge", "cloud")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,23}")


DEFAULT_PERIOD_US = 100_000  # CFS's own default, and Docker's
MIN_QUOTA_US = 1000  # the kernel refuses a smaller quota (cgroup v1 and v2)


SPEED_PERIOD_US = 10_000  # speed < 1: short enough to stretch a 10-ms request evenly, long enough to cost little


def cpu_period_us(cpus: float, speed: float, given: int | None) -> int:
    """The CFS period a node's quota is given per: as written, else 100 ms, else (speed < 1)
    10 ms (or the least whose quota the kernel still takes), so that every request is stretched
    evenly instead of running at full speed and then waiting out a long throttle. Shorter
    periods cost more than they give: at speed 0.5 a 47-ms request took 2.0x as long with a
    5, 10 or 20-ms period, but 2.8x with 2 ms (throttling's own overhead)."""
    if given is not None:
        return given
    if speed >= 1:
        return DEFAULT_PERIOD_US
    return max(SPEED_PERIOD_US, math.ceil(MIN_QUOTA_US / (cpus * speed)))


@dataclass(frozen=True)
class NodeSpec:
    name: str  # endpoint0, edge0, cloud0
    role: str
    index: int
    cpus: float  # the file's: CPUs of quota per period (Docker's --cpus)
    memory_bytes: int
    period_us: int = DEFAULT_PERIOD_US  # the CFS period (Docker's --cpu-period)
    speed: float = 1.0  # < 1: cores this much slower, emulated by quota cpus x speed over a short period
    tcp_congestion_control: str | None = None  # None: the machine's default (recorded in the manifest)

    @property
    def quota_cpus(self) -> float:
        """What the kernel is told: CPUs of quota per period."""
        return self.cpus * self.speed

    @property
    def quota_us(self) -> int:
        return max(MIN_QUOTA_US, round(self.quota_cpus * self.period_us))


@dataclass(frozen=True)
class MobileSpec:
    preset: str | None
    uplink: TraceRef | None  # None with mode = "srsran": no trace, the stack is the link
    downlink: TraceRef | None
    uplink_queue: str
    uplink_queue_args: str
    downlink_queue: str
    downlink_queue_args: str
    uplink_loss: float
    downlink_loss: float
    bypass: tuple[str, ...]
    ms_bursts: bool
    mode: str = "emulated"  # emulated (mahimahi-link replays traces) | srsran
    srsran: SrsranSpec | None = None
    segmentation: str = "emulator"  # emulator | kernel (offloads on, mahimahi-link --gso)
    emulator_threads: int = 1  # mahimahi-link --threads
    emulator: str = "mahimahi-link"  # mahimahi-link | mahimahi (upstream mm-link, patched: mahimahi-patches/)
    # Workload-aware replay: each direction's light trace (None: plain replay of that direction).
    uplink_light: LightRef | None = None
    downlink_light: LightRef | None = None

    def light(self, direction: str) -> LightRef | None:
        return self.uplink_light if direction == "uplink" else self.downlink_light

    def replay(self) -> str:
        """How the traces are replayed, in words."""
        lit = [d for d in ("uplink", "downlink") if self.light(d) is not None]
        if not lit:
            return "plain (Mahimahi: the traces' delivery opportunities)"
        return "workload-aware (" + ", ".join(f"{d} light trace {self.light(d).given}" for d in lit) + ")"  # type: ignore[union-attr]

    def describe(self) -> str:
        """One line: the traces replayed, or the real stack."""
        if self.srsran is not None:
            c = self.srsran.cell
            dl, _ = lte.frequencies_mhz(c.earfcn)
            return (f"srsRAN {self.srsran.generation.upper()} over {c.radio.upper()} "
                    f"(band {lte.band(c.earfcn)}, EARFCN {c.earfcn}, {dl:g} MHz down, {c.prb} PRBs)")
        assert self.uplink is not None and self.downlink is not None
        return f"{self.uplink.given} / {self.downlink.given}"


@dataclass(frozen=True)
class LightRef:
    """A light trace for workload-aware replay, resolved and parsed (continuum/tracearchive/light.py)."""

    given: str
    path: Path
    sha256: str
    pdo_bytes: int
    idle_ms: float
    offsets: Path | None = None
    archive_id: str | None = None
    active_ms: float | None = None  # None: CellReplay's burst rule

    def link_keys(self, direction: str) -> str:
        """mahimahi-link --link keys for `direction` ("up" or "down")."""
        keys = f",{direction}-light={self.path},{direction}-light-bytes={self.pdo_bytes},{direction}-light-idle-ms={self.idle_ms:g}"
        keys += f",{direction}-light-offsets={self.offsets}" if self.offsets is not None else ""
        return keys + (f",{direction}-light-active-ms={self.active_ms:g}" if self.active_ms is not None else "")


@dataclass(frozen=True)
class CoreSpec:
    edge_ms: float
    edge_label: str
    cloud_ms: float
    cloud_label: str
    jitter_ms: float
    mechanism: str


@dataclass(frozen=True)
class SideSpec:
    """How one side (endpoint or server) of the workload starts."""

    runtime: str  # process | container
    image: str | None  # container image
    command: tuple[str, ...]  # process argv, or the container's command (empty: the image's own)


@dataclass(frozen=True)
class WorkloadSpec:
    app: str
    offload: str
    rate: float
    timeout_s: float
    params: Mapping[str, Any]
    arrivals: str
    burst: int
    qos: int
    payload: Mapping[str, Any]
    congestion_control: Mapping[str, Any]
    endpoint: SideSpec
    server: SideSpec
    environment: Mapping[str, str]
    workdir: Path  # where custom commands start (the experiment file's folder)
    run_as_root: bool = False  # process sides as root (asked by the file), else as an unprivileged user
    workers: int = 1  # requests the server processes at once
    # The load as a share of the offload node's capacity for this app (None: `rate` as written).
    # Until calibration (continuum/calibration.py) sets it, `rate` is only the file's placeholder.
    utilisation: float | None = None
    onoff: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}))  # arrivals = "onoff": on_s, off_s, ratio, jitter

    @property
    def runtime(self) -> str:
        """container when either side runs in one."""
        return "container" if "container" in (self.endpoint.runtime, self.server.runtime) else "process"


@dataclass(frozen=True)
class AppSpec:
    """One application of the run and the endpoints that run it: a file
    without [workload.apps] has one, named after its app, on every endpoint."""

    name: str
    workload: WorkloadSpec
    endpoints: tuple[str, ...]
    slo_ms: float | None  # None: best effort
    urgency_ms: float | None  # urgent below this budget, for edge systems that hurry requests (None: best effort)
    index: int = 0  # its place in the mix (per-app ports are a base port + index)


@dataclass(frozen=True)
class TimelineEvent:
    """One [[timeline]] change as resolved: at t_s of every repetition, for these endpoints."""

    t_s: float
    ues: tuple[str, ...]
    kind: str  # outage | trace | core_delay | load | relocate | handover
    outage_s: float | None = None
    queue: str = "keep"  # outage: keep | flush
    uplink: TraceRef | None = None  # trace: the new traces (None: that direction unchanged)
    downlink: TraceRef | None = None
    phase: str = "restart"  # trace: restart | aligned
    core_delay_ms: float | None = None
    tier: str = "edge"  # core_delay: the destination tier
    node: str | None = None  # core_delay: that tier's one node (None: the whole tier)
    given_ue: str = "all"  # ue as the file wrote it
    rate: float | None = None  # load: requests/s per endpoint
    utilisation: float | None = None  # load: of each UE's app's capacity (as [workload] utilisation)
    # load: each UE's rate from then on (a utilisation's once the run has calibrated: calibration.apply)
    ue_rates: tuple[tuple[str, float], ...] = ()
    handover: str | None = None  # handover: the cell the UEs join (outage_s: the interruption; phase: their channel there)
    cause: str = ""  # an outage that is a recorded handover: "handover 12 -> 11 (drive log line 81)"
    relocate: str | None = None  # relocate: the node the UEs' service moves to
    move_s: float = 0.0  # relocate: how long the move takes (modelled: core delays + state at the core's rate)
    state_bytes: int = 0
    core_rate_mbps: float = 1000.0  # relocate: the rate the state crosses the core at

    @property
    def span_s(self) -> float:
        """How long the change itself lasts (an outage's length, a move's; the others are steps)."""
        return self.outage_s or self.move_s

    def describe(self) -> str:
        if self.kind == "outage":
            what = (f"{self.cause}: " if self.cause else "") + \
                f"outage {self.outage_s:g} s (queue {'flushed' if self.queue == 'flush' else 'kept'})"
        elif self.kind == "trace":
            dirs = [f"{d} -> {t.given}" for d, t in (("uplink", self.uplink), ("downlink", self.downlink)) if t is not None]
            what = f"trace {', '.join(dirs)} ({'phase-aligned' if self.phase == 'aligned' else 'restarted'})"
        elif self.kind == "handover":
            what = ((f"{self.cause}: " if self.cause else "") + f"handover to cell {self.handover} "
                    f"({(self.outage_s or 0.0) * 1000:g} ms interruption, queue {'lost' if self.queue == 'flush' else 'forwarded'})")
        elif self.kind == "relocate":
            what = (f"service moves to {self.relocate} ({self.state_bytes} bytes of state, {self.move_s * 1000:.1f} ms "
                    "modelled; requests drawn meanwhile held)")
        elif self.kind == "load":
            what = (f"load {self.rate:g} requests/s per endpoint" if self.rate is not None
                    else f"load utilisation {self.utilisation:g}")
        else:
            what = f"core delay to {self.node or self.tier} {self.core_delay_ms:g} ms one-way"
        return f"{self.t_s:g} s {self.given_ue}: {what}"

    def label(self) -> str:
        """A short label for a figure's event line."""
        if self.kind == "outage":
            return self.cause.split(" (")[0] if self.cause else f"outage {self.outage_s:g} s"
        if self.kind == "trace":
            return "trace " + "/".join(t.given for t in (self.uplink, self.downlink) if t is not None)
        if self.kind == "load":
            return f"load {self.rate:g}/s" if self.rate is not None else f"load {self.utilisation:g}"
        if self.kind == "relocate":
            return f"to {self.relocate}"
        if self.kind == "handover":
            return self.cause.split(" (")[0] if self.cause else f"handover to {self.handover}"
        return f"{self.node + ' ' if self.node else ''}core {self.core_delay_ms:g} ms"


@dataclass(frozen=True)
class CellMember:
    name: str  # an endpoint or bulk node
    cls: str  # lc | be
    slo_ms: float
    uplink: TraceRef | None = None  # its own channel; None: [mobile]'s
    downlink: TraceRef | None = None


@dataclass(frozen=True)
class CellSite:
    """One of several cells: its schedulers and blocks, the UEs that start in it, and the
    channel a UE has while in it (None: the UE's own)."""

    name: str
    uplink: str | None
    downlink: str | None
    blocks: int
    members: tuple[str, ...]
    uplink_trace: TraceRef | None = None
    downlink_trace: TraceRef | None = None


@dataclass(frozen=True)
class CellSpec:
    """The shared cell, resolved: schedulers (None: that direction stays
    private), timings in slots, members in the cell's order. With several
    cells ([cells.NAME]: `sites`) these are what they share, the schedulers
    and blocks the first cell's; a member is in one at a time."""

    uplink: str | None
    downlink: str | None
    slot_us: int
    blocks: int
    uplink_signalling: bool
    sr_period_slots: int
    k2_slots: int
    sr_grant_blocks: int
    periodic_bsr_slots: int  # 0: a BSR in every transmission
    be_starvation_slots: int
    pf_alpha: float
    pf_beta: float
    pf_window_slots: int
    members: tuple[CellMember, ...]
    bulk_direction: str
    sites: tuple[CellSite, ...] = ()  # several cells (empty: one)
    access: str | None = None  # made by [mobile] access = PRESET (a one-UE cell per endpoint), not by [cell]

    def member(self, name: str) -> CellMember | None:
        return next((m for m in self.members if m.name == name), None)

    def site(self, name: str) -> CellSite | None:
        return next((s for s in self.sites if s.name == name), None)

    def start(self, member: str) -> CellSite | None:
        """The cell a member starts in (None: one cell only)."""
        return next((s for s in self.sites if member in s.members), None)

    def channel(self, member: str, site: CellSite | None, direction: str) -> TraceRef | None:
        """A member's channel trace in a cell (None: [mobile]'s): the cell's, else its own."""
        own = self.member(member)
        return (getattr(site, f"{direction}_trace") if site else None) or (getattr(own, direction) if own else None)


@dataclass(frozen=True)
class CalibrationSpec:
    """[calibration]: when and how each app's service time is measured on its node."""

    when: str = "auto"  # auto (some load is a utilisation) | always
    cache: bool = True
    warmup_requests: int = 5
    requests: int = 40
    min_s: float = 3.0
    max_s: float = 60.0


@dataclass(frozen=True)
class Machine:
    """A machine of the hosts provider, reached over SSH."""

    name: str
    address: str
    user: str
    port: int
    key: str | None
    roles: tuple[str, ...]  # endpoint, edge, cloud, link


@dataclass(frozen=True)
class ExperimentSpec:
    source: Path
    text: str
    sha256: str
    name: str
    seed: int
    duration_s: float
    warmup_s: float
    repetitions: int
    output: Path
    provider: str
    nodes: tuple[NodeSpec, ...]
    mobile: MobileSpec
    core: CoreSpec
    workload: WorkloadSpec
    cell: CellSpec | None = None
    # The edge systems that run (continuum/edge/registry.py): each one's name -> its settings as resolved
    # from its [edge.*] table; a system that does not run has no entry.
    edge: Mapping[str, Any] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    # What the running edge systems ask of the nodes and providers (continuum/config/edge.py NEEDS)
    edge_needs: frozenset[str] = frozenset()
    apps: tuple[AppSpec, ...] = ()  # never empty once resolved
    mix: bool = False  # [workload.apps]: the servers' files carry their app's name
    hosts: tuple[Machine, ...] = ()  # provider "hosts": the machines
    host_keys: str = "known"  # known | first-use
    provision: bool = True  # run playbooks/site.yml on the machines first
    engine: str = "processes"  # processes | k3s: what starts the workloads on the machines
    k3s_server: str | None = None  # engine k3s: the machine whose `k3s kubectl` reaches the cluster
    vm_cpu: str = "auto"  # provider qemu: the VMs' CPU model (auto | max | qemu64)
    vm_manager: str = "qemu"  # provider qemu: who runs the VMs (qemu | libvirt)
    calibration: CalibrationSpec = CalibrationSpec()
    timeline: tuple[TimelineEvent, ...] = ()  # [[timeline]], in time order
    tcp_nodelay: bool = False  # [workload] tcp_nodelay: the brokers' set_tcp_nodelay, the clients' TCP_NODELAY

    @property
    def offload_node(self) -> NodeSpec:
        """The node that runs the servers (the first of the offload role)."""
        return self.role(self.workload.offload)[0]

    def node(self, name: str) -> NodeSpec:
        """A workload node by name (endpoint0, edge0, ...)."""
        return next(n for n in self.nodes if n.name == name)

    def app_of(self, endpoint: str) -> AppSpec:
        return next(a for a in self.apps if endpoint in a.endpoints)

    def role(self, role: str) -> tuple[NodeSpec, ...]:
        return tuple(n for n in self.nodes if n.role == role)

    def one_way_ms(self, role: str) -> float:
        return self.core.edge_ms if role == "edge" else self.core.cloud_ms
