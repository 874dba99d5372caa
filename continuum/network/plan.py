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

Addresses live in 10.200.0.0/14 and only inside this run's namespaces:
    endpoint i: 10.200.i.2/24 (core side 10.200.i.1)
    probe addr: 10.201.i.2/32 on endpoint i (bypasses the trace, keeps the core delay:
                used to verify core RTT without the cellular link's waiting time)
    edge j:     10.202.j.2/24 (core side 10.202.j.1)
    cloud k:    10.203.k.2/24 (core side 10.203.k.1)
"""

from __future__ import annotations

from dataclasses import dataclass

from continuum.config import ExperimentSpec

ENDPOINT_NET, PROBE_NET, EDGE_NET, CLOUD_NET = "10.200", "10.201", "10.202", "10.203"
ALL_NETS = "10.200.0.0/14"
TIER_NET = {"edge": EDGE_NET, "cloud": CLOUD_NET}
MQTT_PORT = 1883


@dataclass(frozen=True)
class Interface:
    namespace: str  # logical namespace: a node name, "ran" or "core"
    name: str
    address: str | None  # CIDR, None for the emulator's unnumbered ports


@dataclass(frozen=True)
class Veth:
    a: Interface
    b: Interface


@dataclass(frozen=True)
class Route:
    namespace: str
    destination: str
    via: str | None
    source: str | None = None


@dataclass(frozen=True)
class CellLink:
    """One UE's cellular link inside the ran namespace."""

    name: str  # the endpoint's node name
    ue_if: str
    core_if: str


@dataclass(frozen=True)
class Plan:
    namespaces: tuple[str, ...]  # logical names: nodes, then "ran", "core"
    veths: tuple[Veth, ...]
    routes: tuple[Route, ...]
    addresses: dict  # node name -> IPv4 address (no prefix)
    probe_addresses: dict  # endpoint name -> probe address
    cell_links: tuple[CellLink, ...]
    delay_rules: tuple[tuple[str, float], ...]  # (prefix, one-way ms)
    bypass: tuple[str, ...]
    offload_target: str  # node name that serves the workload (edge0 or cloud0)


def build(spec: ExperimentSpec) -> Plan:
    veths: list[Veth] = []
    routes: list[Route] = []
    addresses: dict[str, str] = {}
    probes: dict[str, str] = {}
    links: list[CellLink] = []
    for n in spec.role("endpoint"):
        i = n.index
        ip = f"{ENDPOINT_NET}.{i}.2"
        addresses[n.name] = ip
        probes[n.name] = f"{PROBE_NET}.{i}.2"
        veths.append(Veth(Interface(n.name, "eth0", f"{ip}/24"), Interface("ran", f"ue{i}", None)))
        veths.append(Veth(Interface("ran", f"core{i}", None), Interface("core", f"ran{i}", f"{ENDPOINT_NET}.{i}.1/24")))
        links.append(CellLink(n.name, f"ue{i}", f"core{i}"))
        routes.append(Route(n.name, ALL_NETS, f"{ENDPOINT_NET}.{i}.1"))
        routes.append(Route("core", f"{PROBE_NET}.{i}.2/32", ip))
    for role in ("edge", "cloud"):
        for n in spec.role(role):
            net = f"{TIER_NET[role]}.{n.index}"
            addresses[n.name] = f"{net}.2"
            veths.append(Veth(Interface("core", n.name, f"{net}.1/24"), Interface(n.name, "eth0", f"{net}.2/24")))
            routes.append(Route(n.name, ALL_NETS, f"{net}.1"))
    delay_rules = tuple(
        (f"{TIER_NET[role]}.0.0/16", spec.one_way_ms(role)) for role in ("edge", "cloud") if spec.role(role)
    )
    bypass = (f"{PROBE_NET}.0.0/16", *spec.mobile.bypass)
    names = tuple(n.name for n in spec.nodes) + ("ran", "core")
    return Plan(
        namespaces=names,
        veths=tuple(veths),
        routes=tuple(routes),
        addresses=addresses,
        probe_addresses=probes,
        cell_links=tuple(links),
        delay_rules=delay_rules,
        bypass=bypass,
        offload_target=f"{spec.workload.offload}0",
    )
