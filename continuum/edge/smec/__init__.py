"""SMEC on the edge-system interface (docs/smec.md): [edge.manager] kind = "smec"
gives each request a budget from its SLO and the network time SMEC's timing
measured, drops spent requests early, and (quota/cores mode) a root manager
daemon moves CPU to the app whose requests turn urgent; CUDA MPS for a mix on
a GPU. The node-side code is smec-edge/smec_edge; this package is what the
orchestrator knows of it."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

import pandas as pd
from pydantic import Field

from continuum.config import AppSpec, ExperimentSpec
from continuum.config.edge import Draft
from continuum.config.raw import Strict
from continuum.config.validation import Issues
from continuum.edge.system import EdgeRun, EdgeSystem
from continuum.errors import ProviderError
from continuum.runtime import Node, start_node_daemon
from smec_edge import mps
from workloads import contract
from workloads.contract import Env

PORT = 47100  # SMEC's timing: the endpoints' probes to the offload target (port + the app's index), its ACKs back (UDP)
WINDOW_S = 1.0  # the manager averages a server's CPU use over this long (smec_edge.manager --window-ms, its default)


class EdgeManager(Strict):
    """What manages the edge node's resources for the workload (docs/smec.md)."""

    kind: Literal["default", "smec"] = "default"  # default: Linux's scheduler; smec: SMEC's edge manager
    slo_ms: float = Field(default=contract.DEFAULT_SLO_MS, gt=0, le=60000)  # the apps' SLO (where [workload.apps] gives none), for SMEC's budgets
    early_drop: bool = True  # smec: drop a request whose budget is spent (the client is told)
    mode: Literal["quota", "cores", "off"] = "quota"  # smec: move CPU quota, or whole cores (affinity); off: timing and drops only
    unit_cpus: float = Field(default=0.25, gt=0, le=64)  # quota mode: CPU bandwidth per step
    max_cpus: float = Field(default=2.0, gt=0, le=256)  # quota mode: the most the server may get
    urgency_ms: float | None = Field(default=None, gt=0, le=60000)  # urgent below this budget (default: a third of the SLO)
    mps: Literal["auto", "on", "off"] = "auto"  # smec, several apps on a GPU: share it through CUDA MPS (auto: when there is one)


@dataclass(frozen=True)
class Settings:
    slo_ms: float
    early_drop: bool
    mode: str  # quota | cores | off (the manager daemon runs in quota and cores modes)
    quota: tuple[float, float, float] | None  # (unit CPUs, max CPUs, urgency ms); None: mode off
    mps: str  # auto | on | off: several apps' servers share the GPU through CUDA MPS (smec_edge.mps)
    per_app_cgroups: bool = False  # quota mode with several apps: the manager weighs a child cgroup per app


def manager_socket(run_dir: Path) -> Path:
    """In raw/, the one folder of the run a sandboxed server sees (removed at teardown)."""
    return run_dir / "raw" / "smec-manager.sock"


def mps_folder(run_dir: Path) -> Path:
    """In raw/, which the sandboxed servers may reach; MPS's pipes are unix sockets, whose paths are short."""
    folder = run_dir / "raw" / mps.MARK
    if len(str(folder)) > mps.MAX_PIPE_PATH:
        raise ProviderError(f"the run folder's path is too long for CUDA MPS's pipes ({len(str(folder))} > {mps.MAX_PIPE_PATH} "
                            f"characters): {folder}; set experiment.output to a shorter folder, or [edge.manager] mps = \"off\"")
    return folder


class Smec(EdgeSystem):
    name = "smec"
    section = "manager"
    title = "SMEC's edge manager"
    switch = "edge.manager.kind"
    manages = "cpu"
    model = EdgeManager
    node_code = ("smec-edge",)
    manifest_key = "edge_manager"
    summary_key = "smec"
    results_package = "continuum.edge.smec"

    def slo_defaults(self, table: Any) -> tuple[float, float | None]:
        em = table or EdgeManager()
        return em.slo_ms, em.urgency_ms

    def resolve(self, table: Any, draft: Draft, ctx: Issues) -> Settings | None:
        em: EdgeManager = table or EdgeManager()
        if em.kind != "smec":
            return None
        bad, failed, w = ctx.bad, ctx.failed, draft.workload
        if w is not None and w.runtime == "container" and not failed("edge.manager.kind"):
            bad("edge.manager.kind", "SMEC's edge manager runs with process workloads so far; set workload.runtime = \"process\"")
        if em.mode == "cores" and not failed("edge.manager"):
            cores, where = _cores(draft)
            if em.max_cpus != int(em.max_cpus):
                bad("edge.manager.max_cpus", f"{em.max_cpus:g}: cores mode hands out whole cores; give a whole number")
            elif cores is not None and em.max_cpus > cores:
                bad("edge.manager.max_cpus", f"{em.max_cpus:g} cores, but {where} has {cores}; give at most {cores}, "
                                             "or mode = \"quota\"")
            elif len(draft.apps) > em.max_cpus:
                bad("edge.manager.mode", f"cores mode gives each of the {len(draft.apps)} apps a core of its own and max_cpus is "
                                         f"{em.max_cpus:g}; raise max_cpus, or use mode = \"quota\" (CPU bandwidth steps)")
        if em.mode == "quota" and draft.groups is not None and w is not None and not failed("edge.manager"):
            _quota_problems(em, draft, ctx)
        return Settings(em.slo_ms, em.early_drop, em.mode,
                        (em.unit_cpus if em.mode == "quota" else 1.0, em.max_cpus, em.urgency_ms or contract.urgency_ms(em.slo_ms))
                        if em.mode != "off" else None,
                        em.mps if draft.mix and w is not None and w.server.runtime == "process" else "off",
                        em.mode == "quota" and draft.mix)

    def stays_behind(self, s: Settings) -> str | None:
        if s.mode == "off":
            return None  # timing and early drops live in each server: they move with it
        return (f"SMEC's edge manager daemon (mode = {s.mode!r}) manages the offload node's cgroups; SMEC's timing "
                "and early drops ([edge.manager] kind = \"smec\", mode = \"off\") move with the service")

    def needs(self, s: Settings) -> frozenset[str]:
        # servers whose threads it pins to fewer cores must not spin-wait
        return frozenset({"passive_spin"} | ({"node_daemon"} if s.quota is not None else set())
                         | ({"child_cgroups"} if s.per_app_cgroups else set()))

    def host_problems(self, s: Settings, spec: ExperimentSpec) -> list[str]:
        if s.mps == "on" and mps.unavailable():
            return [f"[edge.manager] mps = \"on\", but CUDA MPS cannot run here: {mps.unavailable()} "
                    "(\"auto\" uses it only where it can)"]
        return []

    def describe(self, s: Settings, spec: ExperimentSpec) -> list[str]:
        budgets = ", ".join(f"{a.name}: SLO {a.slo_ms:g} ms, urgent below {a.urgency_ms:.3g} ms" if a.slo_ms and a.urgency_ms
                            else f"{a.name}: best effort" for a in spec.apps)
        out = [f"SMEC on {spec.offload_node.name}: request budgets ({budgets}); early drop {'on' if s.early_drop else 'off'}"]
        if s.quota is not None:
            unit, most, _ = s.quota
            out.append("  its edge manager (root daemon beside the node): "
                       + (f"whole cores, up to {most:g}" if s.mode == "cores" else f"CPU quota in {unit:g}-CPU steps, up to {most:g}"))
        if s.mps != "off":
            out.append(f"  CUDA MPS for the servers: {s.mps}")
        return out

    def manifest(self, s: Settings | None, spec: ExperimentSpec) -> dict[str, Any]:
        if s is None:
            return {"kind": "default"}
        return {"kind": "smec", "slo_ms": s.slo_ms, "early_drop": s.early_drop, "mode": s.mode,
                "quota": None if s.quota is None or s.mode != "quota" else dict(zip(("unit_cpus", "max_cpus", "urgency_ms"), s.quota)),
                "max_cores": int(s.quota[1]) if s.quota and s.mode == "cores" else None}

    def start(self, s: Settings, run: EdgeRun) -> None:
        spec = run.spec
        if s.quota is not None:
            proc = start_node_daemon(run.node, "smec_edge.manager", _manager_args(s, spec, run.node, run.run_dir), self.node_code,
                                     run.run_dir / "logs" / "smec-manager.log", manager_socket(run.run_dir), self.title)
            run.undo.callback(manager_socket(run.run_dir).unlink, missing_ok=True)
            run.undo.callback(_stop, proc)
            run.watch(self.title, proc, run.run_dir / "logs" / "smec-manager.log")
            unit, most, _ = s.quota
            how = f"cores (affinity), up to {most:g}" if s.mode == "cores" else f"quota in {unit:g}-CPU steps up to {most:g}"
            urgent = ", ".join(f"{a.name} below {a.urgency_ms:g} ms" if a.urgency_ms is not None else f"{a.name} best effort"
                               for a in spec.apps)
            run.phase(f"SMEC's edge manager on {run.node.name}: {how}; urgent: {urgent}")
        if s.mps != "off":
            said = self._start_mps(s, run)
            run.note({"mps": said})
            run.phase(f"SMEC's GPU path: CUDA MPS {said}")

    def _start_mps(self, s: Settings, run: EdgeRun) -> str:
        """CUDA MPS for a mix of apps on a GPU (smec_edge.mps: without it, one app's
        urgent CUDA stream cannot overtake another app's kernels)."""
        why = mps.unavailable()
        if why is not None:
            if s.mps == "on":  # checked before anything was built; the GPU went away since
                raise ProviderError(f"[edge.manager] mps = \"on\": {why}")
            return f"not used: {why}"
        daemon = mps.Mps(mps_folder(run.run_dir))
        daemon.start(owner=run.run_id)
        run.undo.callback(daemon.stop)
        return f"on: the servers share one CUDA context through MPS ({daemon.folder})"

    def server_env(self, s: Settings, spec: ExperimentSpec, app: AppSpec, node: Node, raw: Path) -> dict[str, str]:
        sfx = f"-{app.name}" if spec.mix else ""
        env = {Env.SMEC_EDGE: f"0.0.0.0:{PORT + app.index}", Env.SMEC_LOG: str(raw / f"smec-{node.name}{sfx}.csv"),
               Env.SMEC_SLO_MS: f"{app.slo_ms or 0:g}", Env.SMEC_URGENCY_MS: f"{app.urgency_ms or 0:g}",
               Env.SMEC_EARLY_DROP: "1" if s.early_drop else "0",
               Env.SMEC_MANAGER: str(manager_socket(raw.parent)) if s.quota else ""}
        if (raw / mps.MARK / "control").exists():
            env.update(mps.Mps(mps_folder(raw.parent)).env)
        return env

    def endpoint_env(self, s: Settings, spec: ExperimentSpec, app: AppSpec, broker: str) -> dict[str, str]:
        return {Env.SMEC_EDGE: f"{broker}:{PORT + app.index}"}

    def drain_s(self, s: Settings) -> float:
        # The load has ended; the manager sees it in its usage average one window later and gives the
        # quota back. Its decisions (raw/smec-decisions.csv, the plot) should show that, not end with
        # the servers' stop, which follows the last answer within 1 s.
        return WINDOW_S if s.quota is not None else 0.0

    def leftovers(self, run_id: str | None) -> list[str]:
        return [f"CUDA MPS daemon of {folder}" for folder in mps.leftovers(run_id)]

    def destroy(self, run_id: str | None, say: Callable[[str], None]) -> int:
        n = 0
        for folder in mps.leftovers(run_id):
            say(f"stopping the CUDA MPS daemon of {folder}")
            mps.Mps(folder).stop()
            n += 1
        return n

    def add_records(self, run_dir: Path, df: pd.DataFrame) -> pd.DataFrame:
        from continuum.edge.smec import results

        raw = run_dir / "raw"
        return results.add_estimates(df, sorted(p for p in raw.glob("smec-*.csv") if p.name != "smec-decisions.csv"))



def _stop(proc: Any) -> None:
    from continuum.runtime import stop_process

    stop_process(proc)


def _manager_args(s: Settings, spec: ExperimentSpec, node: Node, run_dir: Path) -> list[str]:
    """smec_edge.manager for the server's node: one app starts with the node's CPUs (its quota,
    or as many cores); a mix's apps with one step each, the rest free for whichever turns urgent first."""
    assert s.quota is not None and node.cgroup is not None
    unit, most, _ = s.quota
    limits = spec.node(node.name)
    argv = ["--socket", str(manager_socket(run_dir)), "--mode", s.mode,
            "--log", str(run_dir / "raw" / "smec-decisions.csv")]
    if s.mode == "cores":
        total = int(most)
        start_units = {a.name: 1 if spec.mix else max(1, min(total, int(limits.cpus))) for a in spec.apps}
    else:
        total = int((min(most, limits.cpus) if spec.mix else most) / unit + 1e-9)
        start_units = {a.name: 1 if spec.mix else round(limits.cpus / unit) for a in spec.apps}
    if s.mode == "quota":
        argv += ["--cpu-dir", str(node.cgroup.dirs["cpu"]), "--cpuacct-dir", str(node.cgroup.dirs["cpuacct"]),
                 "--cgroup-version", str(node.cgroup.version),
                 # the kernel's CPUs per unit: a node of slower cores (speed < 1) gets its units at that speed
                 "--unit-cpus", f"{unit * limits.speed:g}", "--period-us", str(limits.period_us)]
    argv += ["--max-units", str(total)]
    for a in spec.apps:
        argv += ["--app", f"{a.name}:{start_units[a.name]}:{'be' if a.urgency_ms is None else f'{a.urgency_ms:g}'}"]
    return argv


def _quota_problems(em: EdgeManager, draft: Draft, ctx: Issues) -> None:
    assert draft.groups is not None and draft.workload is not None
    server = getattr(draft.groups, draft.workload.offload)
    bad = ctx.bad
    if draft.mix:
        most = min(em.max_cpus, server.cpus)
        if len(draft.apps) * em.unit_cpus > most + 1e-9:
            bad("edge.manager.unit_cpus", f"each of the {len(draft.apps)} apps holds at least one {em.unit_cpus:g}-CPU step, "
                                          f"more than the {most:g} CPUs the manager hands out (max_cpus, and nodes.{draft.workload.offload}.cpus)")
    elif server.cpus > em.max_cpus:
        bad("edge.manager.max_cpus", f"{em.max_cpus:g} is below the server's own {server.cpus:g} CPUs (nodes.{draft.workload.offload}.cpus), "
                                     "where the manager starts")
    elif abs(server.cpus / em.unit_cpus - round(server.cpus / em.unit_cpus)) > 1e-9:
        bad("edge.manager.unit_cpus", f"nodes.{draft.workload.offload}.cpus = {server.cpus:g} is not a whole number of "
                                      f"{em.unit_cpus:g}-CPU steps")


def _cores(draft: Draft) -> tuple[int | None, str]:
    """The cores cores mode can hand out, and where they are: this host's (netns), the edge VM's
    vCPUs (qemu: ceil of the node's cpus), or unknown until the run (hosts: the manager, on the
    edge's machine, checks it there)."""
    if draft.provider == "qemu":
        w = draft.workload
        edge = next((n for n in draft.nodes if w is not None and n.role == w.offload), None)
        return (max(1, math.ceil(edge.cpus)), f"the edge VM ({edge.name}, cpus {edge.cpus:g})") if edge else (None, "")
    if draft.provider == "hosts":
        return None, ""
    return len(os.sched_getaffinity(0)), "this host"
