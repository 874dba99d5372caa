"""manifest.json: everything needed to know how a result was made and to make
it again: the command line, config hash, trace checksums, seed, versions of
every component, which delay mechanism and cgroup version ran, host facts."""

from __future__ import annotations

import dataclasses

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict

import continuum
from continuum.config import ExperimentSpec, presets
from continuum import REPO
from continuum.results import events
from continuum.network import mahimahi
from continuum.traces import mahimahi_link_binary


def _out(argv: list[str]) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (p.stdout or p.stderr).strip().splitlines()[0] if (p.stdout or p.stderr).strip() else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _os_release(read: Callable[[Path], str] = Path.read_text) -> str:
    try:
        for line in read(Path("/etc/os-release")).splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return "unknown"


def versions() -> dict:
    from continuum import broker

    v = {
        "continuum": continuum.__version__,
        "continuum_git": _out(["git", "-C", str(REPO), "describe", "--always", "--dirty"]),
        "python": sys.version.split()[0],
        "kernel": platform.release(),
        "mosquitto": broker.version(),
        "mahimahi-link": _out([str(mahimahi_link_binary()), "--version"]),
    }
    # From the installed metadata, not by importing: importing torch costs seconds on every run.
    for key, dist in (("torch", "torch"), ("torchvision", "torchvision"), ("paho.mqtt", "paho-mqtt"),
                      ("pandas", "pandas"), ("numpy", "numpy"), ("pydantic", "pydantic")):
        try:
            v[key] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            v[key] = "not installed"
    return v


def _mobile(spec: ExperimentSpec) -> dict[str, Any]:
    """What carried the endpoint's traffic: the emulated link, or the real stack and its cell."""
    s = spec.mobile.srsran
    if s is None:
        out: dict[str, Any] = {"mode": "emulated", "segmentation": spec.mobile.segmentation,
                               "emulator_threads": spec.mobile.emulator_threads, "emulator": {"name": spec.mobile.emulator},
                               "replay": "workload-aware" if spec.mobile.uplink_light or spec.mobile.downlink_light else "plain"}
        for d in ("uplink", "downlink"):
            if (ref := spec.mobile.light(d)) is not None:
                out[f"{d}_light"] = {"given": ref.given, "path": str(ref.path), "sha256": ref.sha256, "archive_id": ref.archive_id,
                                     "pdo_bytes": ref.pdo_bytes, "idle_ms": ref.idle_ms, "active_ms": ref.active_ms,
                                     "offsets": None if ref.offsets is None else {"path": str(ref.offsets), "sha256": sha256_of(ref.offsets)}}
        if spec.mobile.emulator == "mahimahi":  # upstream's commit, the patches applied (their SHA-256), the binary
            out["emulator"] = mahimahi.manifest_entry()
        return out
    from srsran_integration import environment, lte

    c = s.cell
    dl, ul = lte.frequencies_mhz(c.earfcn)
    return {"mode": "srsran", "generation": s.generation, "radio": c.radio, "earfcn": c.earfcn, "band": lte.band(c.earfcn),
            "dl_mhz": dl, "ul_mhz": ul, "prb": c.prb, "tx_gain": c.tx_gain, "rx_gain": c.rx_gain, "ue": c.ue,
            "prefix": str(s.prefix), "srsran": _read(s.prefix / "share" / "srsran" / "continuum-version"),
            "s1_transport": environment.s1_transport()}


def sha256_of(path: Path) -> str:
    from continuum.traces import sha256

    return sha256(path)


def _read(path: Path) -> str:
    """A version marker playbooks/srsran.yml writes (srsRAN's programs have no --version: they start)."""
    try:
        return path.read_text().strip()
    except OSError:
        return "unknown (not installed by playbooks/srsran.yml)"


def host(read: Callable[[Path], str] | None = None) -> dict:
    """The machine's facts a result depends on: this one's, or (`read`: its files) a machine a run used
    over SSH, whose CPUs are counted from its /proc/cpuinfo."""
    reader = read or Path.read_text
    mem = 0
    try:
        for line in reader(Path("/proc/meminfo")).splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    from continuum.calibration import cpu_model

    if read is None:
        name, machine, cpus = platform.node(), platform.machine(), os.cpu_count()
    else:
        name = reader(Path("/proc/sys/kernel/hostname")).strip()
        try:
            machine = reader(Path("/proc/sys/kernel/arch")).strip()
        except OSError:  # before Linux 6.1
            machine = "unknown"
        cpus = sum(1 for line in reader(Path("/proc/cpuinfo")).splitlines() if line.startswith("processor"))
    return {"hostname": name, "os": _os_release(reader), "machine": machine,
            "cpu_model": cpu_model(read), "cpus": cpus, "memory_bytes": mem}


class Teardown(BaseModel):
    model_config = ConfigDict(extra="forbid")

    complete: bool
    failures: list[str] = []


class WorkloadFacts(BaseModel):
    """What the workload said and ran as, filled in as the run goes."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    server: dict[str, Any] | None = None  # the server's ready file (model, framework, weights, ...)
    servers: dict[str, dict[str, Any]] | None = None  # a mix: each app's server's ready file
    runtime: dict[str, str] | None = None  # side -> process | container
    images: dict[str, str] | None = None  # image -> id, container sides
    user: dict[str, str] | None = None  # side -> whom it ran as


class Manifest(BaseModel):
    """manifest.json, typed: the facts known at start (build), then what the
    run learns (provider facts, verification, workload) and its outcome. The
    keys beyond these fields are the edge systems' own (edge_entries)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    run_id: str
    experiment: str
    command_line: list[str]
    started: str
    config_file: str
    config_sha256: str
    seed: int
    provider: str
    nodes: dict[str, dict[str, Any]]
    traces: dict[str, dict[str, Any]]  # empty with mode = "srsran"
    mobile: dict[str, Any] = {"mode": "emulated"}
    core: dict[str, Any]
    versions: dict[str, str]
    host: dict[str, Any]
    status: str = "running"  # running | complete | interrupted (...) | failed: ...
    finished: str | None = None
    wall_s: float | None = None
    teardown: Teardown | None = None
    cgroup_version: int | list[int] | None = None
    # machines and VMs: where each node ran, provisioning, clock offsets, tunnel MTU, accelerator, boot time
    provider_facts: dict[str, Any] | None = None
    delay_mechanism: str | None = None
    netem_available: bool | None = None
    addresses: dict[str, str] | None = None
    verification: dict[str, Any] | None = None
    workload: WorkloadFacts = WorkloadFacts()
    cell: dict[str, Any] | None = None  # the shared cell as run (schedulers, timings, members with class and SLO)
    # an edge system queues requests inside the servers (an admission stage): their processing time includes the queue
    server_queue: bool = False
    apps: dict[str, dict[str, Any]] = {}  # each application: its app, endpoints, SLO (None: best effort)
    duration_s: float | None = None  # the measured window of each repetition
    # when each repetition's workload started, and with it the traces (from their first line)
    trace_restarts_unix_ns: list[int] = []
    # each app's service time measured on its node, and the load it got in units of it (continuum/calibration.py)
    calibration: dict[str, Any] | None = None
    # [[timeline]]: each change as planned (when each applied: links/timeline.log; its effect: timeline.csv)
    timeline: list[dict[str, Any]] = []
    broker: dict[str, Any] = {}  # the brokers' and MQTT clients' settings: tcp_nodelay ([workload] tcp_nodelay)


def build(spec: ExperimentSpec, run_id: str, argv: list[str], started: str) -> Manifest:
    return Manifest(
        run_id=run_id,
        experiment=spec.name,
        command_line=argv,
        started=started,
        config_file=str(spec.source),
        config_sha256=spec.sha256,
        seed=spec.seed,
        provider=spec.provider,
        nodes={n.name: {"role": n.role, "cpus": n.cpus, "memory_bytes": n.memory_bytes, "cpu_period_us": n.period_us,
                        "speed": n.speed, "tcp_congestion_control": n.tcp_congestion_control} for n in spec.nodes},
        traces={d: {"given": t.given, "archive_id": t.archive_id, "path": str(t.path), "sha256": t.sha256}
                for d, t in (("uplink", spec.mobile.uplink), ("downlink", spec.mobile.downlink)) if t is not None},
        mobile=_mobile(spec),
        core={"edge_one_way_ms": spec.core.edge_ms, "edge": spec.core.edge_label,
              "cloud_one_way_ms": spec.core.cloud_ms, "cloud": spec.core.cloud_label,
              "jitter_ms": spec.core.jitter_ms, "delay_mechanism": spec.core.mechanism},
        versions=versions(),
        host=host(),
        **edge_entries(spec),
        server_queue="server_queue" in spec.edge_needs,
        duration_s=spec.duration_s,
        broker={"tcp_nodelay": spec.tcp_nodelay},
        timeline=events.planned(spec),
        apps={a.name: {"app": a.workload.app, "endpoints": list(a.endpoints), "slo_ms": a.slo_ms,
                       "urgency_ms": a.urgency_ms, "rate": a.workload.rate, "utilisation": a.workload.utilisation,
                       "arrivals": a.workload.arrivals, **({"onoff": dict(a.workload.onoff)} if a.workload.onoff else {})}
              for a in spec.apps},
        cell=None if spec.cell is None else {
            **{k: v for k, v in dataclasses.asdict(spec.cell).items() if k != "members"},
            "members": [{"name": m.name, "cls": m.cls, "slo_ms": m.slo_ms,
                         **{d: {"given": t.given, "path": str(t.path), "sha256": t.sha256}
                            for d, t in (("uplink", m.uplink), ("downlink", m.downlink)) if t is not None}}
                        for m in spec.cell.members],
            "offload_one_way_ms": spec.one_way_ms(spec.workload.offload),
            # the access procedure's radio timing as the emulator got it (src/radio.rs)
            **({"radio": {"uplink": presets.ACCESS[spec.cell.access].radio(True),
                          "downlink": presets.ACCESS[spec.cell.access].radio(False)}} if spec.cell.access else {}),
        },
    )


def edge_entries(spec: ExperimentSpec) -> dict[str, Any]:
    """Each registered edge system's top-level entry (EdgeSystem.manifest_key), also for
    one that does not run (what ran instead: Linux's scheduler, no admission stage)."""
    from continuum.edge.registry import SYSTEMS

    return {s.manifest_key: s.manifest(spec.edge.get(name), spec) for name, s in SYSTEMS.items() if s.manifest_key}


def write(manifest: Manifest, run_dir: Path) -> None:
    tmp = run_dir / "manifest.json.tmp"
    tmp.write_text(manifest.model_dump_json(indent=2) + "\n")
    tmp.replace(run_dir / "manifest.json")
