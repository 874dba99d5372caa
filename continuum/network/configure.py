"""The plan's network, configured once its namespaces (or VMs) and their
interfaces exist: addresses, offloads, neighbours, forwarding, routes and
the netem core delay, through each node's own `run`, so the same code serves
every provider (netns here, qemu and hosts over SSH)."""

from __future__ import annotations

import json

from continuum.errors import CommandError, ProviderError
from continuum.network.plan import Plan
from continuum.providers.base import Deployment
from continuum.runtime import Node


def configure(plan: Plan, dep: Deployment, core_delay: bool = True) -> None:
    """Everything after the namespaces and their interfaces exist, through
    each node's own `run` (so on whichever machine it is): addresses,
    offloads, neighbours, forwarding, routes, and netem where the plan asks
    (core_delay=False: the provider applies the core delay itself)."""
    for v in plan.veths:
        for end in (v.a, v.b):
            node = dep.nodes[end.namespace]
            if end.address:
                node.run(["ip", "addr", "add", end.address, "dev", end.name])
            if not end.offloads:
                node.run(["ethtool", "-K", end.name, "tso", "off", "gso", "off", "gro", "off"], check=False)
            node.run(["ip", "link", "set", end.name, "up"])
    for x in plan.extra_addresses:
        dep.nodes[x.namespace].run(["ip", "addr", "add", x.cidr, "dev", x.dev])
    _neighbours(plan, dep)
    for n in plan.nodes:
        node = dep.nodes[n.name]
        if n.forwarding:
            node.run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
        node.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
    for r in plan.routes:
        argv = ["ip", "route", "add", r.destination]
        if r.via:
            argv += ["via", r.via]
        dep.nodes[r.namespace].run(argv)

    if not core_delay:
        return
    netem = netem_available(dep.nodes["core"])
    if plan.delay_mechanism == "netem":
        if not netem:
            raise ProviderError("core delay needs tc netem (core.jitter_ms > 0 or core.mechanism = \"netem\") "
                                "but this kernel has no sch_netem; set core.jitter_ms = 0 to use mahimahi-link's delay")
        _netem(plan, dep)
    dep.facts["delay_mechanism"] = plan.delay_mechanism
    dep.facts["netem_available"] = netem


def _neighbours(plan: Plan, dep: Deployment) -> None:
    def mac(node: Node, dev: str) -> str:
        return json.loads(node.run(["ip", "-j", "link", "show", "dev", dev]).stdout)[0]["address"]

    for nb in plan.neighbours:
        lladdr = mac(dep.nodes[nb.peer_namespace], nb.peer_dev)
        dep.nodes[nb.namespace].run(["ip", "neigh", "replace", nb.address, "lladdr", lladdr, "dev", nb.dev, "nud", "permanent"])


def netem_available(core: Node) -> bool:
    """Detect sch_netem by trying it on the core namespace's own loopback."""
    ok = core.run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"], check=False).returncode == 0
    if ok:
        core.run(["tc", "qdisc", "del", "dev", "lo", "root"], check=False)
    return ok


def _netem(plan: Plan, dep: Deployment) -> None:
    """Core delay with tc netem on both ends of each tier's core links (where the kernel has netem)."""
    for d in plan.core_delays:
        delay = ["delay", f"{d.one_way_ms}ms"] + ([f"{d.jitter_ms}ms"] if d.jitter_ms else [])
        for ns, dev in d.netem_devices:
            try:
                dep.nodes[ns].run(["tc", "qdisc", "add", "dev", dev, "root", "netem", *delay])
            except CommandError as e:
                raise ProviderError(
                    f"core.mechanism = \"netem\" but this kernel refused it ({e.stderr or e}); "
                    "use core.mechanism = \"mahimahi-link\""
                ) from e
