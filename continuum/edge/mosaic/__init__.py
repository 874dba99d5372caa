"""MOSAIC on the edge-system interface (docs/mosaic.md): for the edge_tasks
workload, [edge.admission] picks which queued task starts on the edge node,
MOSAIC's rules or a classic baseline (FCFS, RR, SJF, priority, EDF), each
task in a cgroup of its own made by a root agent. The node-side code is
edge-systems/mosaic; this package is what the orchestrator knows of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from continuum.config import AppSpec, ExperimentSpec
from continuum.config.edge import Draft
from continuum.config.raw import Strict
from continuum.config.validation import Issues
from continuum.edge.system import EdgeRun, EdgeSystem
from continuum.runtime import Node, start_node_daemon, stop_process
from mosaic.policies import PolicyName
from workloads.contract import Env


APP = "edge_tasks"  # the workload whose tasks it admits (workloads/edge_tasks)


class EdgeAdmission(Strict):
    """Which queued task starts on the edge node: MOSAIC or a classic scheduler (docs/mosaic.md);
    for workload.app = "edge_tasks"."""

    policy: PolicyName = "mosaic"
    n_max: int = Field(default=8, ge=1, le=64)  # mosaic: tasks at once (rule 1)
    tau_ipc: float = Field(default=0.35, gt=0, le=10)  # mosaic: the slowdown a candidate may cause (rule 2)
    prior: float = Field(default=0.2, ge=0, le=10)  # mosaic: the slowdown taken for a pair never observed
    slots: int | None = Field(default=None, ge=1, le=64)  # the baselines' tasks at once (default: the edge's CPUs)
    workers_per_class: int = Field(default=3, ge=1, le=16)  # warm worker processes per task class
    scale: float = Field(default=1.0, gt=0, le=10)  # the tasks' size (workloads/edge_tasks/jobs.py's SCALE times this)
    profile: int = Field(default=1, ge=0, le=10)  # mosaic: tasks per class run alone before the run (its time alone); 0: none


def agent_socket(run_dir: Path) -> Path:
    return run_dir / "raw" / "mosaic-agent.sock"


class Mosaic(EdgeSystem):
    """Settings: [edge.admission] as a dict with `slots` resolved (the executor gets it as JSON)."""

    name = "mosaic"
    section = "admission"
    title = "MOSAIC's admission control"
    switch = "edge.admission"
    manages = "cpu"
    model = EdgeAdmission
    node_code = ("edge-systems", "smec-edge")  # mosaic.agent borrows smec_edge.unixpath
    manifest_key = "admission"
    results_package = "continuum.edge.mosaic"
    summary_key = "admission"

    def resolve(self, table: Any, draft: Draft, ctx: Issues) -> dict | None:
        w = draft.workload
        tasks = w is not None and not draft.mix and w.app == APP
        if table is not None and not tasks and not ctx.failed("edge.admission") and w is not None:
            ctx.bad("edge.admission", f"admission control runs MOSAIC's task classes: set workload.app = \"{APP}\" "
                                      "(one app, no [workload.apps])")
        if not tasks or w is None:
            return None
        adm = table or EdgeAdmission(policy="fcfs")  # no section: tasks start in arrival order, as Linux would take them
        server = next((n for n in draft.nodes if n.role == w.offload), None)
        slots = adm.slots or max(1, int(server.cpus if server else 1))
        if w.runtime != "process" and not ctx.failed("workload.runtime"):
            ctx.bad("workload.runtime", f"{APP} runs as processes so far (its executor manages task cgroups through a root agent)")
        return {**adm.model_dump(), "slots": slots}

    def needs(self, settings: dict) -> frozenset[str]:
        return frozenset({"node_daemon", "child_cgroups", "server_queue"})

    def describe(self, a: dict, spec: ExperimentSpec) -> list[str]:
        how = f"n_max {a['n_max']}, tau_ipc {a['tau_ipc']:g}" if a["policy"].startswith("mosaic") else f"{a['slots']} task(s) at once"
        return [f"admission on {spec.offload_node.name}: {a['policy']} ({how}); a cgroup per task, made by MOSAIC's root agent; "
                f"{a['workers_per_class']} warm workers per class"]

    def manifest(self, settings: dict | None, spec: ExperimentSpec) -> dict | None:
        return settings

    def start(self, a: dict, run: EdgeRun) -> None:
        node = run.node
        assert node.cgroup is not None
        log = run.run_dir / "logs" / "mosaic-agent.log"
        args = ["--socket", str(agent_socket(run.run_dir)),
                "--cpu-dir", str(node.cgroup.dirs["cpu"]), "--cgroup-version", str(node.cgroup.version)]
        proc = start_node_daemon(node, "mosaic.agent", args, self.node_code, log, agent_socket(run.run_dir), "MOSAIC's cgroup agent")
        run.undo.callback(agent_socket(run.run_dir).unlink, missing_ok=True)
        run.undo.callback(stop_process, proc)
        run.watch("MOSAIC's cgroup agent", proc, log)
        how = f"n_max {a['n_max']}, tau_ipc {a['tau_ipc']:g}" if a["policy"].startswith("mosaic") else f"{a['slots']} task(s) at once"
        run.phase(f"edge admission on {node.name}: {a['policy']} ({how}); a cgroup per task through MOSAIC's agent")

    def server_env(self, a: dict, spec: ExperimentSpec, app: AppSpec, node: Node, raw: Path) -> dict[str, str]:
        return {Env.ADMISSION: json.dumps(a), Env.MOSAIC_AGENT: str(agent_socket(raw.parent))}

    def concurrency(self, a: dict, spec: ExperimentSpec, app: AppSpec) -> int | None:
        """As many tasks at once as the admission's slots, as a first-come-first-served executor runs them."""
        return int(a["slots"]) if app.workload.app == APP else None

    def calibration_env(self, a: dict, app: AppSpec) -> dict[str, str]:
        # what the node serves, not what a policy chooses to admit: tasks first come first served,
        # as many at once as the admission's slots, no profiling pass
        return {Env.ADMISSION: json.dumps({**a, "policy": "fcfs", "profile": 0})} if app.workload.app == APP else {}

    def code_files(self, repo: Path, app: AppSpec) -> list[Path]:
        return sorted((repo / "edge-systems" / "mosaic").glob("*.py")) if app.workload.app == APP else []

    def queued_requests(self, manifest: dict) -> bool:
        return manifest.get(self.manifest_key or "") is not None
