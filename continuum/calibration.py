"""Calibration: each app's service time and capacity measured on the node that
serves it, so that load is stated as utilisation (a share of that capacity)
and means the same queueing regime on a laptop, a 2-core VM or a 64-core
server. The measuring itself is workloads/calibrate.py, started inside the
node like the app's server; this module decides when it is needed, keys and
caches the results, and turns utilisation into request rates.

A cached result is used only while everything that decides the service time
is unchanged: the CPU model, the node's quota, period, speed and memory, the
app, its code, parameters and payload, the server's threads and concurrency,
the Python packages, and the measuring settings. What the key cannot see is
how busy the machine is: `--recalibrate` (or `[calibration] cache = false`)
measures again, and every run reports the service time its server actually
had next to the calibrated one (results/load.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import pwd
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from continuum import REPO
from continuum.config import AppSpec, ExperimentSpec, NodeSpec
from continuum.errors import ProviderError
from continuum.runtime import WORKLOAD_USER, Node, Sandbox, stop_process
from continuum.workloads import REGISTRY
from continuum.workloads.launch import model_cache, pythonpath, threads_env
from continuum.edge.registry import running
from workloads import calibrate as node_side
from workloads.contract import Env

CACHE_ENV = "CONTINUUM_CALIBRATION_CACHE"
# What a service time depends on beyond the app's own code: the numeric and ML stacks.
PACKAGES = ("numpy", "torch", "torchvision", "tensorflow", "tensorflow-cpu", "keras", "transformers", "tokenizers",
            "av", "pandas", "zstandard", "redis", "aiohttp", "paho-mqtt")
MODEL_LOAD_S = 300.0  # allowed for the server's model to load, before the measured requests


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "continuum" / "calibration"))


@dataclass(frozen=True)
class Calibration:
    """One app's measured service on its node."""

    app: str  # its name in the run ([workload.apps] key, or the app)
    workload: str  # the app itself (image_classification, ...)
    node: str
    source: str  # fresh | cache
    made: str  # when it was measured (UTC, ISO 8601)
    key: str
    cpu_model: str
    limits: dict  # the node as measured: cpus, period_us, speed, memory_bytes
    concurrency: int  # requests in service at once (the server's workers, or edge_tasks' slots)
    requests: int
    window_s: float
    capacity_rps: float  # requests/s the node serves of this app alone, at saturation
    service_ms: tuple[float, ...]  # each measured request, in the order they finished
    cpu_ms_per_request: float
    model_load_s: float

    def stat(self, q: float) -> float:
        s = sorted(self.service_ms)
        return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]

    @property
    def summary(self) -> dict:
        return {"median": round(statistics.median(self.service_ms), 3), "p10": round(self.stat(0.10), 3), "p90": round(self.stat(0.90), 3),
                "p99": round(self.stat(0.99), 3), "mean": round(statistics.fmean(self.service_ms), 3),
                "min": round(min(self.service_ms), 3), "max": round(max(self.service_ms), 3)}

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "service_ms": list(self.service_ms)}

    @classmethod
    def from_json(cls, d: dict, **override) -> "Calibration":
        fields = {f.name for f in dataclasses.fields(cls)}
        d = {k: v for k, v in {**d, **override}.items() if k in fields}
        return cls(**{**d, "service_ms": tuple(d["service_ms"])})


def wanted(spec: ExperimentSpec) -> bool:
    """Whether the run measures (or takes from the cache) its apps' service times."""
    return (spec.calibration.when == "always" or any(a.workload.utilisation is not None for a in spec.apps)
            or any(e.utilisation is not None for e in spec.timeline))


def calibratable(spec: ExperimentSpec) -> list[AppSpec]:
    """Apps whose server calibration can run: continuum's own, in process form."""
    return [a for a in spec.apps if REGISTRY[a.workload.app].builtin]


def concurrency(spec: ExperimentSpec, app: AppSpec) -> int:
    """Requests the app's server has in service at once: its workers, unless an edge system
    that runs says otherwise (an admission stage: the tasks it runs at once)."""
    for s, settings in running(spec):
        n = s.concurrency(settings, spec, app)
        if n is not None:
            return n
    return app.workload.workers


def cpu_model(read: Callable[[Path], str] | None = None) -> str:
    """The CPU model of the machine that runs the node (`read`: its files; default this machine's)."""
    try:
        text = (read or Path.read_text)(Path("/proc/cpuinfo"))
    except OSError:
        return platform.processor() or "unknown"
    for line in text.splitlines():
        k, _, v = line.partition(":")
        if k.strip() in ("model name", "Processor", "cpu model"):
            return v.strip()
    return platform.machine()


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in PACKAGES:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def _code_sha(spec: ExperimentSpec, app: AppSpec) -> str:
    """The app's code, the measuring code, and the code of edge systems that serve it: a change to any may change the times."""
    h = hashlib.sha256()
    kind = app.workload.app
    files = sorted((REPO / "workloads" / kind).glob("*.py")) + [REPO / "workloads" / "calibrate.py", REPO / "workloads" / "media.py"]
    for s, _ in running(spec):
        files += s.code_files(REPO, app)
    for f in files:
        if f.exists():
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def limits(node: NodeSpec) -> dict:
    return {"cpus": node.cpus, "period_us": node.period_us, "speed": node.speed, "memory_bytes": node.memory_bytes}


def node_env(spec: ExperimentSpec, app: AppSpec, node: NodeSpec) -> dict[str, str]:
    """The app's settings as its server gets them in a run (workloads/launch.server_env), less the network."""
    w = app.workload
    env = {Env.PARAMS: json.dumps(dict(w.params)), Env.PAYLOAD: json.dumps(dict(w.payload)), Env.SEED: str(spec.seed),
           **threads_env(spec, node), Env.WORKERS: str(w.workers), Env.APP: app.name}
    for s, settings in running(spec):
        env.update(s.calibration_env(settings, app))
    return env


def key(spec: ExperimentSpec, app: AppSpec, node: NodeSpec, model: str) -> str:
    c = spec.calibration
    facts = {"cpu_model": model, "packages": package_versions(), "provider": spec.provider, "limits": limits(node),
             "app": app.workload.app, "code": _code_sha(spec, app), "env": node_env(spec, app, node),
             "concurrency": concurrency(spec, app),
             "settings": [c.warmup_requests, c.requests, c.min_s, c.max_s], "version": 1}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:24]


def cached(k: str) -> dict | None:
    try:
        return json.loads((cache_dir() / f"{k}.json").read_text())
    except (OSError, ValueError):
        return None


def store(c: Calibration) -> None:
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f"{c.key}.json.tmp"
    tmp.write_text(json.dumps(c.to_json()))
    tmp.replace(d / f"{c.key}.json")


def measure(spec: ExperimentSpec, app: AppSpec, node: Node, node_spec: NodeSpec, work: Path, logs: Path,
            sandbox: Sandbox | None, model: str, k: str) -> Calibration:
    """Run workloads/calibrate.py in the node (its cgroup and, unless the file says otherwise,
    as the workload user) and read what it measured; `work` must be writable to that user."""
    out = work / f"calibration-{app.name}.json"
    c = spec.calibration
    env = {**node_env(spec, app, node_spec), Env.MODEL_CACHE: str(model_cache()),
           "PYTHONPATH": pythonpath(node),
           node_side.SETTINGS: json.dumps({"warmup_requests": c.warmup_requests, "requests": c.requests, "min_s": c.min_s,
                                           "max_s": c.max_s, "concurrency": concurrency(spec, app), "out": str(out)})}
    log = logs / f"calibrate-{node.name}-{app.name}.log"
    proc = node.start([node.python, "-m", "workloads", "calibrate", app.workload.app], log, env, cwd=node.repo, sandbox=sandbox)
    try:
        rc = proc.wait(timeout=MODEL_LOAD_S + c.max_s + 60)
    except subprocess.TimeoutExpired:
        raise ProviderError(f"calibrating {app.name} on {node.name} took longer than {MODEL_LOAD_S + c.max_s + 60:.0f} s; "
                            f"see {log}") from None
    finally:
        stop_process(proc)
    if rc != 0:
        raise ProviderError(f"calibrating {app.name} on {node.name} failed ({rc}); see {log}")
    try:
        got = json.loads(node.read_text(out))
    except (OSError, ValueError) as e:
        raise ProviderError(f"calibrating {app.name} on {node.name} wrote no result ({e}); see {log}") from None
    if not got["service_ms"] or not got["capacity_rps"]:
        raise ProviderError(f"calibrating {app.name} on {node.name} measured no request; see {log}")
    return Calibration(app=app.name, workload=app.workload.app, node=node.name, source="fresh",
                       made=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), key=k, cpu_model=model,
                       limits=limits(node_spec), concurrency=got["concurrency"], requests=got["requests"],
                       window_s=got["window_s"], capacity_rps=got["capacity_rps"], service_ms=tuple(got["service_ms"]),
                       cpu_ms_per_request=got["cpu_ms_per_request"], model_load_s=got["model_load_s"])


def from_cache(spec: ExperimentSpec, node: str, model: str) -> dict[str, Calibration]:
    """What the cache holds for the file's apps on its offload node (machine of CPU `model`),
    unless the file says cache = false."""
    out = {}
    for app in calibratable(spec) if spec.calibration.cache else []:
        hit = cached(key(spec, app, spec.offload_node, model))
        if hit is not None:
            out[app.name] = Calibration.from_json(hit, source="cache", app=app.name, node=node)
    return out


def calibrate(spec: ExperimentSpec, node: Node, work: Path, logs: Path, say: Callable[[str], None],
              sandbox: Sandbox | None, refresh: bool = False) -> dict[str, Calibration]:
    """Each app's calibration on the offload node: from the cache when its key matches
    (unless `refresh` or the file says cache = false), else measured now and cached."""
    node_spec = spec.offload_node
    model = cpu_model(lambda p: node.read_text(p))
    hits = {} if refresh else from_cache(spec, node.name, model)
    out = {}
    for app in calibratable(spec):
        k = key(spec, app, node_spec, model)
        if app.name in hits:
            c = hits[app.name]
            say(f"{app.name}: calibration from the cache (measured {c.made})")
        else:
            c_ = spec.calibration
            say(f"calibrating {app.name} on {node.name}: model load, {c_.warmup_requests} warm-up requests, then "
                f">= {c_.requests} requests and >= {c_.min_s:g} s back to back, {concurrency(spec, app)} at once")
            t = time.monotonic()
            c = measure(spec, app, node, node_spec, work, logs, sandbox, model, k)
            store(c)
            say(f"{app.name}: measured in {time.monotonic() - t:.1f} s")
        out[app.name] = c
    return out


def apply(spec: ExperimentSpec, found: dict[str, Calibration]) -> ExperimentSpec:
    """The spec with every utilisation turned into a rate per endpoint."""
    apps = []
    for a in spec.apps:
        w = a.workload
        if w.utilisation is not None:
            c = found.get(a.name)
            if c is None:
                raise ProviderError(f"{a.name}: its load is a utilisation, but it was not calibrated")
            w = dataclasses.replace(w, rate=w.utilisation * c.capacity_rps / len(a.endpoints))
        apps.append(dataclasses.replace(a, workload=w))
    workload = apps[0].workload if not spec.mix else spec.workload
    timeline = []
    for e in spec.timeline:  # a load step's utilisation: the same share of each UE's app's capacity
        if e.utilisation is not None:
            rates = []
            for ue in e.ues:
                a = spec.app_of(ue)
                c = found.get(a.name)
                if c is None:
                    raise ProviderError(f"{a.name}: a [[timeline]] load step is a utilisation, but it was not calibrated")
                rates.append((ue, e.utilisation * c.capacity_rps / len(a.endpoints)))
            e = dataclasses.replace(e, ue_rates=tuple(rates))
        timeline.append(e)
    return dataclasses.replace(spec, apps=tuple(apps), workload=workload, timeline=tuple(timeline))


def offered(app: AppSpec, c: Calibration) -> float:
    """The share of the node's capacity for this app that its endpoints offer, together."""
    return app.workload.rate * len(app.endpoints) / c.capacity_rps


def describe(spec: ExperimentSpec, found: dict[str, Calibration]) -> list[str]:
    """One line per app: its measured service and the load it gets, in both units."""
    lines = []
    total = 0.0
    for a in spec.apps:
        c = found.get(a.name)
        if c is None:
            continue
        s = c.summary
        u = offered(a, c)
        total += u
        asked = "utilisation" if a.workload.utilisation is not None else "rate"
        lines.append(f"{a.name}: service {s['median']:.1f} ms median, P90 {s['p90']:.1f}, P99 {s['p99']:.1f} "
                     f"({c.requests} requests, {c.concurrency} at once, {c.source}); capacity {c.capacity_rps:.2f}/s; "
                     f"load ({asked}) {u:.2f} of it = {a.workload.rate * len(a.endpoints):.2f}/s "
                     f"({len(a.endpoints)} x {a.workload.rate:.3g}/s)")
    if len(lines) > 1:
        lines.append(f"the node's offered utilisation, summed over its apps: {total:.2f}")
    return lines


def manifest_entry(spec: ExperimentSpec, found: dict[str, Calibration]) -> dict:
    return {"host_cpu_model": cpu_model(), "apps": {
        a.name: {"source": c.source, "made": c.made, "key": c.key, "node": c.node, "cpu_model": c.cpu_model,
                 "limits": c.limits, "concurrency": c.concurrency, "requests": c.requests, "window_s": c.window_s,
                 "capacity_rps": round(c.capacity_rps, 4), "service_ms": c.summary, "cpu_ms_per_request": c.cpu_ms_per_request,
                 "model_load_s": c.model_load_s, "utilisation": round(offered(a, c), 4),
                 "utilisation_asked": a.workload.utilisation, "rate_per_endpoint": round(a.workload.rate, 4),
                 "samples": f"raw/calibration-{a.name}.json"}
        for a in spec.apps if (c := found.get(a.name)) is not None}}


def write_samples(found: dict[str, Calibration], raw: Path) -> None:
    """Each calibration's whole distribution beside the run's records."""
    for name, c in found.items():
        (raw / f"calibration-{name}.json").write_text(json.dumps(c.to_json()))


def work_folder() -> tuple[Path, Callable[[], None]]:
    """A folder the workload user may write (outside /tmp, which node_exec gives it its own of),
    for `continuum calibrate`, which has no run folder; and its removal."""
    d = cache_dir() / f"work-{os.getpid()}"
    d.mkdir(parents=True, exist_ok=True)
    try:
        pw = pwd.getpwnam(WORKLOAD_USER)
        os.chown(d, pw.pw_uid, pw.pw_gid)
    except (KeyError, PermissionError):
        pass
    return d, lambda: shutil.rmtree(d, ignore_errors=True)

