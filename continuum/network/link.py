"""The cellular hop: one `mahimahi-link forward` process in the ran namespace
serves every UE link of the plan, with the core delay rules, and writes
mm-link-format logs and live JSON statistics into the run folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable

from continuum.config import ExperimentSpec, presets
from continuum.config.raw import NOTICE_SCHEDULERS
from continuum.edge import registry
from continuum.network.plan import NOTICE_PORT, Plan
from continuum.runtime import Node, wait_for
from continuum.traces import mahimahi_link_binary


def argv(spec: ExperimentSpec, plan: Plan, logs: Path, stats: Path, delay_mechanism: str,
         binary: Path | None = None) -> list[str]:
    m = spec.mobile
    out = [str(binary or mahimahi_link_binary()), "forward"]
    for link, (up, down) in zip(plan.cell_links, link_traces(spec, plan, lambda: unshaped_trace(logs))):
        light = "" if plan.mahimahi else "".join(ref.link_keys(d[:-4]) for d in ("uplink", "downlink")
                                                 if (ref := m.light(d)) is not None)
        out.append(f"--link=name={link.name},ue={link.ue_if},core={link.core_if},up={up},down={down}{light}")
    out += [
        f"--uplink-queue={m.uplink_queue}",
        f"--downlink-queue={m.downlink_queue}",
        f"--uplink-log={logs}{'/core-delay' if plan.mahimahi else ''}/{{name}}.uplink.log",
        f"--downlink-log={logs}{'/core-delay' if plan.mahimahi else ''}/{{name}}.downlink.log",
        f"--stats={stats}",
        f"--seed={spec.seed}",
        "--quiet",
    ]
    if m.uplink_queue_args:
        out.append(f"--uplink-queue-args={m.uplink_queue_args}")
    if m.downlink_queue_args:
        out.append(f"--downlink-queue-args={m.downlink_queue_args}")
    if m.uplink_loss:
        out.append(f"--uplink-loss={m.uplink_loss}")
    if m.downlink_loss:
        out.append(f"--downlink-loss={m.downlink_loss}")
    if m.ms_bursts:
        out.append("--ms-bursts")
    if plan.gso:
        out.append("--gso")
    if m.emulator_threads > 1:
        out.append(f"--threads={m.emulator_threads}")
    out += cell_argv(plan, logs)
    out += [f"--bypass={b}" for b in plan.bypass]
    if delay_mechanism == "mahimahi-link":
        out += [f"--delay={prefix}={ms}" for prefix, ms in plan.delay_rules]
    if any(e.kind != "load" for e in spec.timeline):
        out += [f"--timeline={logs}/timeline.txt", f"--timeline-log={logs}/timeline.log"]
    for system, settings in registry.running(spec):
        out += system.link_args(settings, spec, plan, logs)
    return out


def link_traces(spec: ExperimentSpec, plan: Plan, unshaped: Callable[[], Path]) -> list[tuple[Path, Path]]:
    """Each UE link's (uplink, downlink) trace as the emulator starts it, in plan.cell_links' order: a
    cell member may have its own channel, or its first cell's; where srsRAN or mm-link is the link, the
    emulator is only a delay stage and gets `unshaped()` (unshaped_trace) both ways."""
    m, c = spec.mobile, plan.cell
    out = []
    for link in plan.cell_links:
        if m.uplink is None or m.downlink is None or plan.mahimahi:
            out.append((unshaped(), unshaped()))
            continue
        own = {d: c.channel(link.name, c.start(link.name), d) if c else None for d in ("uplink", "downlink")}
        out.append(((own["uplink"] or m.uplink).path, (own["downlink"] or m.downlink).path))
    return out


def timeline_lines(spec: ExperimentSpec, plan: Plan) -> list[str]:
    """[[timeline]] as the emulator's --timeline file: one line per change and UE link,
    times in ms after each trace restart (a repetition's start)."""
    prefixes = {d.node or d.tier: d.prefix for d in plan.core_delays}
    out = [f"# {spec.source}: [[timeline]] (mahimahi-link --timeline; docs/experiment-file.md)"]
    c = spec.cell
    at = {m.name: c.start(m.name) for m in c.members} if c is not None else {}  # each member's cell as the timeline goes
    for e in spec.timeline:
        t = f"{e.t_s * 1000:.3f}"
        if e.kind == "handover" and c is not None:
            assert e.outage_s is not None
            joined = f"{(e.t_s + e.outage_s) * 1000:.3f}"  # its channel there from when it joins
            to = c.site(str(e.handover))
            for ue in e.ues:
                out.append(f"{t} {ue} handover {e.handover} {e.outage_s * 1000:.3f} {e.queue}")
                for d in ("uplink", "downlink"):
                    old, new = c.channel(ue, at[ue], d), c.channel(ue, to, d)
                    if old != new:
                        path = (new or getattr(spec.mobile, d)).path
                        out.append(f"{joined} {ue} {d}-trace {path} {e.phase}")
                at[ue] = to
            continue
        for ue in e.ues:
            if e.kind == "outage":
                assert e.outage_s is not None
                out.append(f"{t} {ue} outage {e.outage_s * 1000:.3f} {e.queue}")
            elif e.kind == "trace":
                out += [f"{t} {ue} {d}-trace {ref.path} {e.phase}"
                        for d, ref in (("uplink", e.uplink), ("downlink", e.downlink)) if ref is not None]
            elif e.kind == "core_delay":
                out.append(f"{t} {ue} delay {prefixes[e.node or e.tier]} {e.core_delay_ms:.3f}")
            # (a load step is the endpoints': launch.endpoint_env)
    return out


def unshaped_trace(folder: Path) -> Path:
    """mobile.mode = "srsran": the link only adds the core delay (every frame
    bypasses the trace), but mahimahi-link's --link needs a trace; this one
    (one opportunity per ms) is never used, and says so."""
    path = folder / "unused-bypassed.trace"
    if not path.exists():
        path.write_text("1\n")
    return path


def cell_argv(plan: Plan, logs: Path) -> list[str]:
    """The shared cell's options: its members by link name, their classes in that order."""
    c = plan.cell
    if c is None:
        return []
    out = []
    sites = c.sites
    if c.uplink:
        out.append(f"--uplink-cell={','.join(str(s.uplink) for s in sites) if sites else c.uplink}")
    if c.downlink:
        out.append(f"--downlink-cell={','.join(str(s.downlink) for s in sites) if sites else c.downlink}")
    if sites:  # several cells: their names, and where each member starts
        out += [f"--cells={','.join(s.name for s in sites)}",
                f"--cell-start={','.join(next(s.name for s in sites if m.name in s.members) for m in c.members)}"]
    out += [f"--cell-members={','.join(m.name for m in c.members)}", f"--cell-slot-us={c.slot_us}",
            f"--cell-blocks={','.join(str(s.blocks) for s in sites) if sites else c.blocks}",
            f"--cell-be-starvation-slots={c.be_starvation_slots}",
            f"--cell-pf-alpha={c.pf_alpha:g}", f"--cell-pf-beta={c.pf_beta:g}", f"--cell-pf-window-slots={c.pf_window_slots}"]
    out += [f"--cell-class={'be' if m.cls == 'be' else f'lc:{max(1, round(m.slo_ms))}'}" for m in c.members]
    if c.uplink_signalling and c.uplink:
        out += ["--cell-uplink-signalling", f"--cell-sr-period-slots={c.sr_period_slots}",
                f"--cell-k2-slots={c.k2_slots}", f"--cell-sr-grant-blocks={c.sr_grant_blocks}"]
        if c.periodic_bsr_slots:
            out.append(f"--cell-periodic-bsr-slots={c.periodic_bsr_slots}")
    if c.access is not None:  # the access procedure's radio timing, both directions (src/radio.rs)
        a = presets.ACCESS[c.access]
        out += [f"--uplink-radio={a.radio(True)}", f"--downlink-radio={a.radio(False)}"]
    if c.uplink in NOTICE_SCHEDULERS or any(s.uplink in NOTICE_SCHEDULERS for s in sites):
        out.append(f"--cell-notice-port={NOTICE_PORT}")
    out.append(f"--cell-log={logs}/cell-{{dir}}.log")
    return out


def start(ran: Node, spec: ExperimentSpec, plan: Plan, run_dir: Path, delay_mechanism: str) -> tuple[subprocess.Popen, Path]:
    """Start the emulator and wait until it serves (its first statistics file)."""
    logs = run_dir / "links"
    (logs / "core-delay" if plan.mahimahi else logs).mkdir(parents=True, exist_ok=True)
    stats = run_dir / "links" / "stats.json"
    if any(e.kind != "load" for e in spec.timeline):
        (logs / "timeline.txt").write_text("\n".join(timeline_lines(spec, plan)) + "\n")
    if ran.host is None:
        cmd = argv(spec, plan, logs, stats, delay_mechanism)
    else:  # on the link host: the binary the link_host role installed, the traces at the same paths
        cmd = argv(spec, plan, logs, stats, delay_mechanism, Path(ran.host.root) / "bin" / "mahimahi-link")
        ran.push([logs, *trace_files(spec)])
    proc = ran.start(cmd, run_dir / "logs" / "mahimahi-link.log")

    def ready() -> bool:
        if proc.poll() is not None:
            from continuum.errors import ProviderError

            text = (run_dir / "logs" / "mahimahi-link.log").read_text(errors="replace").strip()
            raise ProviderError(f"mahimahi-link exited with status {proc.returncode}: {text}")
        return stats.exists() if ran.host is None else ran.host.exists(stats)

    wait_for(ready, 10 if ran.host is None else 30, "mahimahi-link to start")
    return proc, stats


def trace_files(spec: ExperimentSpec) -> list[Path]:
    """Every trace file the emulator reads (the experiment's, cell members' own, and their cells')."""
    m = spec.mobile
    paths = [t.path for t in (m.uplink, m.downlink) if t is not None]
    for u in (spec.cell.members if spec.cell else ()):
        paths += [t.path for t in (u.uplink, u.downlink) if t is not None]
    for s in (spec.cell.sites if spec.cell else ()):
        paths += [t.path for t in (s.uplink_trace, s.downlink_trace) if t is not None]
    for e in spec.timeline:
        paths += [t.path for t in (e.uplink, e.downlink) if t is not None]
    return sorted({Path(p) for p in paths})


def read_stats(stats: Path, read: Callable[[Path], str] = Path.read_text) -> dict[str, dict]:
    """{link name: {"uplink": {...}, "downlink": {...}}} from the live statistics file."""
    doc = json.loads(read(stats))
    return {link["name"]: link for link in doc["links"]}
