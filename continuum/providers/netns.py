"""The embedded default provider: each node is a network namespace with its
own addresses, and its processes run inside a cgroup that enforces the node's
CPU quota and memory limit. Starts in about a second; needs root.

Veth pairs are created with both ends directly inside their namespaces, so no
interface of ours ever appears in the host's namespace, and deleting a
namespace deletes its interfaces. Namespace names carry the run id
(ctm-<run id>-<node>), cgroups live under continuum/<run id>/<node>."""

from __future__ import annotations

import contextlib
import os
import shutil
from typing import TYPE_CHECKING, Callable

from continuum import cgroups, commands, naming
from continuum.engines import containers
from continuum.errors import ProviderError
from continuum.network import mahimahi
from continuum.network.configure import configure
from continuum.network.namespaces import delete_namespace, list_namespaces, namespace_pids
from continuum.network.plan import Plan
from continuum.providers.base import Deployment, Provider, register
from continuum.runtime import Node
from continuum.traces import mahimahi_link_binary
from srsran_integration import environment

if TYPE_CHECKING:
    from continuum.config import ExperimentSpec

TOOLS = {"ip": "iproute2", "ethtool": "ethtool", "ping": "iputils-ping", "mosquitto": "mosquitto"}


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
        if spec.mobile.emulator == "mahimahi":
            problems += mahimahi.problems()
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
        out += [f"mm-link process {pid} ({folder})" if pid else f"folder {folder}" for pid, folder in mahimahi.leftovers(run_id)]
        return out

    def destroy(self, run_id: str | None, say: Callable[[str], None]) -> int:
        removed = 0
        for name in containers.leftovers(run_id):
            say(f"removing container {name}")
            containers.remove(name)
            removed += 1
        for what in mahimahi.destroy(run_id):  # before their namespaces: a shell's own goes with its process
            say(f"removing {what}")
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
