"""Experiment file -> a typed, frozen ExperimentSpec, or ONE ConfigError that
lists every problem (TOML syntax, unknown keys, wrong types, impossible values,
unknown presets, missing or invalid traces), each with its key path and what
would be valid. Nothing on the host is touched."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
import os
import re
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, cast

from pydantic import BaseModel, ValidationError

from continuum import traces
from continuum.config import presets, raw
from continuum.errors import ConfigError, ConfigIssue
from continuum.network.plan import Machine
from continuum.providers import REGISTRY as PROVIDERS
from continuum.workloads import REGISTRY as APPS
from continuum.traces import TraceRef
from srsran_integration import lte

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

    @property
    def quota_cpus(self) -> float:
        """What the kernel is told: CPUs of quota per period."""
        return self.cpus * self.speed

    @property
    def quota_us(self) -> int:
        return max(MIN_QUOTA_US, round(self.quota_cpus * self.period_us))


@dataclass(frozen=True)
class SrsranSpec:
    """mode = "srsran": the real stack that carries the endpoint's traffic instead of the emulated link."""

    generation: str  # 4g | 5g
    cell: lte.Cell
    prefix: Path  # srsRAN's installation (bin/srsenb, share/srsran/*.example)
    attach_timeout_s: float


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
    urgency_ms: float | None  # SMEC: urgent below this budget (None: best effort)
    index: int = 0  # its place in the mix (its SMEC timing port is SMEC_PORT + index)


@dataclass(frozen=True)
class CellMember:
    name: str  # an endpoint or bulk node
    cls: str  # lc | be
    slo_ms: float
    uplink: TraceRef | None = None  # its own channel; None: [mobile]'s
    downlink: TraceRef | None = None


@dataclass(frozen=True)
class CellSpec:
    """The shared cell, resolved: schedulers (None: that direction stays
    private), timings in slots, members in the cell's order."""

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

    def member(self, name: str) -> CellMember | None:
        return next((m for m in self.members if m.name == name), None)


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
    edge_manager: str = "default"  # default | smec
    smec_slo_ms: float = 100.0
    smec_early_drop: bool = True
    smec_quota: tuple[float, float, float] | None = None  # quota mode: (unit, max, urgency ms); None: off
    smec_mode: str = "off"  # quota | cores | off (the manager daemon runs in quota and cores modes)
    smec_mps: str = "off"  # auto | on | off: several apps' servers share the GPU through CUDA MPS (smec_edge.mps)
    admission: dict | None = None  # [edge.admission] for edge_tasks (MOSAIC or a baseline), slots resolved
    apps: tuple[AppSpec, ...] = ()  # never empty once resolved
    mix: bool = False  # [workload.apps]: the servers' files carry their app's name
    hosts: tuple[Machine, ...] = ()  # provider "hosts": the machines
    host_keys: str = "known"  # known | first-use
    provision: bool = True  # run playbooks/site.yml on the machines first
    engine: str = "processes"  # processes | k3s: what starts the workloads on the machines
    k3s_server: str | None = None  # engine k3s: the machine whose `k3s kubectl` reaches the cluster
    calibration: CalibrationSpec = CalibrationSpec()

    @property
    def offload_node(self) -> NodeSpec:
        """The node that runs the servers (the first of the offload role)."""
        return self.role(self.workload.offload)[0]

    def app_of(self, endpoint: str) -> AppSpec:
        return next(a for a in self.apps if endpoint in a.endpoints)

    def role(self, role: str) -> tuple[NodeSpec, ...]:
        return tuple(n for n in self.nodes if n.role == role)

    def one_way_ms(self, role: str) -> float:
        return self.core.edge_ms if role == "edge" else self.core.cloud_ms


def _valid_keys(model: type[BaseModel], loc: tuple) -> str:
    """The keys allowed next to an unknown key at loc (inside model)."""
    parts = list(loc[:-1])
    while parts:
        name = str(parts.pop(0))
        field = next((f for k, f in model.model_fields.items() if (f.alias or k) == name), None)
        ann = getattr(field, "annotation", None)
        args = typing.get_args(ann)
        if typing.get_origin(ann) is dict and parts:  # a table of tables: [cell.ue.NAME]
            parts.pop(0)
            ann = args[1]
        elif type(None) in args:  # Model | None
            ann = next(a for a in args if a is not type(None))
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return ""
        model = ann
    return ", ".join(f.alias or k for k, f in model.model_fields.items())


def _issues_from(e: ValidationError, file: str, prefix: str, model: type[BaseModel] | None = None) -> list[ConfigIssue]:
    out = []
    for err in e.errors():
        loc = ".".join(str(p) for p in (prefix, *err["loc"]) if p != "")
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            valid = _valid_keys(model, err["loc"]) if model else ""
            msg = "unknown key" + (f"; valid: {valid}" if valid else "")
        elif err["type"] == "literal_error":
            msg = f"{msg}, got {err.get('input')!r}"
        elif err["type"] == "missing":
            msg = "required key is missing"
        out.append(ConfigIssue(file, loc, msg))
    return out


def _section(model: type[BaseModel], data: Any, file: str, key: str, issues: list[ConfigIssue]) -> Any:
    """The section validated; on errors, report them all and return the section
    with the offending keys left at their defaults, so the checks that need
    more than one key (trace names, counts, payload bounds) still run in the
    same pass. None when even that does not validate (a required key is bad)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        issues.extend(_issues_from(e, file, key, model))
        return _without_bad_keys(model, data, e)


def _without_bad_keys(model: type[BaseModel], data: Any, e: ValidationError) -> Any:
    if not isinstance(data, dict):
        return None
    data = copy.deepcopy(data)
    for err in e.errors():
        parent, loc = data, list(err["loc"])
        while len(loc) > 1 and isinstance(parent.get(loc[0]), dict) and loc[1] in parent[loc[0]]:
            parent = parent[loc.pop(0)]
        if isinstance(parent, dict):
            parent.pop(loc[0], None)
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def load(path: str | os.PathLike, materialize: bool = True) -> ExperimentSpec:
    """Parse, validate and resolve an experiment file; raise ConfigError with all problems.
    materialize=False (validate, --dry-run) writes nothing: archive traces not made
    yet are only checked to be makeable here."""
    path = Path(path)
    file = str(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError([ConfigIssue(file, "(file)", f"cannot read: {e.strerror}")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([ConfigIssue(file, "(syntax)", f"not valid TOML: {e}")]) from None

    issues: list[ConfigIssue] = []
    sections = raw.ExperimentFile.model_fields
    for key in data:
        if key not in sections:
            issues.append(ConfigIssue(file, key, f"unknown section; valid: {', '.join(sections)}"))
    if "experiment" not in data:
        issues.append(ConfigIssue(file, "experiment", "required section is missing (name, duration_s)"))
    parsed = {}
    for key, field in sections.items():
        if key in data:
            if not isinstance(data[key], dict):
                issues.append(ConfigIssue(file, key, "expected a table ([" + key + "])"))
                continue
            ann = field.annotation
            model = next((a for a in typing.get_args(ann) if a is not type(None)), ann)  # [cell] is optional
            parsed[key] = _section(cast(type[BaseModel], model), data[key], file, key, issues)
        elif key != "experiment":
            parsed[key] = field.default

    spec = _resolve(path, text, parsed, issues, materialize)
    if issues:
        raise ConfigError(issues)
    assert spec is not None
    return spec


def _resolve(path: Path, text: str, p: dict[str, Any], issues: list[ConfigIssue], materialize: bool = True) -> ExperimentSpec | None:
    file = str(path)
    base = path.resolve().parent

    def bad(key: str, msg: str) -> None:
        issues.append(ConfigIssue(file, key, msg))

    schema_keys = [i.key for i in issues]

    def failed(*keys: str) -> bool:
        """A key (or one inside it) already has a schema error: a check that
        reads it would only judge the default that stands in for it."""
        return any(s == k or s.startswith((k + ".", k + "[")) for s in schema_keys for k in keys)

    # provider

    provider = p.get("provider")
    if provider is not None and provider.kind not in PROVIDERS:
        bad("provider.kind", f"unknown provider {provider.kind!r}; valid: {', '.join(sorted(PROVIDERS))}")
    hosts: list[Machine] = []
    if provider is not None and provider.kind != "hosts" and provider.hosts:
        bad("provider.hosts", f"machines are for kind = \"hosts\"; this file's provider.kind is {provider.kind!r}")
    if provider is not None and provider.kind != "hosts" and provider.engine != "processes":
        bad("provider.engine", f"engine = {provider.engine!r} runs on the hosts provider's machines (kind = \"hosts\"); "
                               f"this file's provider.kind is {provider.kind!r}")
    elif provider is not None and provider.kind == "hosts":
        if not provider.hosts:
            bad("provider.hosts", "kind = \"hosts\" needs the machines: [provider.hosts.NAME] with address, role "
                                  "(endpoint, edge, cloud or link) and optionally user, port, key")
        for hname, h in provider.hosts.items():
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,30}", hname):
                bad(f"provider.hosts.{hname}", "a machine's name is lower-case letters, digits and '-' (up to 31)")
            roles = (h.role,) if isinstance(h.role, str) else tuple(dict.fromkeys(h.role))
            if not roles:
                bad(f"provider.hosts.{hname}.role", "name at least one of endpoint, edge, cloud, link")
            hosts.append(Machine(hname, h.address, h.user, h.port, h.key, roles))
        if provider.engine == "k3s" and provider.k3s_server not in provider.hosts:
            bad("provider.k3s_server", "engine = \"k3s\" needs the machine where `k3s kubectl` reaches the cluster: "
                                       f"one of {', '.join(sorted(provider.hosts)) or 'the machines'}"
                                       + (f" (not {provider.k3s_server!r})" if provider.k3s_server else ""))
        links = [h.name for h in hosts if "link" in h.roles]
        if hosts and len(links) != 1:
            bad("provider.hosts", f"exactly one machine carries the link (role \"link\"): the endpoints' traffic crosses it "
                                  f"to the core; found {len(links)}" + (f" ({', '.join(links)})" if links else ""))

    # nodes
    nodes: list[NodeSpec] = []
    groups = p.get("nodes")
    w = p.get("workload")
    if groups is not None and w is not None and w.apps:  # a mix: its groups say how many endpoints there are
        total = sum(g.endpoints for g in w.apps.values())
        given = "endpoint" in groups.model_fields_set and "count" in groups.endpoint.model_fields_set
        if given and groups.endpoint.count != total and not failed("nodes.endpoint.count"):
            bad("nodes.endpoint.count", f"{groups.endpoint.count} endpoints, but [workload.apps] runs {total} "
                                        f"({', '.join(f'{n}: {g.endpoints}' for n, g in w.apps.items())}); "
                                        "leave the count out, or make the two agree")
        groups = groups.model_copy(update={"endpoint": groups.endpoint.model_copy(update={"count": total})})
    if groups is not None:
        for role in ROLES:
            g = getattr(groups, role)
            period = cpu_period_us(g.cpus, g.speed, g.cpu_period_us)
            if g.count and g.cpus * g.speed * period < MIN_QUOTA_US and not failed(f"nodes.{role}"):
                least = math.ceil(MIN_QUOTA_US / (g.cpus * g.speed))
                bad(f"nodes.{role}.cpu_period_us", f"{period} us gives a quota of {g.cpus * g.speed * period:.0f} us "
                                                   f"(cpus {g.cpus:g} x speed {g.speed:g}), below the kernel's "
                                                   f"{MIN_QUOTA_US} us minimum: use at least {least} us")
            for i in range(g.count):
                nodes.append(NodeSpec(f"{role}{i}", role, i, g.cpus, raw.parse_memory(g.memory), period, g.speed))
        if groups.endpoint.count < 1 and not failed("nodes.endpoint"):
            bad("nodes.endpoint.count", "at least one endpoint is needed to send requests")

    em = p["edge"].manager if p.get("edge") is not None else raw.EdgeManager()
    by_app: dict[str, tuple[str, float]] = {}  # a mix: each endpoint's class and SLO in the cell, from its app
    if w is not None and w.apps:
        eps = iter(n.name for n in nodes if n.role == "endpoint")
        for g in w.apps.values():
            for _ in range(g.endpoints):
                by_app[next(eps, "")] = ("be", g.slo_ms or em.slo_ms) if g.best_effort else ("lc", g.slo_ms or em.slo_ms)
    cell = None
    if p.get("cell") is not None and groups is not None:
        cell = _cell(p["cell"], nodes, bad, failed, base, materialize, by_app)
        if cell is not None:
            b = p["cell"].bulk
            nodes += [NodeSpec(f"bulk{i}", "bulk", i, b.cpus, raw.parse_memory(b.memory)) for i in range(b.count)]

    # mobile network
    mobile = None
    m = p.get("mobile")
    if m is not None and m.mode == "srsran":
        mobile = _srsran(m, p, nodes, bad, failed)
    elif m is not None:
        if m.srsran is not None:
            bad("mobile.srsran", "[mobile.srsran] configures mode = \"srsran\"; this file's mobile.mode is \"emulated\" "
                                 "(set mobile.mode = \"srsran\", or remove the table)")
        up_name, down_name = m.uplink, m.downlink
        if m.preset is not None:
            if m.preset in presets.NOT_PUBLIC:
                bad("mobile.preset", f"{m.preset!r}: {presets.NOT_PUBLIC[m.preset]}; public presets: {', '.join(presets.MOBILE)}")
            elif m.preset not in presets.MOBILE:
                bad("mobile.preset", f"unknown preset {m.preset!r}; valid: {', '.join(presets.MOBILE)}")
            else:
                up_name = up_name or presets.MOBILE[m.preset][0]
                down_name = down_name or presets.MOBILE[m.preset][1]
        refs = {}
        for key, given in (("uplink", up_name), ("downlink", down_name)):
            if given is None:
                if m.preset is None:
                    bad(f"mobile.{key}", "no trace given: set mobile.preset or mobile.uplink and mobile.downlink (archive name or file path)")
                continue
            if failed("mobile.preset", f"mobile.{key}"):
                continue
            ref, problem = _trace(given, base, "up" if key == "uplink" else "down", materialize)
            if problem:
                from_preset = m.preset is not None and getattr(m, key) is None
                bad("mobile.preset" if from_preset else f"mobile.{key}", problem)
            refs[key] = ref
        for d in ("uplink", "downlink"):
            kind, args = getattr(m, f"{d}_queue"), getattr(m, f"{d}_queue_args")
            if failed(f"mobile.{d}_queue", f"mobile.{d}_queue_args"):
                continue
            for problem in raw.queue_args_problems(kind, args):
                bad(f"mobile.{d}_queue_args", problem)
        for i, rule in enumerate(m.bypass):
            if not _valid_bypass(rule):
                bad(f"mobile.bypass[{i}]", f"{rule!r}: expected PREFIX or PREFIX:PORT, e.g. '10.200.2.0/24' or '10.200.2.2:1883'")
        up_ref, down_ref = refs.get("uplink"), refs.get("downlink")
        if up_ref and down_ref:
            mobile = MobileSpec(
                m.preset, up_ref, down_ref, m.uplink_queue, m.uplink_queue_args,
                m.downlink_queue, m.downlink_queue_args, m.uplink_loss, m.downlink_loss, tuple(m.bypass), m.ms_bursts,
                segmentation=_segmentation(m.segmentation, provider), emulator_threads=m.emulator_threads,
            )
        if m.segmentation == "kernel" and provider is not None and provider.kind != "netns":
            bad("mobile.segmentation", f"\"kernel\" (host offloads on, mahimahi-link --gso) is built by the netns provider; "
                                       f"{provider.kind!r} keeps \"emulator\"")

    # core network
    core = None
    c = p.get("core")
    if c is not None:
        delays = {}
        for tier in ("edge", "cloud"):
            v = getattr(c, tier)
            if isinstance(v, str):
                if v in presets.CORE_ONE_WAY_MS:
                    delays[tier] = (presets.CORE_ONE_WAY_MS[v], v)
                else:
                    bad(f"core.{tier}", f"unknown preset {v!r}; valid: {', '.join(presets.CORE_ONE_WAY_MS)} or a one-way delay in ms")
            elif not 0 <= v <= 10000:  # nan too
                bad(f"core.{tier}", f"{v} ms: a one-way delay must be between 0 and 10000 ms")
            else:
                delays[tier] = (float(v), f"{float(v):g} ms")
        if len(delays) == 2:
            core = CoreSpec(delays["edge"][0], delays["edge"][1], delays["cloud"][0], delays["cloud"][1], c.jitter_ms, c.mechanism)

    # workload
    workload = None
    apps: list[AppSpec] = []
    if w is not None:
        workload = _workload(w, base, bad, failed, file, issues)
        if groups is not None and getattr(groups, w.offload).count < 1 and not failed("workload.offload", f"nodes.{w.offload}"):
            bad("workload.offload", f"offloads to {w.offload!r} but nodes.{w.offload}.count is 0")
        endpoints = [n.name for n in nodes if n.role == "endpoint"]
        if workload is not None and not w.apps:
            apps.append(AppSpec(w.app, workload, tuple(endpoints), em.slo_ms, em.urgency_ms or em.slo_ms / 3))
        for i, (name, g) in enumerate(w.apps.items()):
            key = f"workload.apps.{name}"
            if not NAME.fullmatch(name):
                bad(key, "an app's name is letters, digits and _ (it names its files and its cgroup)")
            inherited = {"apps"} | ({"params", "payload", "custom"} if g.app != w.app else set())
            if g.rate is not None or g.utilisation is not None:  # the group states its own load
                inherited |= {"rate", "utilisation"}
            if g.onoff is not None and (g.arrivals or w.arrivals) != "onoff":
                bad(f"{key}.onoff", f"shapes arrivals = \"onoff\"; this app's arrivals are {g.arrivals or w.arrivals!r}")
            if g.rate is not None and g.utilisation is not None:
                bad(f"{key}.utilisation", "give the load as rate (requests/s per endpoint) or as utilisation "
                                          "(a share of the node's capacity for the app), not both")
            merged = {**w.model_dump(exclude=inherited),
                      **g.model_dump(exclude_none=True, exclude={"endpoints", "slo_ms", "urgency_ms", "best_effort"})}
            gw = _workload(raw.Workload.model_validate(merged), base, bad, failed, file, issues, key)
            first = sum(x.endpoints for x in list(w.apps.values())[:i])
            slo = None if g.best_effort else (g.slo_ms or em.slo_ms)
            if g.best_effort and (g.slo_ms or g.urgency_ms):
                bad(f"{key}.best_effort", "a best-effort app has no SLO: drop slo_ms and urgency_ms, or best_effort")
            if gw is not None:
                apps.append(AppSpec(name, gw, tuple(endpoints[first:first + g.endpoints]), slo,
                                    None if slo is None else (g.urgency_ms or em.urgency_ms or slo / 3), i))

    e = p.get("experiment")
    if e is not None and workload is not None and workload.runtime == "container" and ":" in e.output:
        bad("experiment.output", f"{e.output!r}: a ':' cannot be mounted into the workload's containers "
                                 "(docker run -v SRC:DST); choose another folder")
    if e is not None and (any(ord(ch) < 32 or ord(ch) == 127 for ch in e.output) or "{name}" in e.output):
        bad("experiment.output", "a control character (line break, NUL, ...) or '{name}' (the emulator's log-name "
                                 "template) in the output folder's name would send the run's logs elsewhere; "
                                 "choose another folder")
    if (provider is not None and provider.engine == "k3s" and workload is not None
            and "process" in (workload.endpoint.runtime, workload.server.runtime) and not failed("workload.runtime")):
        bad("workload.runtime", "engine = \"k3s\" starts the workload's sides as pods, from container images: "
                                "set workload.runtime = \"container\"")
    if em.kind == "smec" and workload is not None and workload.runtime == "container" and not failed("edge.manager.kind"):
        bad("edge.manager.kind", "SMEC's edge manager runs with process workloads so far; set workload.runtime = \"process\"")
    mix = w is not None and bool(w.apps)
    adm = p["edge"].admission if p.get("edge") is not None else None
    tasks = workload is not None and not mix and workload.app == "edge_tasks"
    admission = None
    if adm is not None and not tasks and not failed("edge.admission") and workload is not None:
        bad("edge.admission", "admission control runs MOSAIC's task classes: set workload.app = \"edge_tasks\" (one app, no [workload.apps])")
    elif tasks and workload is not None:
        adm = adm or raw.EdgeAdmission(policy="fcfs")  # no section: tasks start in arrival order, as Linux would take them
        server = next((n for n in nodes if n.role == workload.offload), None)
        slots = adm.slots or max(1, int(server.cpus if server else 1))
        if workload.runtime != "process" and not failed("workload.runtime"):
            bad("workload.runtime", "edge_tasks runs as processes so far (its executor manages task cgroups through a root agent)")
        if em.kind == "smec" and not failed("edge.manager.kind"):
            bad("edge.manager.kind", "SMEC's manager and MOSAIC's admission both manage the edge's CPU: choose one")
        admission = {**adm.model_dump(), "slots": slots}
    if em.kind == "smec" and em.mode == "cores" and not failed("edge.manager"):
        cores = len(os.sched_getaffinity(0))
        if em.max_cpus != int(em.max_cpus):
            bad("edge.manager.max_cpus", f"{em.max_cpus:g}: cores mode hands out whole cores; give a whole number")
        elif em.max_cpus > cores:
            bad("edge.manager.max_cpus", f"{em.max_cpus:g} cores, but this host has {cores}; give at most {cores}, or mode = \"quota\"")
        elif len(apps) > em.max_cpus:
            bad("edge.manager.mode", f"cores mode gives each of the {len(apps)} apps a core of its own and max_cpus is "
                                     f"{em.max_cpus:g}; raise max_cpus, or use mode = \"quota\" (CPU bandwidth steps)")
    if em.kind == "smec" and em.mode == "quota" and mix and groups is not None and workload is not None and not failed("edge.manager"):
        server = getattr(groups, workload.offload)
        most = min(em.max_cpus, server.cpus)
        if len(apps) * em.unit_cpus > most + 1e-9:
            bad("edge.manager.unit_cpus", f"each of the {len(apps)} apps holds at least one {em.unit_cpus:g}-CPU step, "
                                          f"more than the {most:g} CPUs the manager hands out (max_cpus, and nodes.{workload.offload}.cpus)")
    if em.kind == "smec" and em.mode == "quota" and not mix and groups is not None and workload is not None and not failed("edge.manager"):
        server = getattr(groups, workload.offload)
        if server.cpus > em.max_cpus:
            bad("edge.manager.max_cpus", f"{em.max_cpus:g} is below the server's own {server.cpus:g} CPUs (nodes.{workload.offload}.cpus), "
                                         "where the manager starts")
        elif abs(server.cpus / em.unit_cpus - round(server.cpus / em.unit_cpus)) > 1e-9:
            bad("edge.manager.unit_cpus", f"nodes.{workload.offload}.cpus = {server.cpus:g} is not a whole number of "
                                          f"{em.unit_cpus:g}-CPU steps")
    for role in ("endpoint", "edge", "cloud"):
        wanted = [n.name for n in nodes if n.role == role or (role == "endpoint" and n.role == "bulk")]
        if hosts and wanted and not any(role in h.roles for h in hosts):
            bad("provider.hosts", f"no machine has role {role!r} for {', '.join(wanted)}; add it to a machine's role")
    if issues or e is None or mobile is None or core is None or workload is None or not apps:
        return None
    out = Path(e.output)
    if not out.is_absolute():
        out = Path.cwd() / out
    return ExperimentSpec(
        source=path.resolve(), text=text, sha256=hashlib.sha256(text.encode()).hexdigest(), name=e.name, seed=e.seed,
        duration_s=e.duration_s, warmup_s=e.warmup_s, repetitions=e.repetitions, output=out,
        provider=p["provider"].kind, nodes=tuple(nodes), mobile=mobile, core=core, workload=workload, cell=cell,
        edge_manager=em.kind, smec_slo_ms=em.slo_ms, smec_early_drop=em.early_drop,
        smec_quota=((em.unit_cpus if em.mode == "quota" else 1.0, em.max_cpus, em.urgency_ms or em.slo_ms / 3)
                    if em.kind == "smec" and em.mode != "off" else None),
        smec_mode=em.mode if em.kind == "smec" else "off", apps=tuple(apps), mix=mix,
        smec_mps=em.mps if em.kind == "smec" and mix and workload.server.runtime == "process" else "off",
        admission=admission,
        hosts=tuple(hosts), host_keys=p["provider"].host_keys, provision=p["provider"].provision,
        engine=p["provider"].engine, k3s_server=p["provider"].k3s_server,
        calibration=CalibrationSpec(**p["calibration"].model_dump()),
    )


# What only the emulated link uses: set with mode = "srsran", each is a mistake worth naming.
EMULATED_ONLY = ("preset", "uplink", "downlink", "uplink_queue", "uplink_queue_args", "downlink_queue",
                 "downlink_queue_args", "uplink_loss", "downlink_loss", "bypass", "ms_bursts", "segmentation",
                 "emulator_threads")


def _segmentation(asked: str, provider: raw.Provider | None) -> str:
    """mobile.segmentation as run: "auto" is the kernel's (offloads on, mahimahi-link --gso: a
    tenth of the CPU per Gbit/s, 10 Gbit/s-class links) where the netns provider builds the
    path, and the emulator's MTU frames where another provider does (its own check refuses
    an explicit "kernel" there)."""
    if asked != "auto":
        return asked
    return "kernel" if provider is None or provider.kind == "netns" else "emulator"


def _srsran(m: raw.Mobile, p: dict, nodes: list[NodeSpec], bad, failed) -> MobileSpec | None:
    """mode = "srsran": the real stack in place of the emulated link; what it
    cannot be combined with is named by its key."""
    r = m.srsran or raw.Srsran()
    ok = True

    def no(key: str, why: str) -> None:
        nonlocal ok
        bad(key, why)
        ok = False

    for key in EMULATED_ONLY:
        if key in m.model_fields_set:
            no(f"mobile.{key}", "replays or shapes the emulated link (mode = \"emulated\"); with mode = \"srsran\" "
                                "srsRAN's real stack is the link: remove the key")
    if p.get("cell") is not None:
        no("cell", "the shared emulated cell replaces the emulated link; with mobile.mode = \"srsran\" the cell is "
                   "srsRAN's own (its MAC scheduler): remove [cell]")
    provider = p.get("provider")
    if provider is not None and provider.kind != "netns":
        no("provider.kind", f"mobile.mode = \"srsran\" runs the stack in the netns provider's namespaces; "
                            f"{provider.kind!r} does not place it yet (use kind = \"netns\")")
    endpoints = [n for n in nodes if n.role == "endpoint"]
    if len(endpoints) != 1 and not failed("nodes.endpoint.count"):
        no("nodes.endpoint.count", f"{len(endpoints)} endpoints: srsRAN's cell here carries one UE "
                                   "(srsUE's ZMQ radio is one socket pair; over the air, one phone): set count = 1")
    core = p.get("core")
    if core is not None and core.mechanism == "mahimahi-link":
        no("core.mechanism", "with mobile.mode = \"srsran\" no emulator is on the path to add the core delay: "
                             "use \"netem\" (or \"auto\", which picks it)")
    w = p.get("workload")
    if w is not None and w.runtime == "container":
        no("workload.runtime", "with mobile.mode = \"srsran\" the endpoint runs as a process: srsUE's tunnel "
                               "is put in the endpoint's named namespace, which a container's sandbox does not have")
    if r.generation == "5g":  # the rest of the table is the 5G files' business
        bad("mobile.srsran.generation", "continuum run drives srsRAN 4G (srsENB, srsEPC, srsUE); for 5G (srsRAN Project's "
                                        "gNB or SMEC's fork, Open5GS) playbooks/srsran-5g.yml installs a lab machine and "
                                        "`python3 -m srsran_integration configs FILE OUT` writes the cell's files "
                                        "(srsran-integration/README.md): use generation = \"4g\" to run here")
        return None
    if r.generation == "4g" and r.band is not None and r.band != lte.band(r.arfcn):
        no("mobile.srsran.band", f"EARFCN {r.arfcn} is in band {lte.band(r.arfcn)}, not {r.band} (leave band out for 4g)")
    if r.generation == "4g" and r.policy != "pf":
        no("mobile.srsran.policy", f"{r.policy!r} picks SMEC's fork's 5G scheduler policy (generation = \"5g\", "
                                   "written by `python3 -m srsran_integration configs`); srsENB schedules with its own")
    prb = lte.PRB_OF_MHZ.get(float(r.bandwidth_mhz))
    if prb is None:
        no("mobile.srsran.bandwidth_mhz", f"{r.bandwidth_mhz:g} MHz is not an LTE channel; valid: "
                                          + ", ".join(f"{mhz:g} ({n} PRBs)" for mhz, n in lte.PRB_OF_MHZ.items()))
        prb = 25
    cell = lte.Cell(radio=r.radio, earfcn=r.arfcn, prb=prb, tx_gain=r.tx_gain, rx_gain=r.rx_gain,
                    device_args=r.device_args, ue=r.ue, ue_device_args=r.ue_device_args, zmq_port=r.zmq_port)
    for key, why in lte.problems(cell):
        if key != "bandwidth_mhz":
            no(f"mobile.srsran.{key}", why)
    if r.ue == "cots" and not any(k == "ue" for k, _ in lte.problems(lte.Cell(radio=r.radio, ue=r.ue))):
        no("mobile.srsran.ue", "a phone (ue = \"cots\") carries its own traffic, not the emulated endpoint's: "
                               "continuum run needs ue = \"srsue\"; for a phone, srsran_integration writes the eNB, "
                               "EPC and subscriber files (see srsran-integration/README.md)")
    prefix = Path(r.prefix)
    if not prefix.is_absolute():
        no("mobile.srsran.prefix", f"{r.prefix!r}: srsRAN's installation prefix is an absolute path (e.g. /usr/local)")
    if not ok or failed("mobile"):
        return None
    return MobileSpec(None, None, None, "infinite", "", "infinite", "", 0.0, 0.0, (), False,
                      mode="srsran", srsran=SrsranSpec(r.generation, cell, prefix, r.attach_timeout_s))


def _trace(given: str, base: Path, direction: str, materialize: bool) -> tuple[TraceRef | None, str | None]:
    """A trace for mahimahi-link's --link option: resolved, and with no ',' in its path."""
    ref, problem = traces.resolve(given, base, direction, materialize)
    if ref is not None and "," in str(ref.path):
        return None, (f"trace {given!r} lies at {ref.path}, whose ',' would split mahimahi-link's "
                      "--link option; move or rename it (or the trace cache, $CONTINUUM_TRACE_CACHE)")
    return ref, problem


def _cell(c: raw.Cell, nodes: list[NodeSpec], bad, failed, base: Path, materialize: bool,
          by_app: dict[str, tuple[str, float]] | None = None) -> CellSpec | None:
    """Members, classes and timings of the [cell] table; every problem reported.
    by_app: in a mix, an endpoint's class and SLO come from its app unless [cell.ue.NAME] says."""
    by_app = by_app or {}
    ok = True
    if c.uplink == "private" and c.downlink == "private":
        bad("cell", "both directions are private: name a scheduler for cell.uplink or cell.downlink "
                    "(rr, pf, smec; tutti for the uplink), or remove [cell]")
        ok = False
    if c.uplink == "tutti" and not c.uplink_signalling:
        bad("cell.uplink_signalling", "tutti learns request starts from the edge instead of BSRs; "
                                      "it needs uplink_signalling = true (what it improves on)")
        ok = False
    slot_ms = c.slot_us / 1000
    sr_slots = c.sr_period_ms / slot_ms
    if not failed("cell.sr_period_ms", "cell.slot_us") and abs(sr_slots - round(sr_slots)) > 1e-9:
        bad("cell.sr_period_ms", f"{c.sr_period_ms:g} ms is not a whole number of {c.slot_us} us slots "
                                 f"(e.g. {max(1, round(sr_slots)) * slot_ms:g})")
        ok = False
    if c.uplink_signalling and c.sr_grant_blocks > c.blocks and not failed("cell.sr_grant_blocks", "cell.blocks"):
        bad("cell.sr_grant_blocks", f"{c.sr_grant_blocks} is more than the cell's {c.blocks} blocks")
        ok = False
    endpoints = [n.name for n in nodes if n.role == "endpoint"]
    bulk = [f"bulk{i}" for i in range(c.bulk.count)]
    if c.members is None:
        names = endpoints + bulk
    else:
        names = []
        for i, name in enumerate(c.members):
            if name not in endpoints + bulk:
                bad(f"cell.members[{i}]", f"{name!r} is not an endpoint or bulk UE of this file; valid: {', '.join(endpoints + bulk)}")
                ok = False
            elif name in names:
                bad(f"cell.members[{i}]", f"{name!r} is named twice")
                ok = False
            else:
                names.append(name)
        missing = [b for b in bulk if b not in names]
        if missing:
            bad("cell.members", f"the bulk UEs are cell traffic: list {', '.join(missing)} too (or leave members out: every UE)")
            ok = False
    for name in c.ue:
        if name not in names:
            bad(f"cell.ue.{name}", f"not a member of the cell; members: {', '.join(names) or 'none'}")
            ok = False
        elif name in bulk and c.ue[name].class_ == "lc":
            bad(f"cell.ue.{name}.class", "a bulk UE moves a file as fast as it can: it is best effort (be)")
            ok = False
    if not names and not bulk:
        bad("cell.members", "the cell has no members")
        ok = False
    members = []
    for name in names:
        u = c.ue.get(name, raw.CellUe())
        bulk_ue = name in bulk
        own: dict[str, TraceRef | None] = {}
        for d in ("uplink", "downlink"):
            given = getattr(u, d)
            own[d] = None
            if given is not None:
                ref, problem = _trace(given, base, "up" if d == "uplink" else "down", materialize)
                if problem:
                    bad(f"cell.ue.{name}.{d}", problem)
                    ok = False
                own[d] = ref
        app_cls, app_slo = by_app.get(name, (None, None))
        members.append(CellMember(name, "be" if bulk_ue else (u.class_ or app_cls or c.class_), u.slo_ms or app_slo or c.slo_ms,
                                  own["uplink"], own["downlink"]))
    if not ok:
        return None
    return CellSpec(
        uplink=None if c.uplink == "private" else c.uplink, downlink=None if c.downlink == "private" else c.downlink,
        slot_us=c.slot_us, blocks=c.blocks, uplink_signalling=c.uplink_signalling, sr_period_slots=round(sr_slots),
        k2_slots=c.k2_slots, sr_grant_blocks=c.sr_grant_blocks, periodic_bsr_slots=max(1, round(c.periodic_bsr_ms / slot_ms)) if c.periodic_bsr_ms else 0,
        be_starvation_slots=max(1, round(c.be_starvation_ms / slot_ms)), members=tuple(members), bulk_direction=c.bulk.direction,
        pf_alpha=c.pf_alpha, pf_beta=c.pf_beta, pf_window_slots=max(1, round(c.pf_window_ms / slot_ms)),
    )


def _workload(w: raw.Workload, base: Path, bad, failed, file: str, issues: list[ConfigIssue], key: str = "workload") -> WorkloadSpec | None:
    app = APPS.get(w.app)
    if app is None and not failed(f"{key}.app"):
        bad(f"{key}.app", f"unknown app {w.app!r}; valid: {', '.join(sorted(APPS))}")
    params: dict[str, Any] = dict(w.params)
    if w.utilisation is not None and "rate" in w.model_fields_set and key == "workload":
        bad(f"{key}.utilisation", "give the load as rate (requests/s per endpoint) or as utilisation "
                                  "(a share of the node's capacity for the app), not both")
    if w.utilisation is not None and app is not None and not app.builtin:
        bad(f"{key}.utilisation", f"{w.app!r} apps bring their own server, which calibration cannot time "
                                  "(it calls a built-in app's model in-process): give rate instead")
    if key == "workload" and "onoff" in w.model_fields_set and w.arrivals != "onoff" and not failed(f"{key}.arrivals"):
        bad(f"{key}.onoff", f"shapes arrivals = \"onoff\"; this load's arrivals are {w.arrivals!r}")
    if app is not None and app.params is not None:
        model = _section(app.params, w.params, file, f"{key}.params", issues)
        params = model.model_dump() if model is not None else params

    pl = w.payload.model_dump(exclude_none=True)
    if app is not None and app.payload_from_params and w.payload.model_fields_set and not failed(f"{key}.payload"):
        bad(f"{key}.payload", f"{w.app}'s request sizes follow its own [{key}.params] (its video's resolution and "
                              "bitrate), not [workload.payload]; remove the table")
    if app is not None and app.builtin and not app.images[0] and w.runtime == "container" and not failed(f"{key}.runtime", "workload.runtime"):
        bad("workload.runtime", f"{w.app} runs as processes only (it has no container images yet); set workload.runtime = \"process\"")
    if app is not None:
        pl.setdefault("min_bytes", app.default_payload[0])
        pl.setdefault("max_bytes", app.default_payload[1])
    if not failed(f"{key}.payload"):
        lo, hi = pl.get("min_bytes"), pl.get("max_bytes")
        if lo is not None and hi is not None and lo > hi:
            bad(f"{key}.payload", f"min_bytes {lo} > max_bytes {hi}")
        if app is not None and app.payload_limits and lo is not None and hi is not None:
            a, b = app.payload_limits
            if lo < a or hi > b:
                bad(f"{key}.payload", f"{w.app} makes {app.payload_unit} of {a} to {b} bytes; got {lo}..{hi}")
        if pl["distribution"] == "fixed" and "mean_bytes" not in pl and lo != hi:
            bad(f"{key}.payload.mean_bytes", "distribution \"fixed\" needs mean_bytes (or min_bytes = max_bytes)")
    if app is None:
        return None

    sides = {}
    if w.app == "custom":
        c = w.custom
        if c is None:
            bad(f"{key}.custom", "app = \"custom\" needs a [workload.custom] table with endpoint_image or "
                                   "endpoint_command, and server_image or server_command")
            return None
        for side in ("endpoint", "server"):
            image, command = getattr(c, f"{side}_image"), tuple(getattr(c, f"{side}_command"))
            if not image and not command:
                bad(f"{key}.custom.{side}_command", f"give {side}_image or {side}_command for the {side} side")
            if w.runtime == "container" and not image:
                bad(f"{key}.custom.{side}_image", "workload.runtime is container: give an image for this side")
            # An image means a container (the command, if any, is its command); a command alone, a process.
            sides[side] = SideSpec("container" if image else "process", image, command)
        env = dict(c.environment)
        for var in env:
            if var.startswith("CONTINUUM_"):
                bad(f"{key}.custom.environment.{var}", "CONTINUUM_* variables are set by continuum (the contract)")
    else:
        if w.custom is not None:
            bad(f"{key}.custom", f"only for app = \"custom\" (app is {w.app!r})")
        env = {}
        for side, image in zip(("endpoint", "server"), app.images):
            sides[side] = SideSpec(w.runtime, image if w.runtime == "container" else None, ())
    return WorkloadSpec(
        w.app, w.offload, w.rate, w.timeout_s, MappingProxyType(params), w.arrivals, w.burst, w.qos,
        MappingProxyType(pl), MappingProxyType(w.congestion_control.model_dump()), sides["endpoint"], sides["server"],
        MappingProxyType(env), base, w.run_as_root, w.workers, w.utilisation,
        MappingProxyType(w.onoff.model_dump() if w.arrivals == "onoff" else {}),
    )


def _valid_bypass(rule: str) -> bool:
    import ipaddress

    prefix, _, port = rule.partition(":") if rule.count(":") == 1 else (rule, "", "")
    try:
        ipaddress.ip_network(prefix, strict=False)
    except ValueError:
        return False
    return port == "" or (port.isdigit() and 0 < int(port) < 65536)
