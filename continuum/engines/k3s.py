"""The workloads as pods of the machines' k3s cluster (`[provider] engine = "k3s"`).

Why the pods enter the plan's namespaces instead of using the cluster's own
network: a pod network (k3s's flannel) goes from machine to machine directly,
so an endpoint's requests would never cross mahimahi-link or the core delay,
and every latency the run measures would be the cluster network's. So the
hosts provider builds the run's namespaces, links and tunnels exactly as it
does for processes, and each pod enters its node's namespace before it execs
the workload: `nsenter --net=/run/netns/NODE` (the pod gets CAP_SYS_ADMIN and
the machine's /run/netns for this), then `setpriv` drops to the workload user
with no capabilities left, so the workload runs as unprivileged as a
process-mode one (tests/k3s runs that container with those rights).

What k3s does is what an engine is for: it places each pod on the machine the
plan put its node on (nodeSelector on the node's hostname label), pulls
nothing (playbooks/roles/workload_images imports the run's images into its
containerd), enforces the node's CPUs and memory as the pod's limits
(requests equal to limits: Guaranteed QoS), and keeps the pods' logs, which
are followed into the run's logs/. Every pod of a run lives in one Kubernetes
namespace, continuum-RUN, labelled with the run: teardown deletes it, and
`continuum destroy` deletes what a crash left.

k3s cannot be downloaded on the machine this was written on: the pod path is
checked there by its manifests against Kubernetes' schemas, by the pod's
container run under Docker with the pod's rights, and by the refusal when no
cluster answers; no run has gone through a live k3s (docs/experiment-file.md)."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from continuum.errors import CommandError, ProviderError
from continuum.remote import RemoteProcess, SshHost

LABEL_RUN = "continuum.io/run"
LABEL_NODE = "continuum.io/node"
LABEL_MANAGED = "app.kubernetes.io/managed-by"
HOSTNAME_LABEL = "kubernetes.io/hostname"
NETNS_DIR = "/run/netns"
NOBODY = 65534  # runtime.WORKLOAD_USER's id in Debian's images and on Debian machines
GRACE_S = 15  # SIGTERM to exit: a server writes its records in this time
POLL_S = 1.0  # one `kubectl get` a second at most, however often the runner asks
# A container that cannot start: the pod has failed, it is not still starting
STUCK = {"ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError",
         "CreateContainerError", "RunContainerError", "CrashLoopBackOff"}


def namespace(run_id: str) -> str:
    """The run's Kubernetes namespace."""
    return f"continuum-{run_id}"


def pod_name(*parts: str) -> str:
    """A DNS-1123 label (what a pod's name must be) from its node, side, app and repetition."""
    name = re.sub(r"[^a-z0-9]+", "-", "-".join(p for p in parts if p).lower()).strip("-")
    return name[:63].rstrip("-")


def entry(netns: str, as_root: bool) -> list[str]:
    """What the pod's container execs before the workload's own command:
    into the node's namespace, then without the right it took to get there
    (as root only when the experiment file asks: workload.run_as_root)."""
    drop = (["--bounding-set=-sys_admin", "--inh-caps=-sys_admin"] if as_root else
            [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"])
    return ["nsenter", f"--net={NETNS_DIR}/{netns}", "--", "setpriv", *drop, "--"]


@dataclass(frozen=True)
class PodSpec:
    """One workload side as a pod: where it runs and what it runs."""

    name: str
    run_id: str
    node: str  # continuum's node name
    hostname: str  # its machine's Kubernetes node, by the kubernetes.io/hostname label
    netns: str  # the node's namespace on that machine
    image: str  # a local image reference (imported, never pulled)
    command: tuple[str, ...]  # the image's entrypoint and command, resolved (they follow `entry`)
    env: dict[str, str] = field(default_factory=dict)
    cpus: float = 1.0
    memory_bytes: int = 512 << 20
    mounts: tuple[tuple[str, bool], ...] = ()  # (path on the machine, writable), mounted at the same path
    as_root: bool = False


def manifest(p: PodSpec) -> dict:
    """The Pod object for `kubectl apply`."""
    volumes: list[dict] = [{"name": "netns", "hostPath": {"path": NETNS_DIR, "type": "Directory"}}]
    # HostToContainer: the namespace files are mounts inside /run/netns
    mounts: list[dict] = [{"name": "netns", "mountPath": NETNS_DIR, "readOnly": True, "mountPropagation": "HostToContainer"}]
    for i, (path, writable) in enumerate(p.mounts):
        volumes.append({"name": f"data{i}", "hostPath": {"path": path, "type": "Directory"}})
        mounts.append({"name": f"data{i}", "mountPath": path, "readOnly": not writable})
    quantity = {"cpu": f"{p.cpus:g}", "memory": str(p.memory_bytes)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": p.name, "namespace": namespace(p.run_id),
                     "labels": {LABEL_MANAGED: "continuum", LABEL_RUN: p.run_id, LABEL_NODE: p.node}},
        "spec": {
            "nodeSelector": {HOSTNAME_LABEL: p.hostname},
            "restartPolicy": "Never",  # a workload that fails ends the run, named, as a process would
            "terminationGracePeriodSeconds": GRACE_S,
            "enableServiceLinks": False,
            "automountServiceAccountToken": False,
            "containers": [{
                "name": "workload",
                "image": p.image,
                "imagePullPolicy": "Never",
                "command": [*entry(p.netns, p.as_root), *p.command],
                "env": [{"name": k, "value": v} for k, v in p.env.items()],
                "resources": {"limits": quantity, "requests": quantity},
                "securityContext": {"runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]}},
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        },
    }


def namespace_manifest(run_id: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": namespace(run_id), "labels": {LABEL_MANAGED: "continuum", LABEL_RUN: run_id}}}


def kubectl(server: SshHost, *args: str, input: str | None = None, check: bool = True,
            timeout: float = 60.0) -> subprocess.CompletedProcess:
    """`k3s kubectl` on the server machine (k3s's own kubeconfig there)."""
    return server.run(["k3s", "kubectl", *args], input=input, check=check, timeout=timeout)


def problem(server: SshHost) -> str | None:
    """None when the cluster answers on the server machine with a Ready node; else why not, and what to do."""
    try:
        p = server.run(["sh", "-c", "command -v k3s >/dev/null || exit 127; exec k3s kubectl get nodes -o json"],
                       check=False, timeout=60)
    except (ProviderError, CommandError) as e:
        return str(e)
    if p.returncode == 127:
        return (f"{server.name}: k3s is not installed (no `k3s` command), so engine = \"k3s\" has no cluster to start "
                "pods on; playbooks/k3s.yml installs one on the machines (it needs internet: get.k3s.io), or use "
                "engine = \"processes\"")
    if p.returncode != 0:
        why = (p.stderr or p.stdout).strip().splitlines()
        return (f"{server.name}: `k3s kubectl get nodes` failed: {why[-1] if why else p.returncode}; "
                "is k3s running there (systemctl status k3s)?")
    if not ready_nodes(json.loads(p.stdout)["items"]):
        return f"{server.name}: the k3s cluster has no Ready node (k3s kubectl get nodes)"
    return None


def ready_nodes(items: list[dict]) -> list[dict]:
    return [it for it in items if any(c.get("type") == "Ready" and c.get("status") == "True"
                                      for c in it.get("status", {}).get("conditions", []))]


def hostnames(server: SshHost, machines: dict[str, tuple[SshHost, str]]) -> dict[str, str]:
    """machine name -> the kubernetes.io/hostname label of its Ready node.
    `machines`: name -> (its SSH host, its IP address). A node is the
    machine's when its name or hostname is the machine's hostname, or one of
    its addresses is the machine's."""
    nodes = ready_nodes(json.loads(kubectl(server, "get", "nodes", "-o", "json").stdout)["items"])
    out = {}
    for name, (host, address) in machines.items():
        hostname = host.run(["hostname"], timeout=20).stdout.strip()
        for it in nodes:
            addresses = {a.get("address") for a in it.get("status", {}).get("addresses", [])}
            if it["metadata"]["name"] == hostname or hostname in addresses or address in addresses:
                out[name] = it["metadata"].get("labels", {}).get(HOSTNAME_LABEL, it["metadata"]["name"])
                break
        else:
            listed = ", ".join(it["metadata"]["name"] for it in nodes) or "none"
            raise ProviderError(f"machine {name} ({address}, hostname {hostname}) is not a Ready node of the k3s cluster "
                                f"on {server.name} (its Ready nodes: {listed}); join it as an agent "
                                "(playbooks/k3s.yml, group k3s_agent)")
    return out


def leftovers(server: SshHost, run_id: str | None) -> list[str]:
    """The Kubernetes namespaces continuum made (for one run, or any) that still exist."""
    sel = LABEL_RUN + (f"={run_id}" if run_id else "")
    p = kubectl(server, "get", "namespaces", "-l", sel, "-o", "name", check=False, timeout=60)
    return p.stdout.split() if p.returncode == 0 else []


def delete(server: SshHost, run_id: str | None) -> list[str]:
    """Delete the run's namespace (or every run's): its pods get their grace period first."""
    gone = leftovers(server, run_id)
    if gone:
        sel = LABEL_RUN + (f"={run_id}" if run_id else "")
        kubectl(server, "delete", "namespaces", "-l", sel, "--wait=true", f"--timeout={GRACE_S + 90}s",
                check=False, timeout=GRACE_S + 120)
    return gone


def outcome(status: dict, hostname: str) -> tuple[int, str] | None:
    """A pod's end from its status (Kubernetes' PodStatus): (exit status, why),
    or None while it is starting or running. A container that cannot start
    (an image not imported, a bad spec) or a pod the scheduler cannot place
    has ended, with 125 as `docker run` would give."""
    state = (status.get("containerStatuses") or [{}])[0].get("state", {})
    waiting = state.get("waiting") or {}
    unscheduled = next((c for c in status.get("conditions", []) if c.get("type") == "PodScheduled"
                        and c.get("status") == "False" and c.get("reason") == "Unschedulable"), None)
    if "terminated" in state:
        t = state["terminated"]
        return int(t.get("exitCode", 1)), f"{t.get('reason', 'ended')} with status {t.get('exitCode')}"
    if waiting.get("reason") in STUCK:
        return 125, f"its container cannot start: {waiting['reason']}: {waiting.get('message', '')}"
    if unscheduled is not None:
        return 125, f"k3s cannot place it on {hostname}: {unscheduled.get('message', '')}"
    if status.get("phase") == "Failed":
        return 1, f"failed: {status.get('reason', '')} {status.get('message', '')}"
    return None


@dataclass(frozen=True)
class Cluster:
    """A run's k3s cluster: the machine whose `k3s kubectl` reaches it, and
    each machine's node (its kubernetes.io/hostname label)."""

    server: SshHost
    run_id: str
    hostnames: dict[str, str]


class Pod:
    """A workload side running as a pod, with the part of subprocess.Popen's
    interface the runner uses (poll, wait, send_signal, terminate, kill,
    returncode). Its output is followed into the local log."""

    def __init__(self, server: SshHost, spec: PodSpec, log: Path):
        self.server, self.spec, self.log = server, spec, log
        self.name, self.ns = spec.name, namespace(spec.run_id)
        self.args = ["pod", self.ns, self.name]
        self.pid = 0
        self.returncode: int | None = None
        self._checked = 0.0
        self._stopping = False
        kubectl(server, "apply", "-f", "-", input=json.dumps(manifest(spec)))
        # follows the container from when it runs to when it ends (also when deleted)
        self._follower: RemoteProcess = server.start(
            ["k3s", "kubectl", "logs", "-f", self.name, "-n", self.ns, "--pod-running-timeout=10m"], log)

    def poll(self) -> int | None:
        if self.returncode is not None or time.monotonic() - self._checked < POLL_S:
            return self.returncode
        self._checked = time.monotonic()
        p = kubectl(self.server, "get", "pod", self.name, "-n", self.ns, "-o", "json", check=False, timeout=30)
        if p.returncode != 0:
            if "NotFound" in p.stderr:  # deleted: by our stop (it had its grace period) or by someone else
                self._end(-signal.SIGTERM if self._stopping else 137, "the pod was deleted")
            return self.returncode
        ended = outcome(json.loads(p.stdout).get("status", {}), self.spec.hostname)
        if ended is not None:
            self._end(*ended)
        return self.returncode

    def _end(self, code: int, why: str) -> None:
        self.returncode = code
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._follower.wait(10)  # the container's last lines
        if self._follower.poll() is None:
            self._follower.terminate()
        with open(self.log, "a") as out:
            out.write(f"[continuum] pod {self.ns}/{self.name} on {self.spec.hostname}: {why}\n")

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.2)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is not None:
            return
        if sig in (signal.SIGTERM, signal.SIGINT):  # Kubernetes' way: SIGTERM, then SIGKILL after the grace period
            self._stopping = True
            kubectl(self.server, "delete", "pod", self.name, "-n", self.ns, "--wait=false", check=False, timeout=30)
        elif sig == signal.SIGKILL:
            self._stopping = True
            kubectl(self.server, "delete", "pod", self.name, "-n", self.ns, "--grace-period=0", "--force", "--wait=false",
                    check=False, timeout=30)
        else:
            kubectl(self.server, "exec", self.name, "-n", self.ns, "--", "kill", f"-{int(sig)}", "1", check=False, timeout=30)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
