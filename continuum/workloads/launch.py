"""Start one side of the workload in a node, as a process or as a container,
with the same environment-variable contract either way (workloads/contract.py),
so both give the same records."""

from __future__ import annotations

import json
import math
import os
import pwd
import subprocess
import time
from pathlib import Path
from typing import Callable

from continuum import naming
from continuum.engines import containers, k3s
from continuum.config import AppSpec, ExperimentSpec, NodeSpec
from continuum.errors import ProviderError
from continuum.network import plan as netplan
from continuum.runtime import WORKLOAD_USER, Node, Sandbox
from continuum import REPO
from continuum.workloads import REGISTRY
from continuum.edge.registry import node_code, running
from workloads.contract import Env


def model_cache() -> Path:
    """Where pretrained weights are looked for (docs/workloads.md): $CONTINUUM_MODEL_CACHE or ~/.cache/continuum/models."""
    return Path(os.environ.get(Env.MODEL_CACHE, Path.home() / ".cache" / "continuum" / "models"))




def sandbox(spec: ExperimentSpec, run_dir: Path, repo: Path = REPO) -> Sandbox | None:
    """What a process-mode side runs as: None (root) only when the file asks.
    `repo`: the checkout on the node's machine (Node.repo)."""
    if spec.workload.run_as_root:
        return None
    custom = any(not REGISTRY[a.workload.app].builtin for a in spec.apps)
    ro = [repo] + ([spec.workload.workdir] if custom else []) + [model_cache()]
    return Sandbox(WORKLOAD_USER, ro=tuple(dict.fromkeys(ro)), rw=(run_dir / "raw",))


def user_note(spec: ExperimentSpec) -> dict[str, str]:
    """Whom each side ran as, for the manifest."""
    w = spec.workload
    if spec.engine == "k3s":  # continuum/engines/k3s.py's entry decides, as for processes
        return {side: f"{'root' if w.run_as_root else WORKLOAD_USER}, in a k3s pod, with no added capability"
                for side in ("endpoint", "server")}
    return {side: ("the image's user, in its container" if s.runtime == "container"
                   else "root (workload.run_as_root = true)" if w.run_as_root else WORKLOAD_USER)
            for side, s in (("endpoint", w.endpoint), ("server", w.server))}


def hand_over(raw: Path, spec: ExperimentSpec) -> Callable[[], None]:
    """Let the workload user write its results into `raw`; returns the undo,
    which gives the folder and what the workload wrote back to the owner of
    the run folder (it never follows a link the workload made)."""
    if spec.workload.run_as_root or "process" not in (spec.workload.endpoint.runtime, spec.workload.server.runtime):
        return lambda: None
    try:
        pw = pwd.getpwnam(WORKLOAD_USER)
    except KeyError:
        raise ProviderError(f"no user {WORKLOAD_USER!r} on this host to run the workload as; "
                            "create it, or set workload.run_as_root = true") from None
    owner = raw.parent.stat()
    os.chown(raw, pw.pw_uid, pw.pw_gid)

    def take_back() -> None:
        for p in [raw, *raw.rglob("*")]:
            if p.lstat().st_uid == pw.pw_uid:
                os.chown(p, owner.st_uid, owner.st_gid, follow_symlinks=False)
    return take_back


def _common(spec: ExperimentSpec, app: AppSpec, broker: str, rep: int, seed: int) -> dict[str, str]:
    w = app.workload
    return {Env.BROKER: f"{broker}:{netplan.MQTT_PORT}", Env.QOS: str(w.qos), Env.APP: app.name,
            **({Env.TCP_NODELAY: "1"} if spec.tcp_nodelay else {}),
            Env.SEED: str(seed), Env.REPETITION: str(rep),
            Env.PARAMS: json.dumps(dict(w.params)), **w.environment}


def suffix(spec: ExperimentSpec, app: AppSpec) -> str:
    """What the app's server files add to their name: its name in a mix, nothing otherwise."""
    return f"-{app.name}" if spec.mix else ""


def _limits(spec: ExperimentSpec, node: Node) -> NodeSpec:
    found = [n for n in spec.nodes if n.name == node.name]
    if not found:
        raise ProviderError(f"{node.name} is not a workload node (it has no CPU and memory limits)")
    return found[0]


def pythonpath(node: Node) -> str:
    """The checkout on the node's machine and the edge systems' node-side folders in it."""
    return os.pathsep.join((str(node.repo), *(str(node.repo / f) for f in node_code())))


def threads_env(spec: ExperimentSpec, node: NodeSpec) -> dict[str, str]:
    """A server's threads, as its run and its calibration both give them."""
    threads = str(max(1, math.floor(node.cpus)))
    # Servers that share a node, or whose threads an edge system pins to fewer cores, must not spin-wait: OpenMP's
    # default spinning made a 45-ms detection take 3.5 s with 2 threads on 1 core (docs/workloads.md).
    passive = {"OMP_WAIT_POLICY": "PASSIVE"} if spec.mix or "passive_spin" in spec.edge_needs else {}
    return {Env.THREADS: threads, "OMP_NUM_THREADS": threads, **passive}


def server_env(spec: ExperimentSpec, app: AppSpec, node: Node, raw: Path, rep: int) -> dict[str, str]:
    sfx = suffix(spec, app)
    systems = {k: v for s, settings in running(spec) for k, v in s.server_env(settings, spec, app, node, raw).items()}
    return {**_common(spec, app, "127.0.0.1", rep, spec.seed), **threads_env(spec, _limits(spec, node)),
            Env.WORKERS: str(app.workload.workers),
            Env.SERVER_LOG: str(raw / f"server-{node.name}{sfx}.csv"),
            **({Env.ENDPOINTS: ",".join(app.endpoints)} if spec.mix else {}),
            # (a relocation's target runs the app's server too: its own ready file)
            Env.READY_FILE: str(raw / f"server-ready-r{rep}{sfx}{'' if node.name == spec.role(app.workload.offload)[0].name else '-' + node.name}.json"),
            Env.MODEL_CACHE: str(model_cache()), **systems}


def endpoint_env(spec: ExperimentSpec, node: Node, broker: str, raw: Path, rep: int, epoch_ns: int = 0,
                 addresses: dict[str, str] | None = None) -> dict[str, str]:
    """`epoch_ns`: when the repetition started, t = 0 of a bursty schedule every endpoint shares;
    `addresses`: the nodes' (a relocation's target is reached at its own)."""
    app = spec.app_of(node.name)
    w = app.workload
    onoff = ({Env.ONOFF: json.dumps({**w.onoff, "seed": spec.seed + 7919 * rep, "epoch_ns": epoch_ns or time.time_ns()})}
             if w.arrivals == "onoff" else {})
    steps = [[e.t_s, r] for e in spec.timeline if e.kind == "load" for ue, r in e.ue_rates if ue == node.name]
    if steps:  # [[timeline]] load steps, from the same epoch as the link's changes (the trace restart)
        onoff[Env.RATE_STEPS] = json.dumps({"epoch_ns": epoch_ns or time.time_ns(), "steps": steps})
    moves = [[e.t_s, f"{addresses[str(e.relocate)]}:{netplan.MQTT_PORT}", e.move_s]
             for e in spec.timeline if e.kind == "relocate" and node.name in e.ues] if addresses else []
    if moves:  # [[timeline]] relocations: where the service goes, and when it is there
        onoff[Env.RELOCATIONS] = json.dumps({"epoch_ns": epoch_ns or time.time_ns(), "moves": moves})
    return {**_common(spec, app, broker, rep, spec.seed + _limits(spec, node).index), Env.ENDPOINT: node.name,
            Env.RATE: f"{w.rate:.6g}", Env.ARRIVALS: w.arrivals, **onoff, Env.BURST: str(w.burst),
            Env.WARMUP_S: f"{spec.warmup_s:g}", Env.DURATION_S: f"{spec.duration_s:g}",
            Env.TIMEOUT_S: f"{w.timeout_s:g}", Env.PAYLOAD: json.dumps(dict(w.payload)),
            Env.CONGESTION_CONTROL: json.dumps(dict(w.congestion_control)),
            Env.RECORDS: str(raw / f"requests-{node.name}.csv"),
            Env.RATE_LOG: str(raw / f"rate-{node.name}.csv"),
            **{k: v for s, settings in running(spec) for k, v in s.endpoint_env(settings, spec, app, broker).items()}}


def log_path(spec: ExperimentSpec, app: AppSpec, side: str, node: Node | NodeSpec, run_dir: Path) -> Path:
    return run_dir / "logs" / f"{side}-{node.name}{suffix(spec, app) if side == 'server' else ''}.log"


def start(spec: ExperimentSpec, app: AppSpec, side: str, node: Node, env: dict[str, str], run_dir: Path, run_id: str,
          rep: int) -> tuple[subprocess.Popen, str | None]:
    """Start the side; returns the process (the app, or its `docker run`) and the container name, if any."""
    w = app.workload
    s = w.endpoint if side == "endpoint" else w.server
    log = log_path(spec, app, side, node, run_dir)
    if s.runtime == "container":
        if s.image is None:
            raise ProviderError(f"the {side} side runs in a container but names no image")
        if node.cluster is not None:
            # Popen's interface, for a pod (continuum/engines/k3s.py)
            return _pod(spec, app, side, s.image, list(s.command), node, env, run_dir, rep, log), None  # type: ignore[return-value]
        name = f"{naming.netns(run_id, node.name)}-{side}{suffix(spec, app) if side == 'server' else ''}-r{rep}"
        limits = _limits(spec, node)
        if node.host is None:  # this machine: the node's sandbox container
            network = f"container:{containers.sandbox_name(run_id, node.name)}"
        elif not node.netns:  # a VM that is the node (qemu): the guest's Docker, the images its provisioning loaded
            network = "host"
        else:  # a machine of the hosts provider: the node's namespace is its sandbox container's there
            network = f"container:{containers.sandbox_name(run_id, node.name)}"
        # under the node's cgroup where Docker's driver is cgroupfs (roles/workload_images sets it on VMs)
        parent = naming.cgroup(run_id, node.name) if containers.cgroup_driver(node.run) == "cgroupfs" else None
        mounts = [(run_dir / "raw", True)] + ([(model_cache(), False)] if node.exists(model_cache()) else [])
        argv = containers.run_argv(name, run_id, s.image, list(s.command), network, parent, limits.quota_cpus,
                                   limits.memory_bytes, env, mounts, period_us=limits.period_us)
        return node.start(argv, log, contained=False), name
    if REGISTRY[w.app].builtin:  # started in the repository: the experiment's folder is not in its view
        argv, cwd = [node.python, "-m", "workloads", side, w.app], node.repo
        env = {**env, "PYTHONPATH": pythonpath(node)}
    else:
        argv, cwd = [node.python if a == "{python}" else a for a in s.command], w.workdir
        node.push([w.workdir])  # a machine of its own needs the user's code at the same path
    return node.start(argv, log, env, cwd=cwd, sandbox=sandbox(spec, run_dir, node.repo)), None




def remove_container(node: Node, name: str) -> None:
    """The undo of a container side: `docker rm -f` where it ran (its `docker run` then ends)."""
    if node.host is None:
        containers.remove(name)
    else:
        node.host.run(["docker", "rm", "-f", name], check=False, timeout=60)


def _pod(spec: ExperimentSpec, app: AppSpec, side: str, image: str, command: list[str], node: Node, env: dict[str, str],
         run_dir: Path, rep: int, log: Path) -> k3s.Pod:
    """The side as a pod of the machines' k3s cluster, inside the node's namespace (continuum/engines/k3s.py)."""
    assert node.cluster is not None and node.host is not None
    pod = pod_spec(spec, app, side, image, command, node, env, run_dir, rep, node.host.exists(model_cache()))
    return k3s.Pod(node.cluster.server, pod, log)


def pod_spec(spec: ExperimentSpec, app: AppSpec, side: str, image: str, command: list[str], node: Node,
             env: dict[str, str], run_dir: Path, rep: int, models_there: bool) -> k3s.PodSpec:
    """What the side's pod runs, where, and with what limits and folders (`models_there`: the
    model cache exists on the node's machine, mounted read-only like the container form's)."""
    assert node.cluster is not None and node.host is not None
    limits = _limits(spec, node)
    mounts = [(str(run_dir / "raw"), True)] + ([(str(model_cache()), False)] if models_there else [])
    return k3s.PodSpec(name=k3s.pod_name(node.name, side, app.name if spec.mix and side == "server" else "", f"r{rep}"),
                       run_id=node.cluster.run_id, node=node.name, hostname=node.cluster.hostnames[node.host.name],
                       netns=node.netns, image=containers.ref(image),
                       command=tuple(containers.image_command(image, command)), env=env, cpus=limits.quota_cpus,
                       memory_bytes=limits.memory_bytes, mounts=tuple(mounts), as_root=spec.workload.run_as_root)
