"""`continuum run`: provision -> network -> verify -> brokers -> workload ->
teardown -> results. Every resource's undo is registered the moment it
exists; SIGINT and SIGTERM unwind the same way as an error, and the result
folder keeps whatever was measured up to that point."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from continuum import broker, calibration, diskspace, naming, tcp
from continuum.engines import containers
from continuum import describe
from continuum.cell import traffic
from continuum.config import ExperimentSpec
from continuum.errors import ContinuumError, ProviderError, VerificationError
from continuum.monitor import NodeSampler
from continuum.network import link, mahimahi, plan as netplan, verify
from continuum.providers import REGISTRY
from continuum.edge import registry as edge_registry
from continuum.edge.system import EdgeRun
from continuum.providers.base import Deployment, Provider
from continuum.runtime import Node, exit_status, stop_process, stop_processes, wait_for
from continuum.results import events, manifest, report, tables
from continuum.undo import Undo
from continuum.workloads import REGISTRY as WORKLOADS, launch
from srsran_integration import stack
from workloads.contract import Env


@dataclass
class Run:
    """One run's context: what every phase reads (spec, plan, folder, console)
    and adds to (the undo stack, the manifest, the processes it depends on)."""

    spec: ExperimentSpec
    plan: netplan.Plan
    run_id: str
    run_dir: Path
    undo: Undo
    manifest: manifest.Manifest
    console: Console
    dep: Deployment | None = None
    vital: list["Vital"] = field(default_factory=list)
    emulator: subprocess.Popen | None = None  # mahimahi-link, once it runs
    mm_shells: list[mahimahi.Shell] = field(default_factory=list)  # emulator = "mahimahi": each endpoint's mm-link
    recalibrate: bool = False  # measure every app's service time again, whatever the cache holds
    reserve_bytes: float = diskspace.MIN_RESERVE_BYTES  # the measurement stops with less free on the run folder's disk
    stopped_early: str = ""  # why the measurement ended before its time (the disk), once it did

    def phase(self, msg: str) -> None:
        self.console.print(f"  {msg}")

    def save(self) -> None:
        manifest.write(self.manifest, self.run_dir)


class Interrupted(ContinuumError):
    """Stopped by SIGINT/SIGTERM; everything was torn down."""


def _raise_interrupt(signum, _frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def new_run_dir(spec: ExperimentSpec, run_id: str) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    d = spec.output / f"{stamp}-{spec.name}"
    if d.exists():
        d = spec.output / f"{stamp}-{spec.name}-{run_id}"
    return d


def run(spec: ExperimentSpec, argv: list[str], console: Console, dry_run: bool = False,
        recalibrate: bool = False, run_dir: Path | None = None) -> Path | None:
    """Run the experiment and write its result folder (`run_dir`, or a new one under its output folder:
    a campaign names its points' folders); the folder, or None for a dry run."""
    provider = REGISTRY[spec.provider]()
    run_id = naming.new_run_id()
    plan = netplan.build(spec)
    disk = diskspace.estimate(spec, plan)
    free = diskspace.free_bytes(run_dir.parent if run_dir else spec.output)
    if dry_run:
        for line in describe.plan(spec, plan, run_id) + _load_plan(spec) + [disk.describe(free)]:
            console.print(escape(line), highlight=False)
        problems = _host_problems(provider, spec)
        for p in problems:
            console.print(f"[yellow]host not ready:[/] {escape(p)}")  # a problem may quote [brackets] (a TOML table)
        return None
    problems = _host_problems(provider, spec)
    if free is not None and free < disk.total + disk.reserve_bytes:
        problems.append(f"the disk of the output folder {run_dir.parent if run_dir else spec.output} has {diskspace.mb(free)} free, "
                        f"and this run needs about {diskspace.mb(disk.total + disk.reserve_bytes)} ({disk.what()}, "
                        f"and {diskspace.mb(disk.reserve_bytes)} kept free for the results): free space there, set "
                        "[experiment] output to a folder on another disk, or shorten duration_s or repetitions")
    if problems:
        raise ProviderError("the host is not ready:\n  - " + "\n  - ".join(problems))

    run_dir = run_dir or new_run_dir(spec, run_id)
    (run_dir / "raw").mkdir(parents=True)
    (run_dir / "logs").mkdir()
    (run_dir / "experiment.toml").write_text(spec.text)  # the text whose hash the manifest records
    started = dt.datetime.now(dt.timezone.utc).isoformat()
    man = manifest.build(spec, run_id, argv, started)
    manifest.write(man, run_dir)
    console.print(f"[bold]{spec.name}[/]: run {run_id} -> {run_dir}")

    old = {s: signal.signal(s, _raise_interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    t_start = time.monotonic()
    error: BaseException | None = None
    undo = Undo(lambda s: console.print(f"[red]{s}[/]"))
    ctx = Run(spec, plan, run_id, run_dir, undo, man, console, recalibrate=recalibrate, reserve_bytes=disk.reserve_bytes)
    try:
        with undo:
            _run(ctx, provider)
            console.print("tearing down")
    except KeyboardInterrupt as e:
        error = e
        man.status = f"interrupted ({e or 'SIGINT'})"
    except BaseException as e:
        error = e
        man.status = f"failed: {e}"
    else:
        man.status = f"stopped early: {ctx.stopped_early}" if ctx.stopped_early else "complete"
    finally:
        man.finished = dt.datetime.now(dt.timezone.utc).isoformat()
        man.wall_s = round(time.monotonic() - t_start, 2)
        man.teardown = manifest.Teardown(complete=not undo.failures, failures=undo.failures)
        try:
            manifest.write(man, run_dir)
        except OSError as e:
            console.print(f"[red]could not update manifest.json[/]: {e.strerror}")
    if undo.failures:
        console.print(f"[red]teardown incomplete[/]: {len(undo.failures)} step(s) failed (above); "
                      f"see what is left with `continuum destroy {run_id} --list`, remove it with `continuum destroy {run_id}`")
    else:
        console.print("[green]torn down[/]: nothing of this run is left on the host")

    try:
        _results(run_dir, error, man, console)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    console.print(f"results: {run_dir}")
    if isinstance(error, KeyboardInterrupt):
        raise Interrupted(f"interrupted; partial results in {run_dir}") from None
    if error is not None and _disk_full(run_dir):
        # Whatever failed first (a log write, the emulator, a record), the cause is the disk.
        raise ProviderError(f"no space left on the disk of the run folder {run_dir}, which ended the run "
                            f"({error}); what was written before is kept there, everything of the run was torn down") from None
    if error is not None:
        raise error
    if ctx.stopped_early:
        raise ProviderError(f"the measurement stopped early: {ctx.stopped_early}; what was measured until then is in {run_dir}, "
                            "its results built, everything of the run torn down")
    return run_dir


def _results(run_dir: Path, error: BaseException | None, man: manifest.Manifest, console: Console) -> None:
    """Tables and plots of the run folder. They never hide the run's own error,
    and an interrupt while drawing says the measurement itself is whole."""
    try:
        summary, made = report.build(run_dir)
        (run_dir / "summary.txt").write_text(_plain(tables.render(summary)))
        if summary["requests"]:
            console.print(tables.render(summary))
            console.print(f"plots: {', '.join(str(p.relative_to(run_dir)) for p in made)}")
    except KeyboardInterrupt as e:
        if error is None:
            raise Interrupted(f"interrupted while building the results; the run is {man.status}; "
                              f"`continuum report {run_dir}` builds them") from None
        console.print(f"[yellow]building partial results was interrupted ({e or 'SIGINT'})[/]")
    except Exception as e:  # noqa: BLE001 - results of a failed run must not hide why it failed
        if error is None:
            raise ContinuumError(f"the run finished but its results could not be built: {e}; "
                                 f"retry with `continuum report {run_dir}`") from e
        console.print(f"[yellow]partial results could not be built[/]: {e}")


def _disk_full(path: Path) -> bool:
    try:
        return shutil.disk_usage(path).free < 64 * 1024
    except OSError:
        return False


def _plain(renderable) -> str:
    c = Console(width=140, record=True, file=open("/dev/null", "w"))
    c.print(renderable)
    return c.export_text()


def _run(ctx: Run, provider) -> None:
    spec, plan, run_dir, man, console = ctx.spec, ctx.plan, ctx.run_dir, ctx.manifest, ctx.console
    t = time.monotonic()
    console.print(f"[bold]provision[/] ({spec.provider})")
    facts = provider.provision(plan, ctx.run_id, run_dir / "logs", ctx.undo, ctx.phase)
    dep = ctx.dep = provider.deploy(plan, ctx.run_id, ctx.undo, ctx.phase)
    dep.facts.update(facts)
    man.cgroup_version = dep.facts.get("cgroup_version")
    man.delay_mechanism = dep.facts.get("delay_mechanism")
    man.netem_available = dep.facts.get("netem_available")
    man.provider_facts = {k: v for k, v in dep.facts.items()
                          if k not in ("cgroup_version", "delay_mechanism", "netem_available")} or None
    man.addresses = plan.addresses
    provider.share_run_folder(plan, dep, run_dir, ctx.undo, ctx.phase)
    ctx.phase(f"done in {time.monotonic() - t:.1f} s")
    ctx.undo.callback(launch.hand_over(run_dir / "raw", spec))
    _calibrate(ctx)
    _rates_from_params(ctx)
    spec = ctx.spec

    if spec.mobile.srsran is not None:
        console.print(f"[bold]network[/]: {spec.mobile.describe()}; core delay by {dep.facts['delay_mechanism']}"
                      + (" (mahimahi-link, every frame past its trace)" if dep.facts["delay_mechanism"] == "mahimahi-link" else ""))
    elif plan.mahimahi:
        info = mahimahi.build_info() or {}
        console.print(f"[bold]network[/]: cellular link (upstream mm-link {str(info.get('commit', '?'))[:7]} with "
                      f"{len(info.get('patches', []))} patches of mahimahi-patches/, one per endpoint), core delay by "
                      f"{dep.facts['delay_mechanism']}" + (" (mahimahi-link, every frame past its trace)"
                                                          if dep.facts["delay_mechanism"] == "mahimahi-link" else ""))
    else:
        console.print(f"[bold]network[/]: cellular link (mahimahi-link), core delay by {dep.facts['delay_mechanism']}"
                      f" (netem {'available' if dep.facts['netem_available'] else 'not in this kernel'})")
    emulator, stats = link.start(dep.nodes["ran"], spec, plan, run_dir, dep.facts["delay_mechanism"])
    ctx.undo.callback(stop_process, emulator)
    ctx.emulator = emulator
    # What must stay alive while requests flow; a death ends the run, named.
    ctx.vital.append(Vital("mahimahi-link (the cellular link)" if spec.mobile.srsran is None and not plan.mahimahi
                           else "mahimahi-link (the core delay)", emulator, run_dir / "logs" / "mahimahi-link.log"))
    shells: list[mahimahi.Shell] = []
    if plan.mahimahi:
        shells = ctx.mm_shells = mahimahi.start(dep.nodes, spec, plan, ctx.run_id, run_dir / "logs")
        ctx.undo.callback(mahimahi.stop, shells, mahimahi.stage(ctx.run_id), run_dir / "links")
        for sh in shells:
            ctx.vital.append(Vital(f"mm-link of {sh.spec.endpoint} (the cellular link, upstream Mahimahi)", sh.proc, sh.log))
        ctx.phase(f"{len(shells)} mm-link shells ready (pass-through, probe addresses past the filter)")
    if spec.mobile.srsran is not None:
        _srsran(ctx)

    console.print("[bold]verify[/] the live network against the plan")
    try:
        checks = verify.verify(spec, plan, dep, stats)
    except VerificationError as e:
        man.verification = getattr(e, "result", None)
        (run_dir / "verification.json").write_text(json.dumps(man.verification, indent=2) + "\n")
        raise
    man.verification = checks
    (run_dir / "verification.json").write_text(json.dumps(checks, indent=2) + "\n")
    for r in checks["core_rtt"]:
        ctx.phase(f"RTT {r['from']} -> {r['to']} (core only): {r['p25_rtt_ms']:.2f} ms (lower quartile; median {r['median_rtt_ms']:.2f}), plan {r['expected_rtt_ms']:g} ms  ok")
    for r in checks.get("through_stack", []):
        ctx.phase(f"{r['endpoint']}: {r['replies']} of {r['pings']} pings answered through srsUE's tunnel, "
                  f"RTT {r['median_rtt_ms']:.2f} ms (median)  ok")
    for r in checks.get("shaped_once", []):
        ctx.phase(f"{r['endpoint']}: {r['pings']} pings entered uplink {r[r['endpoint'] + '.uplink_packets']}x, "
                  f"downlink {r[r['endpoint'] + '.downlink_packets']}x (shaped once), RTT through link {r['median_rtt_ms']:.2f} ms  ok")
    ctx.phase("no route from any namespace of the run to outside addresses  ok")
    ctx.save()

    console.print("[bold]brokers[/]")
    for n in spec.nodes:
        if n.role in ("edge", "cloud"):
            proc = broker.start(dep.nodes[n.name], run_dir, spec.tcp_nodelay)
            ctx.undo.callback(stop_process, proc)
            ctx.vital.append(Vital(f"mosquitto on {n.name}", proc, run_dir / "logs" / f"mosquitto-{n.name}.log"))
            ctx.phase(f"mosquitto on {n.name} ({plan.addresses[n.name]}:{netplan.MQTT_PORT}"
                      + (", TCP_NODELAY)" if spec.tcp_nodelay else ")"))

    for name, cc in tcp.apply(spec, dep.nodes, ctx.undo, ctx.phase).items():
        man.nodes[name]["tcp_congestion_control"] = cc  # what it used: the file's, or the machine's default
    _start_edge_systems(ctx)

    man.workload.user = launch.user_note(spec)
    with NodeSampler([dep.nodes[n.name] for n in spec.nodes], run_dir / "nodes.csv"):
        for rep in range(1, spec.repetitions + 1):
            _repetition(ctx, rep)
            if ctx.stopped_early:
                break
    ctx.save()
    stop_process(emulator)  # flushes the link logs before the report reads them
    if shells:  # their logs into links/, where the report reads them
        mahimahi.stop(shells, mahimahi.stage(ctx.run_id), run_dir / "links")


def _load_plan(spec: ExperimentSpec) -> list[str]:
    """--dry-run: the load of each app whose load is a utilisation, as far as the cache knows it."""
    lines = []
    # the cache of this machine only speaks for nodes that are this machine's cgroups
    hits = calibration.from_cache(spec, spec.offload_node.name, calibration.cpu_model()) if spec.provider == "netns" else {}
    for a in spec.apps:
        u = a.workload.utilisation
        if u is None:
            continue
        hit = hits.get(a.name)
        if hit is not None:
            cap = hit.capacity_rps
            lines.append(f"  {a.name}: utilisation {u:g} x capacity {cap:.2f}/s (cached, measured {hit.made}) = "
                         f"{u * cap:.2f}/s, {u * cap / len(a.endpoints):.3g}/s per endpoint")
        elif spec.provider == "netns":
            lines.append(f"  {a.name}: utilisation {u:g}: its rate comes from the calibration at the start of the run "
                         f"(nothing cached for this node and app; `continuum calibrate {spec.source}` measures it now)")
        else:  # this machine's cache cannot speak for a VM or another machine: the run measures on the node itself
            lines.append(f"  {a.name}: utilisation {u:g}: its rate comes from the calibration on {spec.offload_node.name} "
                         f"itself ({spec.provider}), at the start of the run")
    return (["load (calibrated on the offload node):"] + lines) if lines else []


def _calibrate(ctx: Run) -> None:
    """Each app's service time on the offload node: measured (or taken from the cache) when some
    load is a utilisation or the file asks; otherwise only a cached result is recorded. Rates
    stated as utilisation become requests per second here, before anything else starts."""
    spec, dep, run_dir = ctx.spec, ctx.dep, ctx.run_dir
    assert dep is not None
    node = dep.nodes[ctx.plan.offload_target]
    apps = calibration.calibratable(spec)
    if not apps:
        return
    if calibration.wanted(spec):
        ctx.console.print(f"[bold]calibrate[/] each app's service time on {node.name}")
        found = calibration.calibrate(spec, node, run_dir / "raw", run_dir / "logs", ctx.phase,
                                      launch.sandbox(spec, run_dir, node.repo), refresh=ctx.recalibrate)
    else:  # nothing needs it: what the cache already holds is recorded, nothing is measured
        found = calibration.from_cache(spec, node.name, calibration.cpu_model(lambda p: node.read_text(p)))
        if not found:
            return
    ctx.spec = calibration.apply(spec, found)
    calibration.write_samples(found, run_dir / "raw")
    ctx.manifest.calibration = calibration.manifest_entry(ctx.spec, found)
    ctx.manifest.apps = {a.name: {**ctx.manifest.apps.get(a.name, {}), "rate": a.workload.rate} for a in ctx.spec.apps}
    ctx.manifest.timeline = events.planned(ctx.spec)  # load steps given as utilisation: their rates now
    for line in calibration.describe(ctx.spec, found):
        ctx.phase(line)
    ctx.save()


def _rates_from_params(ctx: Run) -> None:
    """Apps whose load is one of their own params (the flows' share of the cell): their rate per endpoint now,
    once the traces it is measured from are made."""
    apps = []
    for a in ctx.spec.apps:
        kind = WORKLOADS.get(a.workload.app)
        got = kind.rate_from_params(a, ctx.spec) if kind is not None and kind.rate_from_params is not None else None
        if got is not None:
            a = dataclasses.replace(a, workload=dataclasses.replace(a.workload, rate=got[0]))
            ctx.phase(got[1])
            ctx.manifest.apps = {**ctx.manifest.apps, a.name: {**ctx.manifest.apps.get(a.name, {}), "rate": got[0], "rate_from": got[1]}}
        apps.append(a)
    if any(x is not y for x, y in zip(apps, ctx.spec.apps)):
        workload = apps[0].workload if not ctx.spec.mix else ctx.spec.workload
        ctx.spec = dataclasses.replace(ctx.spec, apps=tuple(apps), workload=workload)
        ctx.save()


def _srsran(ctx: Run) -> None:
    """mobile.mode = "srsran": the real stack up, the UE attached, the endpoint routed into its tunnel."""
    assert ctx.dep is not None and ctx.spec.mobile.srsran is not None
    dep, run_dir = ctx.dep, ctx.run_dir
    endpoint = dep.nodes[ctx.spec.role("endpoint")[0].name]

    procs: list[subprocess.Popen] = []
    ctx.undo.callback(stop_processes, procs, 10.0)  # all at once: srsUE alone takes ~5 s to stop its radio and threads

    def supervise(p: stack.Process) -> None:
        procs.append(p.proc)
        ctx.vital.append(Vital(p.what, p.proc, p.log))

    try:
        stack.start(ctx.spec.mobile.srsran, dep.nodes[netplan.EPC], endpoint, run_dir, ctx.phase, supervise)
    except stack.StackError as e:
        raise ProviderError(str(e)) from None
    stack.route_endpoint(endpoint, netplan.ALL_NETS)


def host_problems(spec: ExperimentSpec) -> list[str]:
    """What the host (or the machines) lack for this experiment: nothing is made (a campaign asks this of
    every point before the first runs)."""
    return _host_problems(REGISTRY[spec.provider](), spec)


def _host_problems(provider: Provider, spec: ExperimentSpec) -> list[str]:
    """What the host lacks: the provider's own check, and what the running edge systems need of it."""
    return provider.check(spec) + edge_registry.problems(spec, provider.kind, provider.node_verbs)


def _start_edge_systems(ctx: Run) -> None:
    """Each running edge system's parts, beside the offload node, through the interface's verbs."""
    spec, dep = ctx.spec, ctx.dep
    assert dep is not None
    target = dep.nodes[ctx.plan.offload_target]
    for s, settings in edge_registry.running(spec):
        key = s.manifest_key

        def note(facts: dict, key: str | None = key) -> None:
            if key is not None:
                setattr(ctx.manifest, key, {**(getattr(ctx.manifest, key, None) or {}), **facts})

        def watch(what: str, proc: subprocess.Popen, log: Path) -> None:
            ctx.vital.append(Vital(what, proc, log))

        s.start(settings, EdgeRun(spec, target, ctx.run_dir, ctx.run_id, ctx.undo, ctx.phase, watch, note, dict(dep.nodes)))


@dataclass(frozen=True)
class Vital:
    """A process the measurement depends on, and where its log is."""

    what: str
    proc: subprocess.Popen
    log: Path

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise ProviderError(f"{self.what} exited ({exit_status(self.proc.returncode)}) during the workload; "
                                f"see {self.log}; the requests measured until then are kept")


def _repetition(ctx: Run, rep: int) -> None:
    spec = ctx.spec
    names = ", ".join(f"{a.name} ({a.workload.app}, {len(a.endpoints)} endpoint(s))" for a in spec.apps) if spec.mix else spec.workload.app
    ctx.console.print(f"[bold]workload[/] {names} ({spec.workload.runtime}), repetition {rep}/{spec.repetitions}")
    watched, servers = _start_servers(ctx, rep)
    _restart_traces(ctx)
    bulk = _start_bulk(ctx, rep)
    clients = _start_clients(ctx, rep)
    _watch(ctx, clients, watched, rep)
    for node, proc, _ in clients:
        if proc.returncode != 0:
            raise ProviderError(f"the endpoint on {node.name} failed ({exit_status(proc.returncode)}); see {ctx.run_dir}/logs/endpoint-{node.name}.log")
    _end_bulk(ctx, bulk)
    drain = max((s.drain_s(settings) for s, settings in edge_registry.running(spec)), default=0.0)
    if drain > 0:
        time.sleep(drain)  # an edge system's own records see the load end (EdgeSystem.drain_s)
    for server in servers:
        stop_process(server)


def _start_servers(ctx: Run, rep: int) -> tuple[list[Vital], list[subprocess.Popen]]:
    """Every app's server on the offload node, all loading their models at once; ready when this returns.
    Returns what to watch while requests flow (the run's vital processes and the servers) and the servers."""
    spec, run_dir, man, console, undo = ctx.spec, ctx.run_dir, ctx.manifest, ctx.console, ctx.undo
    assert ctx.dep is not None
    watched = list(ctx.vital)
    starting = []
    # the offload node serves every app; a [[timeline]] relocation's target serves the apps that move there
    places = [(ctx.plan.offload_target, app) for app in spec.apps] + [
        (n, app) for n in dict.fromkeys(e.relocate for e in spec.timeline if e.relocate and e.relocate != ctx.plan.offload_target)
        for app in spec.apps if any(set(e.ues) & set(app.endpoints) for e in spec.timeline if e.relocate == n)]
    # and the nodes an edge system fetches answers from (MECaNIC's cache origin)
    apps_by_name = {a.name: a for a in spec.apps}
    places += [(n, apps_by_name[a]) for s, settings in edge_registry.running(spec) for n, a in s.server_places(settings, spec)
               if (n, a) not in {(p, q.name) for p, q in places}]
    for name, app in places:
        target = ctx.dep.nodes[name]
        env = launch.server_env(spec, app, target, run_dir / "raw", rep)
        server, box = launch.start(spec, app, "server", target, env, run_dir, ctx.dep.run_id, rep)
        undo.callback(stop_process, server)
        if box:
            undo.callback(launch.remove_container, target, box)
        log = launch.log_path(spec, app, "server", target, run_dir)
        watched.append(Vital(f"the {app.name} server on {target.name}", server, log))
        starting.append((app, server, Path(env[Env.READY_FILE]), log, target))
    for app, server, ready, log, target in starting:
        with console.status(f"  the {app.name} server on {target.name} loads its model (up to {target.load_timeout_s / 60:.0f} min)"):
            info = _wait_ready(app.name, target, server, ready, log)
        if target.name != ctx.plan.offload_target:
            pass  # a relocation's target: the same app, said below
        elif spec.mix:
            man.workload.servers = {**(man.workload.servers or {}), app.name: info}
        else:
            man.workload.server = info
        console.print(f"  {app.name} server ready on {target.name}: {info.get('model', '?')}, weights {info.get('weights', '?')}")
        if str(info.get("weights", "")).startswith("random"):
            console.print("  [yellow]note:[/] random weights: the latency is the model's, its answers are not meaningful "
                          "(pretrained weights: see docs/workloads.md, 'Models and weights')")
    w = spec.workload
    man.workload.runtime = {"endpoint": w.endpoint.runtime, "server": w.server.runtime}
    if w.runtime == "container":
        man.workload.images = {i: containers.image_id(i) for a in spec.apps for i in (a.workload.endpoint.image, a.workload.server.image) if i}
    return watched, [proc for _, proc, _, _, _ in starting]


def _start_bulk(ctx: Run, rep: int) -> list:
    """The shared cell's bulk UEs: each an iperf3 client and its server on the offload node."""
    spec, run_dir, raw, undo = ctx.spec, ctx.run_dir, ctx.run_dir / "raw", ctx.undo
    assert ctx.dep is not None
    target = ctx.dep.nodes[ctx.plan.offload_target]
    bulk = []
    for n in spec.role("bulk"):
        box_ = launch.sandbox(spec, run_dir)
        srv = traffic.bulk_server(target, n.name, n.index, raw, run_dir, rep, box_)
        undo.callback(stop_process, srv)
        cli = traffic.bulk_client(ctx.dep.nodes[n.name], n.index, ctx.plan.addresses[target.name], spec, raw, run_dir, rep, box_)
        undo.callback(stop_process, cli)
        bulk.append((n, cli, srv))
    if bulk:
        ctx.console.print(f"  {len(bulk)} bulk UE(s) moving files ({spec.cell.bulk_direction if spec.cell else ''}) through the cell")
    return bulk


def _start_clients(ctx: Run, rep: int) -> list[tuple[Node, subprocess.Popen, Path]]:
    spec, plan = ctx.spec, ctx.plan
    assert ctx.dep is not None
    target = plan.offload_target
    clients = []
    for n in spec.role("endpoint"):
        node = ctx.dep.nodes[n.name]
        env = launch.endpoint_env(spec, node, plan.addresses[target], ctx.run_dir / "raw", rep, ctx.manifest.trace_restarts_unix_ns[-1],
                                  plan.addresses)
        proc, box = launch.start(spec, spec.app_of(n.name), "endpoint", node, env, ctx.run_dir, ctx.dep.run_id, rep)
        ctx.undo.callback(stop_process, proc)
        if box:
            ctx.undo.callback(launch.remove_container, node, box)
        clients.append((node, proc, Path(env[Env.RECORDS])))
    return clients


def _watch(ctx: Run, clients: list[tuple[Node, subprocess.Popen, Path]], watched: list[Vital], rep: int) -> None:
    """Until every endpoint is done: the progress bar, and a death of a watched process ends the run."""
    spec = ctx.spec
    total = spec.warmup_s + spec.duration_s
    t0 = time.monotonic()
    with Progress(TextColumn("  {task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeRemainingColumn(), TextColumn("{task.fields[live]}"), console=ctx.console, transient=False) as bar:
        task = bar.add_task("warm-up", total=total, live="")
        last_poll = 0.0
        while any(proc.poll() is None for _, proc, _ in clients):
            for v in watched:
                v.check()
            el = time.monotonic() - t0
            if el - last_poll >= 1.0:
                last_poll = el
                _guard_disk(ctx, clients)
                bar.update(task, completed=min(total, el), live=_live(clients, rep),
                           description="warm-up" if el < spec.warmup_s else ("measuring" if el < total else "last answers"))
            time.sleep(0.1)
        bar.update(task, completed=total, live=_live(clients, rep), description="done")


def _guard_disk(ctx: Run, clients: list[tuple[Node, subprocess.Popen, Path]]) -> None:
    """Less free on the run folder's disk than the results still need: the endpoints stop (as on their
    own at the window's end: every record written), and the run ends after this repetition, said why."""
    free = diskspace.free_bytes(ctx.run_dir)
    if ctx.stopped_early or free is None or free >= ctx.reserve_bytes:
        return
    ctx.stopped_early = (f"{diskspace.mb(free)} left on the disk of the run folder, below the "
                         f"{diskspace.mb(ctx.reserve_bytes)} its results need")
    ctx.console.print(f"  [yellow]stopping the measurement[/]: {ctx.stopped_early}")
    for _, proc, _ in clients:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)


def _end_bulk(ctx: Run, bulk: list) -> None:
    """The endpoints are done: stop the bulk UEs (stopped, iperf3 writes its report and exits 1). One that
    ended by itself before did not load the cell for the whole measurement, which the console says."""
    for n, cli, srv in bulk:
        ended = cli.poll()
        stop_process(cli)
        stop_process(srv)
        if ended is not None:
            ctx.console.print(f"  [yellow]bulk UE {n.name}: iperf3 ended ({exit_status(ended)}) before the endpoints did[/]; "
                              f"the cell was not loaded for the whole measurement; see {ctx.run_dir}/logs/bulk-{n.name}.log")


def _restart_traces(ctx: Run) -> None:
    """Every repetition's traffic meets the traces from their first line: the
    emulator has run since before the network checks, and the time to there
    (provisioning, checks, model loads: seconds to minutes, varying run to run)
    would otherwise decide which part of the trace the measurement sees."""
    assert ctx.emulator is not None
    ctx.emulator.send_signal(signal.SIGUSR2)
    for sh in ctx.mm_shells:  # upstream mm-link with mahimahi-patches/0005: the same signal, the same restart
        sh.proc.send_signal(signal.SIGUSR2)
    ctx.manifest.trace_restarts_unix_ns = [*ctx.manifest.trace_restarts_unix_ns, time.time_ns()]


def _wait_ready(app: str, node: Node, server: subprocess.Popen, ready: Path, log: Path) -> dict:
    """The server's ready file, once it has loaded its model."""
    info: dict = {}

    def server_ready() -> bool:
        if server.poll() is not None:
            raise ProviderError(f"the {app} server on {node.name} exited ({exit_status(server.returncode)}); see {log}")
        try:  # a bring-your-own server may write the file in several steps: ready once it parses
            info.update(json.loads(node.read_text(ready)))
        except (OSError, ValueError):
            return False
        return True

    wait_for(server_ready, node.load_timeout_s, f"the {app} server on {node.name} to load its model",
             poll=0.05 if node.host is None else 0.5)
    return info


def _live(clients, rep: int) -> str:
    """The progress bar's counts: the measured requests only, as the summary counts them."""
    frames = []
    for node, _, out in clients:
        try:
            frames.append(pd.read_csv(io.StringIO(node.read_text(out))))
        except (OSError, pd.errors.EmptyDataError):
            pass
    if not frames:
        return "no answers yet"
    df = pd.concat(frames)
    df = df[df["repetition"] == rep]
    measured = df[df["phase"] == "measure"]
    if measured.empty:
        return f"warm-up: {int((df['status'] == 'ok').sum())} answered (not counted)"
    ok = measured[measured["status"] == "ok"]
    if ok.empty:
        return f"0 of {len(measured)} answered"
    e2e = (ok["t_received"] - ok["t_drawn"]) / 1e6
    return f"{len(ok)} of {len(measured)} answered, median {e2e.median():.1f} ms"
