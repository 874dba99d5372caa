"""The embedded default provider: each node is a network namespace with its
own addresses, and its processes run inside a cgroup that enforces the node's
CPU quota and memory limit. Starts in about a second; needs root.

Veth pairs are created with both ends directly inside their namespaces, so no
interface of ours ever appears in the host's namespace, and deleting a
namespace deletes its interfaces. Namespace names carry the run id
(ctm-<run id>-<node>), cgroups live under continuum/<run id>/<node>."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from typing import TYPE_CHECKING, Callable

from continuum import cgroups, commands, containers, naming
from continuum.errors import CommandError, ProviderError
from continuum.network.plan import Plan
from continuum.providers.base import Deployment, Provider, register
from continuum.runtime import Node
from continuum.traces import mahimahi_link_binary
from srsran_integration import environment

if TYPE_CHECKING:
    from continuum.config import ExperimentSpec

TOOLS = {"ip": "iproute2", "ethtool": "ethtool", "ping": "iputils-ping", "mosquitto": "mosquitto"}


def list_namespaces() -> list[str]:
    p = commands.run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def namespace_pids(netns: str) -> set[int]:
    p = commands.run(["ip", "netns", "pids", netns], check=False)
    return {int(x) for x in p.stdout.split()}


def kill_namespace_processes(netns: str) -> None:
    import signal
    import time

    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = namespace_pids(netns)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 3
        while namespace_pids(netns) and time.monotonic() < deadline:
            time.sleep(0.05)


def delete_namespace(netns: str) -> None:
    kill_namespace_processes(netns)
    commands.run(["ip", "netns", "del", netns], check=False)


@register
class NetnsProvider(Provider):
    kind = "netns"
    node_verbs = frozenset({"node_daemon", "child_cgroups"})  # the daemons run here, where its cgroups are

    def check(self, spec: ExperimentSpec) -> list[str]:
        problems = []
        if os.geteuid() != 0:
            problems.append("the netns provider needs root (network namespaces, cgroups): run with sudo")
        for tool, package in TOOLS.items():
            if not shutil.which(tool):
                problems.append(f"{tool} not found: install the Debian package {package} (./setup.sh does)")
        if not mahimahi_link_binary().exists():
            problems.append(f"{mahimahi_link_binary()} missing: build it with ./setup.sh")
        try:
            cgroups.detect()
        except ProviderError as e:
            problems.append(str(e))
        if spec.workload.runtime == "container":
            problem = containers.engine_problem()
            if problem:
                problems.append(f"workload.runtime is container: {problem}")
            else:
                needed = sorted({*containers.spec_images(spec), "continuum/base"})
                problems += containers.image_problems(needed)
        if spec.mobile.srsran is not None:
            s = spec.mobile.srsran
            problems += [f"mobile.mode = \"srsran\": {p}" for p in environment.problems(s.prefix, s.cell.radio)]
        if spec.core.jitter_ms > 0 and spec.core.mechanism == "mahimahi-link":
            problems.append("core.jitter_ms > 0 needs tc netem: set core.mechanism = \"auto\" or \"netem\" "
                            "(mahimahi-link's core delay is constant)")
        return problems

    def deploy(self, plan: Plan, run_id: str, undo: contextlib.ExitStack, say: Callable[[str], None]) -> Deployment:
        dep = Deployment(run_id)
        version, _ = cgroups.detect()
        dep.facts["cgroup_version"] = version

        boxed = [n.name for n in plan.nodes if n.sandboxed]
        say(f"creating {len(plan.nodes)} namespaces" + (f" ({len(boxed)} from sandbox containers)" if boxed else ""))
        for n in plan.nodes:
            ns = naming.netns(run_id, n.name)
            if n.sandboxed:
                box = containers.sandbox_name(run_id, n.name)
                undo.callback(containers.remove, box)
                pid = containers.sandbox(box, run_id)
                commands.run(["ip", "netns", "attach", ns, str(pid)])
            else:
                commands.run(["ip", "netns", "add", ns])
            undo.callback(delete_namespace, ns)
            commands.run(commands.in_netns(ns, ["ip", "link", "set", "lo", "up"]))
            dep.nodes[n.name] = Node(n.name, ns, n.address)

        say(f"wiring {len(plan.veths)} veth pairs")
        for v in plan.veths:
            a, b = dep.nodes[v.a.namespace].netns, dep.nodes[v.b.namespace].netns
            commands.run(["ip", "link", "add", v.a.name, "netns", a, "type", "veth", "peer", "name", v.b.name, "netns", b])
        configure(plan, dep)

        say("creating cgroups (CPU quota, memory limit)")
        undo.callback(cgroups.prune, run_id)  # after the nodes' own cgroups: what containers added elsewhere
        for n in plan.nodes:
            if n.limits is not None:
                leaf = plan.per_app_cgroups and n.name == plan.offload_target
                cg = cgroups.create(naming.cgroup(run_id, n.name), n.limits.quota_cpus, n.limits.memory_bytes, leaf=leaf,
                                    period_us=n.limits.period_us)
                undo.callback(cg.remove)
                dep.nodes[n.name].cgroup = cg
        return dep

    def leftovers(self, run_id: str | None) -> list[str]:
        out = [f"container {name}" for name in containers.leftovers(run_id)]
        for ns in list_namespaces():
            parsed = naming.parse_netns(ns)
            if parsed and (run_id is None or parsed[0] == run_id):
                pids = namespace_pids(ns)
                out.append(f"namespace {ns}" + (f" ({len(pids)} processes)" if pids else ""))
        for _rid, cgs in cgroups.existing(run_id).items():
            for cg in cgs:
                out.append(f"cgroup {next(iter(cg.dirs.values()))}")
        return out

    def destroy(self, run_id: str | None, say: Callable[[str], None]) -> int:
        removed = 0
        for name in containers.leftovers(run_id):
            say(f"removing container {name}")
            containers.remove(name)
            removed += 1
        for ns in list_namespaces():
            parsed = naming.parse_netns(ns)
            if parsed and (run_id is None or parsed[0] == run_id):
                say(f"removing namespace {ns} and its processes")
                delete_namespace(ns)
                removed += 1
        for _rid, cgs in cgroups.existing(run_id).items():
            for cg in cgs:
                say(f"removing cgroup {next(iter(cg.dirs.values()))}")
                cg.remove()
                removed += 1
        removed += len(cgroups.prune(run_id))
        return removed


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
