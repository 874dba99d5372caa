"""The network plan: pure data computed from an ExperimentSpec, built before
anything exists on the host (like Mininet's Topo), printed by --dry-run, built
by a provider and then checked against the live system by `verify.py`.

Topology (one "ran" namespace runs ONE mahimahi-link process for all UEs):

    endpoint_i  eth0 ==veth== ue_i  [ran: mahimahi-link forward]  core_i ==veth== ran_i  [core router]
                                                                          [core router] edge_j ==veth== eth0  edge_j
                                                                          [core router] cloud_k ==veth== eth0  cloud_k

ran bridges ue_i <-> core_i at layer 2 through the link: uplink trace for
frames from the UE, downlink trace for frames toward it, so each direction is
shaped exactly once. The per-tier one-way core delay is applied by the same
process (--delay by destination prefix uplink, source prefix downlink).

With mobile.emulator = "mahimahi" each endpoint's own upstream mm-link (patched:
mahimahi-patches/) is its link, in a namespace between it and ran:

    endpoint_i  eth0 ==veth== ue [mm-link's shell] ~TUN~ mm-link ~TUN~ [mm_i] eth0 ==veth== ue_i  [ran: delay only] ...

mm-link --pass-through takes `ue` (the endpoint's gateway) into its shell, so the
endpoint's traffic crosses its uplink queue and traffic routed to it its downlink
queue, once each; ran lets every frame past its trace and adds only the core delay.

With mobile.mode = "srsran" the stack takes the link's place:

    endpoint_0  tun_srsue ~~ srsUE ~ZMQ radio~ srsENB ~S1~ srsEPC  [epc] eth0 ==veth== ue_0  [ran: delay only] ...

srsRAN's programs run in the epc namespace (the UE's tunnel is moved into
the endpoint's), which takes the endpoint's place towards ran and the core.

Addresses live in 10.200.0.0/14 and only inside this run's namespaces:
    endpoint i: 10.200.i.2/24 (core side 10.200.i.1)
    bulk UE i:  10.200.(100+i).2/24 (a shared cell's best-effort file transfers)
    mm-link i:  10.200.(64+i).2/24 (emulator = "mahimahi": its namespace's side toward ran; core side .1)
    probe addr: 10.201.i.2/32 on endpoint i (bypasses the trace, keeps the core delay:
                used to verify core RTT without the cellular link's waiting time)
    edge j:     10.202.j.2/24 (core side 10.202.j.1)
    cloud k:    10.203.k.2/24 (core side 10.203.k.1)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from srsran_integration import lte

if TYPE_CHECKING:  # the plan is built from a spec; at run time it needs only its values
    from continuum.config import CellSpec, ExperimentSpec, Machine

ENDPOINT_NET, PROBE_NET, EDGE_NET, CLOUD_NET = "10.200", "10.201", "10.202", "10.203"
ALL_NETS = "10.200.0.0/14"
TIER_NET = {"edge": EDGE_NET, "cloud": CLOUD_NET}
MQTT_PORT = 1883
BULK_NET_OFFSET = 100  # bulk UE i lives in 10.200.(100+i).0/24 (endpoints stay below 64)
MM_NET_OFFSET = 64  # emulator = "mahimahi": endpoint i's mm-link namespace reaches ran from 10.200.(64+i).0/24
MM_DEVICE = "ue"  # ...and holds the endpoint's gateway on this device, which mm-link takes into its shell
BULK_PORT = 5201  # bulk UE i's iperf3 server listens on BULK_PORT + i on the offload target
NOTICE_PORT = 47000  # Tutti: the edge's request notices to a UE's address on this UDP port
NODE_IF = "eth0"  # a node's one interface
# mobile.mode = "srsran": the EPC's SGi network and the UE's static address in it
UE_NET, UE_ADDRESS = f"{lte.UE_POOL}.0/24", f"{lte.UE_POOL}.2"
EPC = "epc"  # the namespace srsRAN's programs run in (mobile.mode = "srsran")


@dataclass(frozen=True)
class Limits:
    """A node's cgroup: CPU quota (in CPUs, per a CFS period) and memory limit."""

    cpus: float  # as the file says (a VM gets ceil(cpus) vCPUs)
    memory_bytes: int
    period_us: int = 100_000
    speed: float = 1.0  # < 1: slower cores, emulated by a quota of cpus x speed over a short period

    @property
    def quota_cpus(self) -> float:
        return self.cpus * self.speed


@dataclass(frozen=True)
class PlanNode:
    """One namespace of the run: a workload node, or the ran/core infrastructure."""

    name: str  # logical name: endpoint0, edge0, cloud0, ran, core
    role: str  # endpoint | bulk | edge | cloud | ran | core | mm (an endpoint's mm-link, emulator = "mahimahi")
    address: str | None = None  # where its workload is reached (no prefix)
    limits: Limits | None = None  # None: infrastructure, not limited
    sandboxed: bool = False  # its namespace comes from a sandbox container (container workloads)
    forwarding: bool = False  # routes between its interfaces (core)


@dataclass(frozen=True)
class Interface:
    namespace: str  # logical namespace: a node name, "ran" or "core"
    name: str
    address: str | None  # CIDR, None for the emulator's unnumbered ports
    # Segmentation/receive offloads off: the link must see the 1500-byte frames
    # a cellular link carries, not GSO super-frames.
    offloads: bool = False


@dataclass(frozen=True)
class Veth:
    a: Interface
    b: Interface


@dataclass(frozen=True)
class Address:
    """An extra address on an interface (the endpoints' probe addresses)."""

    namespace: str
    dev: str
    cidr: str


@dataclass(frozen=True)
class Route:
    namespace: str
    destination: str
    via: str | None
    source: str | None = None


@dataclass(frozen=True)
class Neighbour:
    """A permanent neighbour entry: in `namespace`, `address` on `dev` is the
    MAC of `peer_dev` in `peer_namespace` (known only once both exist)."""

    namespace: str
    dev: str
    address: str
    peer_namespace: str
    peer_dev: str


@dataclass(frozen=True)
class CoreDelay:
    """One tier's one-way core-network delay: applied by the emulator to
    traffic to/from `prefix`, or by netem on both ends of the tier's core links.
    A node of its own (`node`): the emulator's rule for that node's /24, which
    a [[timeline]] step changes apart from its tier's (the first rule that
    matches a packet applies, so these come before the tiers')."""

    tier: str
    prefix: str
    one_way_ms: float
    jitter_ms: float
    netem_devices: tuple[tuple[str, str], ...]  # (namespace, dev)
    node: str | None = None


@dataclass(frozen=True)
class CellLink:
    """One UE's cellular link inside the ran namespace."""

    name: str  # the endpoint's node name
    ue_if: str
    core_if: str


@dataclass(frozen=True)
class MmShell:
    """emulator = "mahimahi": one endpoint's mm-link, started in `namespace`, which
    takes `device` (the endpoint's gateway) into its shell; the endpoint's probe
    address passes its address filter and is routed to the endpoint from inside."""

    endpoint: str
    namespace: str
    device: str
    endpoint_address: str
    probe_address: str


@dataclass(frozen=True)
class Plan:
    nodes: tuple[PlanNode, ...]  # workload nodes in spec order, then "ran", "core"
    veths: tuple[Veth, ...]
    extra_addresses: tuple[Address, ...]
    routes: tuple[Route, ...]
    neighbours: tuple[Neighbour, ...]
    cell_links: tuple[CellLink, ...]
    core_delays: tuple[CoreDelay, ...]
    delay_mechanism: str  # "mahimahi-link" or "netem" (core.mechanism, "auto" decided here)
    bypass: tuple[str, ...]
    probe_addresses: dict  # endpoint name -> probe address (bypasses the trace, keeps the core delay)
    offload_target: str  # node name that serves the workload (edge0 or cloud0)
    cell: CellSpec | None = None  # the shared cell; its members are cell_links by name
    # an edge system makes child cgroups under the offload node's (per app or per task): cgroups.create's `leaf`
    per_app_cgroups: bool = False
    # an edge system runs a root daemon on the offload node's machine (SMEC's manager, MOSAIC's agent):
    # the qemu and hosts providers put that machine in site.yml's edge_manager group
    edge_daemon: bool = False
    run_as_root: bool = False  # workload.run_as_root: else process workloads run as runtime.WORKLOAD_USER
    # The hosts provider: the machines, which one each namespace (node, ran, core) is on,
    # how their SSH host keys are trusted, whether playbooks/site.yml provisions them first,
    # and the requirement files the offload node's servers install there from the wheelhouse.
    machines: tuple[Machine, ...] = ()
    placement: dict[str, str] = field(default_factory=dict)
    host_keys: str = "known"
    provision: bool = True
    requirements: tuple[str, ...] = ()
    debian_packages: tuple[str, ...] = ()  # and the Debian packages they need there (the workload role installs them)
    # What starts the workloads there: continuum over SSH ("processes"), or the
    # machines' k3s cluster as pods ("k3s", whose API is reached on k3s_server).
    engine: str = "processes"
    k3s_server: str | None = None
    images: tuple[str, ...] = ()  # the workload's container images (engine k3s, or docker_nodes: loaded by provisioning)
    docker_nodes: tuple[str, ...] = ()  # nodes that start a workload side with `docker run` (runtime = "container")
    vm_cpu: str = "auto"  # the qemu provider: the VMs' CPU model ([provider] vm_cpu)
    vm_manager: str = "qemu"  # the qemu provider: QEMU started by continuum, or transient libvirt domains
    gso: bool = False  # mobile.segmentation = "kernel": every veth keeps its offloads, the emulator runs --gso
    mahimahi: tuple[MmShell, ...] = ()  # emulator = "mahimahi": each endpoint's mm-link (ran adds only the core delay)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    @property
    def addresses(self) -> dict[str, str]:
        """node name -> IPv4 address (no prefix), workload nodes only."""
        return {n.name: n.address for n in self.nodes if n.address}

    @property
    def delay_rules(self) -> tuple[tuple[str, float], ...]:
        """(prefix, one-way ms) for the emulator's --delay."""
        return tuple((d.prefix, d.one_way_ms) for d in self.core_delays)

    def node(self, name: str) -> PlanNode:
        return next(n for n in self.nodes if n.name == name)


def delay_mechanism(spec: ExperimentSpec) -> str:
    """`auto`: the emulator's delay (µs-precise) unless jitter needs netem."""
    m = spec.core.mechanism
    if m == "auto":
        return "netem" if spec.core.jitter_ms > 0 else "mahimahi-link"
    return m


def build(spec: ExperimentSpec) -> Plan:
    w = spec.workload
    offload_target = spec.role(w.offload)[0].name
    boxed = ({n.name for n in spec.role("endpoint")} if w.endpoint.runtime == "container" else set()) | (
        {offload_target} if w.server.runtime == "container" else set())
    nodes: list[PlanNode] = []
    veths: list[Veth] = []
    extra: list[Address] = []
    routes: list[Route] = []
    neighbours: list[Neighbour] = []
    probes: dict[str, str] = {}
    links: list[CellLink] = []
    delays: list[CoreDelay] = []
    srsran = spec.mobile.srsran is not None
    mahimahi = spec.mobile.emulator == "mahimahi"
    shells: list[MmShell] = []
    for n in spec.role("endpoint") + spec.role("bulk"):
        i = n.index + (BULK_NET_OFFSET if n.role == "bulk" else 0)  # the UE's subnet; interface names say which
        if srsran:
            _srsran_ue(n, i, nodes, veths, routes, neighbours, links)
            continue
        ip, gw = f"{ENDPOINT_NET}.{i}.2", f"{ENDPOINT_NET}.{i}.1"
        nodes.append(PlanNode(n.name, n.role, ip, Limits(n.cpus, n.memory_bytes, n.period_us, n.speed), n.name in boxed))
        probes[n.name] = f"{PROBE_NET}.{i}.2"
        extra.append(Address(n.name, NODE_IF, f"{probes[n.name]}/32"))
        if mahimahi:
            shells.append(_mahimahi_ue(n, i, ip, gw, probes[n.name], nodes, veths, routes, neighbours, links))
            continue
        veths.append(Veth(Interface(n.name, NODE_IF, f"{ip}/24"), Interface("ran", f"ue{i}", None)))
        veths.append(Veth(Interface("ran", f"core{i}", None), Interface("core", f"ran{i}", f"{gw}/24")))
        links.append(CellLink(n.name, f"ue{i}", f"core{i}"))
        routes.append(Route(n.name, ALL_NETS, gw))
        routes.append(Route("core", f"{probes[n.name]}/32", ip))
        # A cellular link carries no ARP: both ends of each UE link get permanent
        # entries, so no address resolution (and no neighbour-cache expiry
        # stalling a request) ever crosses the emulated link.
        neighbours.append(Neighbour(n.name, NODE_IF, gw, "core", f"ran{i}"))
        neighbours.append(Neighbour("core", f"ran{i}", ip, n.name, NODE_IF))
    for role in ("edge", "cloud"):
        tier = spec.role(role)
        for n in tier:
            net = f"{TIER_NET[role]}.{n.index}"
            nodes.append(PlanNode(n.name, n.role, f"{net}.2", Limits(n.cpus, n.memory_bytes, n.period_us, n.speed), n.name in boxed))
            veths.append(Veth(Interface("core", n.name, f"{net}.1/24"), Interface(n.name, NODE_IF, f"{net}.2/24")))
            routes.append(Route(n.name, ALL_NETS, f"{net}.1"))
            if srsran:  # the UE's address is the EPC's, outside the run's nets
                routes.append(Route(n.name, UE_NET, f"{net}.1"))
        if tier:
            devices = tuple(d for n in tier for d in (("core", n.name), (n.name, NODE_IF)))
            delays.append(CoreDelay(role, f"{TIER_NET[role]}.0.0/16", spec.one_way_ms(role), spec.core.jitter_ms, devices))
    own = sorted({e.node for e in spec.timeline if e.kind == "core_delay" and e.node}, key=lambda n: (n.rstrip("0123456789"), len(n), n))
    # nodes a timeline steps apart from their tier: the emulator's rule for each, before the tiers'
    delays[:0] = [CoreDelay(n.role, f"{TIER_NET[n.role]}.{n.index}.0/24", spec.one_way_ms(n.role), spec.core.jitter_ms, (),
                            node=n.name) for n in map(spec.node, own)]
    nodes += [PlanNode("ran", "ran"), PlanNode("core", "core", forwarding=True)]
    gso = spec.mobile.segmentation == "kernel"
    if gso:  # super-frames reach the emulator whole, and leave it as the kernel's own GRO'd frames
        veths = [Veth(replace(v.a, offloads=True), replace(v.b, offloads=True)) for v in veths]
    return Plan(
        gso=gso,
        nodes=tuple(nodes),
        veths=tuple(veths),
        extra_addresses=tuple(extra),
        routes=tuple(routes),
        neighbours=tuple(neighbours),
        cell_links=tuple(links),
        core_delays=tuple(delays),
        delay_mechanism=delay_mechanism(spec),
        bypass=("0.0.0.0/0",) if srsran or mahimahi else (f"{PROBE_NET}.0.0/16", *spec.mobile.bypass),
        mahimahi=tuple(shells),
        probe_addresses=probes,
        offload_target=offload_target,
        cell=spec.cell,
        per_app_cgroups="child_cgroups" in spec.edge_needs,
        edge_daemon="node_daemon" in spec.edge_needs,
        run_as_root=spec.workload.run_as_root,
        machines=spec.hosts,
        placement=placement(spec) if spec.hosts else {},
        host_keys=spec.host_keys,
        provision=spec.provision,
        requirements=server_requirements(spec),
        debian_packages=server_packages(spec),
        engine=spec.engine,
        k3s_server=spec.k3s_server,
        images=workload_images(spec),
        docker_nodes=docker_nodes(spec, offload_target),
        vm_cpu=spec.vm_cpu,
        vm_manager=spec.vm_manager,
    )


def _mahimahi_ue(n, i: int, ip: str, gw: str, probe: str, nodes: list[PlanNode], veths: list[Veth], routes: list[Route],
                 neighbours: list[Neighbour], links: list[CellLink]) -> MmShell:
    """emulator = "mahimahi": the endpoint's gateway is in the namespace mm-link starts in
    (and then in its shell), whose other side reaches the core through ran as an endpoint
    does in the emulated mode, with mahimahi-link there letting every frame past its trace."""
    shell = f"mm{i}"
    transit, transit_gw = f"{ENDPOINT_NET}.{MM_NET_OFFSET + i}.2", f"{ENDPOINT_NET}.{MM_NET_OFFSET + i}.1"
    nodes.append(PlanNode(shell, "mm", forwarding=True))
    veths.append(Veth(Interface(n.name, NODE_IF, f"{ip}/24"), Interface(shell, MM_DEVICE, f"{gw}/24")))
    veths.append(Veth(Interface(shell, NODE_IF, f"{transit}/24"), Interface("ran", f"ue{i}", None)))
    veths.append(Veth(Interface("ran", f"core{i}", None), Interface("core", f"ran{i}", f"{transit_gw}/24")))
    links.append(CellLink(shell, f"ue{i}", f"core{i}"))
    routes.append(Route(n.name, ALL_NETS, gw))
    routes.append(Route(shell, ALL_NETS, transit_gw))
    routes.append(Route("core", f"{ENDPOINT_NET}.{i}.0/24", transit))
    routes.append(Route("core", f"{probe}/32", transit))
    neighbours.append(Neighbour(n.name, NODE_IF, gw, shell, MM_DEVICE))
    neighbours.append(Neighbour(shell, NODE_IF, transit_gw, "core", f"ran{i}"))
    neighbours.append(Neighbour("core", f"ran{i}", transit, shell, NODE_IF))
    return MmShell(n.name, shell, MM_DEVICE, ip, probe)


def _srsran_ue(n, i: int, nodes: list[PlanNode], veths: list[Veth], routes: list[Route],
               neighbours: list[Neighbour], links: list[CellLink]) -> None:
    """mobile.mode = "srsran": the endpoint's only way out is srsUE's tunnel,
    which appears in its namespace once the UE has attached (the runner then
    routes the run's nets into it). srsRAN's programs run in the epc
    namespace, whose SGi side is wired to the core exactly as an endpoint is
    in the emulated mode: through ran, where mahimahi-link lets every frame
    past its trace (bypass 0.0.0.0/0) and adds only the core delay, as it
    does for the verification probes; epc forwards between SGi and the core."""
    ip, gw = f"{ENDPOINT_NET}.{i}.2", f"{ENDPOINT_NET}.{i}.1"
    nodes.append(PlanNode(n.name, n.role, UE_ADDRESS, Limits(n.cpus, n.memory_bytes, n.period_us, n.speed)))
    nodes.append(PlanNode(EPC, EPC, ip, forwarding=True))
    veths.append(Veth(Interface(EPC, NODE_IF, f"{ip}/24"), Interface("ran", f"ue{i}", None)))
    veths.append(Veth(Interface("ran", f"core{i}", None), Interface("core", f"ran{i}", f"{gw}/24")))
    links.append(CellLink(EPC, f"ue{i}", f"core{i}"))
    routes.append(Route(EPC, ALL_NETS, gw))
    routes.append(Route("core", UE_NET, ip))
    neighbours.append(Neighbour(EPC, NODE_IF, gw, "core", f"ran{i}"))
    neighbours.append(Neighbour("core", f"ran{i}", ip, EPC, NODE_IF))


def placement(spec: ExperimentSpec) -> dict[str, str]:
    """node name (and ran, core) -> machine name: round robin over the machines of each role."""
    by_role = {r: [h.name for h in spec.hosts if r in h.roles] for r in ("endpoint", "edge", "cloud", "link")}
    out: dict[str, str] = {}
    for role in ("endpoint", "edge", "cloud"):
        members = [n for n in spec.nodes if n.role == role or (role == "endpoint" and n.role == "bulk")]
        for i, n in enumerate(members):
            out[n.name] = by_role[role][i % len(by_role[role])]
    out["ran"] = out["core"] = by_role["link"][0]
    return out


def workload_images(spec: ExperimentSpec) -> tuple[str, ...]:
    """The images the workload's containers run: what k3s's containerd (engine k3s) or the
    Docker of a VM that runs a side in a container must have (provisioning loads them)."""
    from continuum.engines import containers

    return tuple(containers.ref(i) for i in containers.spec_images(spec))


def docker_nodes(spec: ExperimentSpec, offload_target: str) -> tuple[str, ...]:
    """Nodes that start a side of the workload with `docker run` (not as k3s's pods)."""
    from continuum.engines import containers

    return () if spec.engine == "k3s" else tuple(containers.container_nodes(spec, offload_target))


def server_packages(spec: ExperimentSpec) -> tuple[str, ...]:
    """Debian packages the offload node's servers import beyond the workload role's common ones."""
    from continuum.workloads import REGISTRY

    return tuple(sorted({p for app in spec.apps if app.workload.server.runtime == "process"
                         and (kind := REGISTRY.get(app.workload.app)) for p in kind.debian_packages}))


def server_requirements(spec: ExperimentSpec) -> tuple[str, ...]:
    """Requirement files the offload node's servers need beyond Debian's
    packages (those their container images are built with; a server in its container has them)."""
    from continuum.engines import containers
    from continuum.workloads import REGISTRY

    out = set()
    for app in spec.apps:
        kind = REGISTRY.get(app.workload.app)
        if app.workload.server.runtime == "container":
            continue
        req = containers.IMAGES.get(kind.images[1], ("", None))[1] if kind and kind.images[1] else None
        if req:
            out.add(f"workloads/{req}")
    return tuple(sorted(out))
