"""`continuum calibrate FILE`: each app's service time on the offload node as
the file configures it, measured in a cgroup with that node's quota, period
and memory on this machine (the netns provider's nodes are exactly that),
then cached for the runs of the file. Nothing else is built: no namespace,
no link, no broker."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from continuum import REPO, calibration, cgroups, config, experiment, naming
from continuum.errors import ContinuumError
from continuum.runtime import WORKLOAD_USER, Node, Sandbox
from continuum.undo import Undo
from continuum.workloads.launch import model_cache


def run(file: Path, cached_only: bool, console: Console) -> int:
    spec = experiment.load(file, materialize=False)
    apps = calibration.calibratable(spec)
    if not apps:
        raise ContinuumError(f"{file}: no app to calibrate (bring-your-own apps run their own server, which "
                             "calibration cannot time; their load is given as rate)")
    if spec.provider != "netns":
        raise ContinuumError(f"{file}: provider {spec.provider!r} runs its nodes on other machines or in VMs, whose "
                             "service times this machine's cgroup does not show; `continuum run` calibrates there, "
                             "on the node itself, at the start of the run")
    node_spec = spec.offload_node
    found: dict[str, calibration.Calibration] = {}
    if cached_only:
        found = calibration.from_cache(spec, node_spec.name, calibration.cpu_model())
        missing = [a.name for a in apps if a.name not in found]
        if missing:
            console.print(f"nothing cached for {', '.join(missing)} on this machine and node; "
                          f"`continuum calibrate {file}` measures it")
    else:
        run_id = naming.new_run_id()
        console.print(f"[bold]{spec.name}[/]: calibrating on {node_spec.name} as configured "
                      f"(cpus {node_spec.cpus:g}, period {node_spec.period_us} us, speed {node_spec.speed:g}), "
                      f"cgroup {naming.cgroup(run_id, node_spec.name)}")
        with Undo(lambda s: console.print(f"[red]{s}[/]")) as undo:
            cg = cgroups.create(naming.cgroup(run_id, node_spec.name), node_spec.quota_cpus, node_spec.memory_bytes,
                                period_us=node_spec.period_us)
            undo.callback(cg.remove)
            work, remove = calibration.work_folder()
            undo.callback(remove)
            node = Node(node_spec.name, "", cgroup=cg)
            sandbox = None if spec.workload.run_as_root else Sandbox(WORKLOAD_USER, ro=(REPO, model_cache()), rw=(work,))
            found = calibration.calibrate(spec, node, work, work, lambda s: console.print(f"  {s}"), sandbox, refresh=True)
    if found:
        spec = calibration.apply(spec, found)
        console.print(table(spec, found))
        for line in calibration.describe(spec, found)[len(found):]:
            console.print(line)
        console.print(f"cache: {calibration.cache_dir()} (runs of this file on this machine use it; "
                      "`continuum run --recalibrate` measures again)")
    return 0


def table(spec: config.ExperimentSpec, found: dict[str, calibration.Calibration]) -> Table:
    t = Table(title=f"service time on {spec.offload_node.name} (ms, each request alone in the server, back to back)")
    for col in ("app", "median", "P90", "P99", "CPU/request", "at once", "capacity /s", "load", "rate /s (per endpoint)", "measured"):
        t.add_column(col, justify="left" if col in ("app", "load", "measured") else "right")
    for a in spec.apps:
        c = found.get(a.name)
        if c is None:
            continue
        s = c.summary
        asked = f"utilisation {a.workload.utilisation:g}" if a.workload.utilisation is not None else \
            f"rate: {calibration.offered(a, c):.2f} of capacity"
        t.add_row(a.name, f"{s['median']:.1f}", f"{s['p90']:.1f}", f"{s['p99']:.1f}", f"{c.cpu_ms_per_request:.1f}",
                  str(c.concurrency), f"{c.capacity_rps:.2f}", asked,
                  f"{a.workload.rate * len(a.endpoints):.3g} ({a.workload.rate:.3g})", f"{c.source}, {c.made}")
    return t
