"""The hosts provider: existing machines over SSH, provisioned by
playbooks/site.yml, carrying the same network plan as the netns provider.

Each machine gets the namespaces of the nodes placed on it (endpoints on the
machines with role endpoint, edge and cloud nodes on theirs, round robin;
the ran and core namespaces on the one link machine), with the same cgroup
limits, made by the same code (continuum/nodeside/hostside.py, run there). A veth of
the plan whose two ends are on one machine stays a veth; one whose ends are
on two machines becomes a VXLAN tunnel between them over their own network,
each end moved into its namespace under the plan's interface name. So the
endpoints' traffic crosses the link machine's mahimahi-link exactly once per
direction, and nothing is routed through a machine's own network stack:
the experiment's addresses exist only inside the run's namespaces.

Why namespaces on the machines and not their own interfaces: a machine has
one network that its owner uses; the run must not change its routes or
addresses, and its teardown must remove everything it made. One-way
latencies between machines need their clocks: the offset of each machine's
clock from this one is measured (SSH round trips) and recorded."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from continuum import naming, playbooks
from continuum.engines import containers, k3s
from continuum.errors import CommandError, ProviderError
from continuum.network.plan import Plan
from continuum.providers.base import Deployment, Provider, register
from continuum.network.configure import configure
from continuum.results import manifest
from continuum.providers.remote import clock_offset, hostside, remote_cgroups, remote_problems, share_folder
from continuum.remote import SshHost
from continuum.runtime import Node

if TYPE_CHECKING:
    from continuum.config import ExperimentSpec

STATE = Path("/run/continuum/hosts")  # <run id>.json: the machines of a live run, for `continuum destroy`
VXLAN_PORT = 4789
VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8


def machines(plan: Plan, known_hosts: Path | None) -> dict[str, SshHost]:
    return {m.name: SshHost(m.name, m.address, m.user, m.port, m.key, known_hosts) for m in plan.machines}


def known_hosts_file(plan: Plan, run_id: str) -> Path | None:
    """known: the user's ~/.ssh/known_hosts (strict); first-use: a file of the run's own."""
    return None if plan.host_keys == "known" else STATE / f"{run_id}.known_hosts"


def _resolve(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return socket.gethostbyname(address)


def _route(host: SshHost, peer: str) -> tuple[str, str, int]:
    """(source address, device, MTU) the machine uses toward peer."""
    r = json.loads(host.run(["ip", "-j", "route", "get", peer]).stdout)[0]
    dev = r["dev"]
    mtu = int(json.loads(host.run(["ip", "-j", "link", "show", "dev", dev]).stdout)[0]["mtu"])
    return r.get("prefsrc", ""), dev, mtu


@register
class HostsProvider(Provider):
    kind = "hosts"
    # the daemons run on the offload node's machine (runtime.start_node_daemon), its child cgroups there
    node_verbs = frozenset({"node_daemon", "child_cgroups"})

    def check(self, spec: ExperimentSpec) -> list[str]:
        problems = []
        if spec.provision and (p := playbooks.problem()):
            problems.append(p)
        unsupported = []
        if spec.core.jitter_ms > 0 or spec.core.mechanism == "netem":
            unsupported.append("core delay by netem (the link machine's mahimahi-link applies it: core.mechanism = \"auto\")")
        problems += remote_problems(spec, "hosts", unsupported)
        if spec.engine == "k3s":  # its images come from this machine's Docker
            why = containers.engine_problem()
            problems += ([f"engine = \"k3s\" imports the workload's images from Docker here: {why}"] if why
                         else containers.image_problems(containers.spec_images(spec)))
        if problems:
            return problems
        reached = {}
        for m in spec.hosts:
            h = reached[m.name] = SshHost(m.name, m.address, m.user, m.port, m.key,
                                          None if spec.host_keys == "known" else Path("/dev/null"))
            why = h.reachable()
            if why:
                problems.append(why)
        if spec.engine == "k3s" and not problems and spec.k3s_server:
            why = k3s.problem(reached[spec.k3s_server])
            if why:
                problems.append(why)
        return problems

    def provision(self, plan: Plan, run_id: str, logs: Path, undo: contextlib.ExitStack,
                  say: Callable[[str], None]) -> dict:
        hosts = machines(plan, known_hosts_file(plan, run_id))
        STATE.mkdir(parents=True, exist_ok=True)
        (STATE / f"{run_id}.json").write_text(json.dumps(
            {"run_id": run_id, "hosts": [{**h.__dict__, "options": list(h.options), "known_hosts": str(h.known_hosts or "")}
                                         for h in hosts.values()]}, indent=2))
        undo.callback(_forget, run_id)
        for h in hosts.values():
            undo.callback(h.close)
        # each machine's CPU, cores, memory and OS: what decides its service times (a campaign on several
        # machines compares its points' machines by these)
        facts: dict = {"hosts": {m.name: {"address": m.address, "roles": list(m.roles),
                                          "nodes": sorted(n for n, w in plan.placement.items() if w == m.name),
                                          "machine": manifest.host(hosts[m.name].read_text)}
                                 for m in plan.machines}}
        if plan.provision:
            say(f"provisioning {len(hosts)} machine(s) with playbooks/site.yml")
            groups = {r: [m.name for m in plan.machines if r in m.roles] for r in ("endpoint", "edge", "cloud", "link")}
            groups["edge_manager"] = [plan.placement[plan.offload_target]] if plan.edge_daemon else []  # roles/edge_manager
            playbooks.ensure_wheels(list(plan.requirements), say)
            host_vars: dict[str, dict] = {plan.placement[plan.offload_target]: {"workload_requirements": list(plan.requirements),
                                                                                 "workload_app_packages": list(plan.debian_packages)}}
            # roles/workload_images: Docker and the run's images (and the sandboxes' continuum/base) where a side runs in a container
            groups["docker_containers"] = sorted({plan.placement[n] for n in plan.docker_nodes})
            if groups["docker_containers"]:
                images = [{"name": i, "id": containers.image_id(i)} for i in sorted({*plan.images, containers.ref("continuum/base")})]
                say(f"loading {len(images)} image(s) into the Docker of {', '.join(groups['docker_containers'])}")
                for m in groups["docker_containers"]:
                    host_vars.setdefault(m, {})["workload_images"] = images
            if plan.engine == "k3s":  # roles/workload_images: the run's images into k3s's containerd where its pods run
                groups["k3s_pods"] = sorted(pod_machines(plan))
                images = [{"name": i, "id": containers.image_id(i)} for i in plan.images]
                for m in groups["k3s_pods"]:
                    host_vars.setdefault(m, {})["workload_images"] = images
            recap = playbooks.run("site.yml", playbooks.inventory(hosts, groups, host_vars), logs / "provision.log", say)
            facts["provisioning"] = {"playbook": "playbooks/site.yml", "seconds": recap.seconds, "changed": recap.changed}
            say(f"provisioned in {recap.seconds:.0f} s (tasks changed: "
                + ", ".join(f"{m} {n}" for m, n in sorted(recap.changed.items())) + ")")
        clocks = facts["clock_offsets"] = {h.name: clock_offset(h) for h in hosts.values()}
        say("clock offsets from this machine: " + ", ".join(f"{m} {c['offset_ms']:+.2f} ms (±{c['error_bound_ms']:.2f})"
                                                            for m, c in clocks.items()))
        return facts

    def deploy(self, plan: Plan, run_id: str, undo: contextlib.ExitStack, say: Callable[[str], None]) -> Deployment:
        dep = Deployment(run_id)
        hosts = machines(plan, known_hosts_file(plan, run_id))
        where = plan.placement
        for h in hosts.values():
            undo.callback(_destroy_on, h, run_id)

        say(f"creating {len(plan.nodes)} namespaces on {len(set(where.values()))} machine(s)")
        for n in plan.nodes:
            h = hosts[where[n.name]]
            ns = naming.netns(run_id, n.name)
            if n.name in plan.docker_nodes:  # its namespace from a sandbox container there, as netns does here
                box = containers.sandbox_name(run_id, n.name)
                undo.callback(h.run, ["docker", "rm", "-f", box], check=False, timeout=60)
                h.run(containers.sandbox_argv(box, run_id), timeout=120)
                pid = h.run(["docker", "inspect", "--format", "{{.State.Pid}}", box]).stdout.strip()
                h.run(["ip", "netns", "attach", ns, pid])
            else:
                h.run(["ip", "netns", "add", ns])
            node = Node(n.name, ns, n.address, host=h)
            node.run(["ip", "link", "set", "lo", "up"])
            dep.nodes[n.name] = node

        tunnels = [v for v in plan.veths if where[v.a.namespace] != where[v.b.namespace]]
        say(f"wiring {len(plan.veths) - len(tunnels)} veth pair(s) and {len(tunnels)} VXLAN tunnel(s) between machines")
        mtus = []
        base = (int(run_id, 16) >> 8) % 0xFFFF * 256
        for k, v in enumerate(plan.veths):
            a, b = dep.nodes[v.a.namespace], dep.nodes[v.b.namespace]
            assert a.host is not None and b.host is not None
            if v not in tunnels:
                a.host.run(["ip", "link", "add", v.a.name, "netns", a.netns, "type", "veth", "peer", "name", v.b.name, "netns", b.netns])
                continue
            vni = base + k
            ends = [(a.host, b.host, a.netns, v.a.name), (b.host, a.host, b.netns, v.b.name)]
            routes = {}
            for host, peer, _, _ in ends:
                routes[host.name] = _route(host, _resolve(peer.address))
            mtu = min(1500, *(m - VXLAN_OVERHEAD for _, _, m in routes.values()))
            mtus.append(mtu)
            for host, peer, ns, dev in ends:
                src, via_dev, _ = routes[host.name]
                tmp = f"cvx{run_id}{k:02x}"
                host.run(["ip", "link", "add", tmp, "type", "vxlan", "id", str(vni), "remote", _resolve(peer.address),
                          *(["local", src] if src else []), "dev", via_dev, "dstport", str(VXLAN_PORT)])
                host.run(["ip", "link", "set", tmp, "mtu", str(mtu), "netns", ns])
                host.run(["ip", "-n", ns, "link", "set", tmp, "name", dev])
        if mtus:
            dep.facts["tunnel_mtu"] = min(mtus)
            if min(mtus) < 1500:
                say(f"note: the machines' network carries {min(mtus) + VXLAN_OVERHEAD} bytes per packet, so the tunnels "
                    f"carry {min(mtus)}-byte packets, not 1500 (raise the MTU between them to 1550 for 1500)")
        configure(plan, dep)

        say("creating cgroups (CPU quota, memory limit) on the machines")
        remote_cgroups(plan, dep, undo)
        if plan.engine == "k3s":
            _k3s(plan, dep, hosts, undo, say)
        return dep

    def share_run_folder(self, plan: Plan, dep: Deployment, run_dir: Path, undo: contextlib.ExitStack,
                         say: Callable[[str], None]) -> None:
        share_folder(plan, dep, run_dir, undo, say, remember=lambda h, top: _remember(
            dep.run_id, "folders", {**{k: str(v) for k, v in _folders(dep.run_id).items()}, h.name: str(top)}))

    def leftovers(self, run_id: str | None) -> list[str]:
        out = []
        for rid, hosts in _known_runs(run_id).items():
            server = _k3s_server(rid, hosts)
            if server is not None:
                with contextlib.suppress(ProviderError, CommandError):
                    out += [f"{server.name} ({server.address}): k3s {ns}" for ns in k3s.leftovers(server, rid)]
            for h in hosts:
                try:
                    out += [f"{h.name} ({h.address}): {item}" for item in hostside(h, "leftovers", rid, timeout=30)]
                    folder = _folders(rid).get(h.name)
                    if folder and h.exists(folder):
                        out.append(f"{h.name} ({h.address}): the run folder's copy {folder}")
                except (ProviderError, CommandError) as e:
                    out.append(f"{h.name} ({h.address}): run {rid} cannot be checked: {e}")
        return out

    def destroy(self, run_id: str | None, say: Callable[[str], None]) -> int:
        removed = 0
        for rid, hosts in _known_runs(run_id).items():
            ok = True
            server = _k3s_server(rid, hosts)
            if server is not None:  # the pods first: they are inside the namespaces removed next
                try:
                    for ns in k3s.delete(server, rid):
                        say(f"{server.name}: removed k3s {ns}")
                        removed += 1
                except (ProviderError, CommandError) as e:
                    say(f"{server.name}: {e}")
                    ok = False
            for h in hosts:
                try:
                    gone = hostside(h, "destroy", rid, timeout=120)
                except (ProviderError, CommandError) as e:
                    say(f"{h.name}: {e}")
                    ok = False
                    continue
                for item in gone:
                    say(f"{h.name}: removed {item}")
                removed += len(gone)
                folder = _folders(rid).get(h.name)
                if folder and h.exists(folder):
                    h.run(["rm", "-rf", "--one-file-system", str(folder)], check=False, timeout=120)
                    say(f"{h.name}: removed the run folder's copy {folder}")
                    removed += 1
                h.close()
            if ok:
                _forget(rid)
        return removed



def pod_machines(plan: Plan) -> set[str]:
    """engine k3s: the machines whose nodes run workload pods."""
    return {w for n, w in plan.placement.items() if n not in ("ran", "core")}


def _k3s(plan: Plan, dep: Deployment, hosts: dict[str, SshHost], undo: contextlib.ExitStack,
         say: Callable[[str], None]) -> None:
    """engine k3s: the run's Kubernetes namespace, and each node's machine as a node of the cluster (continuum/engines/k3s.py)."""
    assert plan.k3s_server is not None
    server = hosts[plan.k3s_server]
    names = k3s.hostnames(server, {m: (hosts[m], _resolve(hosts[m].address)) for m in sorted(pod_machines(plan))})
    _remember(dep.run_id, "k3s_server", plan.k3s_server)
    k3s.kubectl(server, "apply", "-f", "-", input=json.dumps(k3s.namespace_manifest(dep.run_id)))
    undo.callback(k3s.delete, server, dep.run_id)
    cluster = k3s.Cluster(server, dep.run_id, names)
    for name, node in dep.nodes.items():
        if name not in ("ran", "core") and node.host is not None and node.host.name in names:
            node.cluster = cluster
    dep.facts["engine"] = {"kind": "k3s", "server": plan.k3s_server, "namespace": k3s.namespace(dep.run_id),
                           "nodes": names}
    say(f"k3s: namespace {k3s.namespace(dep.run_id)} on the cluster of {plan.k3s_server}; pods go to "
        + ", ".join(f"{m} (node {n})" for m, n in sorted(names.items())))


def _k3s_server(run_id: str, hosts: list[SshHost]) -> SshHost | None:
    try:
        name = json.loads((STATE / f"{run_id}.json").read_text()).get("k3s_server")
    except (OSError, ValueError):
        return None
    return next((h for h in hosts if h.name == name), None)


def _destroy_on(h: SshHost, run_id: str) -> None:
    hostside(h, "destroy", run_id, timeout=120)


def _known_runs(run_id: str | None) -> dict[str, list[SshHost]]:
    out: dict[str, list[SshHost]] = {}
    if not STATE.is_dir():
        return out
    for f in sorted(STATE.glob("*.json")):
        rid = f.stem
        if run_id is not None and rid != run_id:
            continue
        try:
            doc = json.loads(f.read_text())
            out[rid] = [SshHost(h["name"], h["address"], h["user"], int(h["port"]), h.get("key"),
                                Path(h["known_hosts"]) if h.get("known_hosts") else None, h.get("root", "/opt/continuum"))
                        for h in doc["hosts"]]
        except (OSError, ValueError, KeyError):
            continue
    return out


def _remember(run_id: str, key: str, value) -> None:
    """Record in the run's state file what `continuum destroy` needs after a crash
    (folders: the run folder's copies; k3s_server: the machine that reaches the cluster)."""
    f = STATE / f"{run_id}.json"
    doc = json.loads(f.read_text())
    doc[key] = value
    f.write_text(json.dumps(doc, indent=2))


def _folders(run_id: str) -> dict[str, Path]:
    try:
        return {k: Path(v) for k, v in json.loads((STATE / f"{run_id}.json").read_text()).get("folders", {}).items()}
    except (OSError, ValueError):
        return {}


def _forget(run_id: str) -> None:
    for suffix in (".json", ".known_hosts"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(STATE / f"{run_id}{suffix}")
