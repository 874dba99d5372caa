"""`continuum run --dry-run`: the plan in words, section by section: nodes
and machines, the network (links, the cellular hop, core delays, the shared
cell), the edge systems that run, the processes and the schedule."""

from __future__ import annotations

from pathlib import Path

from continuum.config import presets

from continuum.runtime import WORKLOAD_USER
from continuum import naming
from continuum.config import ExperimentSpec
from continuum.edge.registry import running
from continuum.engines import containers, k3s
from continuum.network import plan as netplan
from srsran_integration import lte


def plan(spec: ExperimentSpec, plan: netplan.Plan, run_id: str) -> list[str]:
    lines = [f"experiment {spec.name!r}: provider {spec.provider}, run id {run_id}"]
    lines += _nodes(spec, plan, run_id) + _network(spec, plan)
    edge = [line for s, settings in running(spec) for line in s.describe(settings, spec)]
    if edge:
        lines += ["edge systems:", *(f"  {line}" for line in edge)]
    lines += _processes(spec, plan)
    lines.append(f"schedule: {spec.repetitions} x ({spec.warmup_s:g} s warm-up + {spec.duration_s:g} s measured), seed {spec.seed}")
    if spec.timeline:
        lines += ["timeline (t_s from each repetition's start, its warm-up included):",
                  *(f"  {e.describe()}" for e in spec.timeline)]
    return lines


def _default_cc() -> str:
    try:
        return f"{Path('/proc/sys/net/ipv4/tcp_congestion_control').read_text().strip()} (this machine's default)"
    except OSError:
        return "the machine's default"


def _nodes(spec: ExperimentSpec, plan: netplan.Plan, run_id: str) -> list[str]:
    lines: list[str] = []
    lines.append("nodes:")
    for n in spec.nodes:
        lines.append(f"  {n.name:<10} namespace {naming.netns(run_id, n.name):<24} {plan.addresses[n.name]:<12} "
                     f"cpus {n.cpus:g}  memory {n.memory_bytes / 2**20:.0f} MiB  cgroup {naming.cgroup(run_id, n.name)}"
                     + (f"  quota {n.quota_us} us per {n.period_us} us" if n.period_us != 100_000 or n.speed != 1 else "")
                     + (f" (speed {n.speed:g}: cores emulated {1 / n.speed:.3g}x slower)" if n.speed != 1 else "")
                     + f"  TCP {n.tcp_congestion_control or _default_cc()}")
    if spec.mobile.srsran is not None:
        lines.append(f"  {netplan.EPC:<10} namespace {naming.netns(run_id, netplan.EPC):<24} "
                     f"{plan.node(netplan.EPC).address:<12} srsepc, srsenb, srsue (no limits)")
    for sh in plan.mahimahi:
        lines.append(f"  {sh.namespace:<10} namespace {naming.netns(run_id, sh.namespace):<24} "
                     f"upstream mm-link for {sh.endpoint} (its own shell namespace; runs as {WORKLOAD_USER})")
    ran = ("mahimahi-link forward (core delay only)" if spec.mobile.srsran is not None or plan.mahimahi
           else "mahimahi-link forward")
    lines.append(f"  {'ran':<10} namespace {naming.netns(run_id, 'ran'):<24} {ran} (no limits)")
    lines.append(f"  {'core':<10} namespace {naming.netns(run_id, 'core'):<24} router")
    if plan.placement:
        lines.append("machines (over SSH; cross-machine links are VXLAN tunnels):")
        for machine in plan.machines:
            placed = ", ".join(n for n, w in plan.placement.items() if w == machine.name) or "nothing"
            lines.append(f"  {machine.name:<10} {machine.user}@{machine.address}:{machine.port}  "
                         f"roles {', '.join(machine.roles)}  carries {placed}")
        if plan.engine == "k3s":
            lines.append(f"workloads as pods of the k3s cluster reached on {plan.k3s_server}, in namespace {k3s.namespace(run_id)}, "
                         f"each inside its node's network namespace; images imported: {', '.join(plan.images)}")
    if spec.provider == "qemu":
        lines.append("VMs (QEMU, Debian guest; the node's namespace holds its tap, wired to the veth; core delay by netem in the guests):")
        from continuum.providers.qemu import guest_memory

        for n in spec.nodes:
            docker = "; Docker, the run's images loaded" if n.name in plan.docker_nodes else ""
            lines.append(f"  {n.name:<10} {max(1, -(-n.cpus // 1)):.0f} vCPU (cgroup quota {n.cpus:g} inside), "
                         f"{guest_memory(plan.node(n.name), plan) >> 20} MiB{docker}")
    return lines


def _network(spec: ExperimentSpec, plan: netplan.Plan) -> list[str]:
    lines: list[str] = []
    lines.append("links:")
    for v in plan.veths:
        lines.append(f"  {v.a.namespace}:{v.a.name} ({v.a.address or 'unnumbered'}) <-> {v.b.namespace}:{v.b.name} ({v.b.address or 'unnumbered'})")
    m = spec.mobile
    if m.uplink is not None and m.downlink is not None:
        lines.append("cellular link (per endpoint, upstream mm-link with mahimahi-patches/ in its mmN namespace; "
                     f"ran adds the core delay only, bypass {', '.join(plan.bypass)}):" if plan.mahimahi
                     else "cellular link (per endpoint, in ran):")
        lines.append(f"  uplink   {m.uplink.path}  queue {m.uplink_queue} {m.uplink_queue_args}  loss {m.uplink_loss}")
        lines.append(f"  downlink {m.downlink.path}  queue {m.downlink_queue} {m.downlink_queue_args}  loss {m.downlink_loss}")
        lines.append(f"  replay   {m.replay()}")
        for d in ("uplink", "downlink"):
            if (ref := m.light(d)) is not None:
                lines.append(f"    {d} light {ref.path}: a burst that finds the link idle waits its base delay, then the "
                             f"train's offsets ({ref.pdo_bytes} bytes each), the rest the heavy trace; "
                             + (f"a burst lasts while the link holds packets or released one < {ref.idle_ms:g} ms ago, "
                                f"its packets no sooner than {ref.active_ms:g} ms (active_ms)" if ref.active_ms is not None
                                else f"idle after {ref.idle_ms:g} ms (CellReplay's rule)")
                             + (f"; size offsets {ref.offsets}" if ref.offsets else ""))
        if plan.mahimahi:
            lines.append(f"  bypass   {', '.join([netplan.PROBE_NET + '.0.0/16', *m.bypass])} (mm-link --bypass; first one: "
                         "verification probe addresses)")
        else:
            lines.append(f"  bypass   {', '.join(plan.bypass)} (first one: verification probe addresses)")
        lines.append("  segmentation " + ("kernel: host offloads on, mahimahi-link --gso charges each MTU segment"
                                          if plan.gso else "emulator: host offloads off, MTU frames into the link"))
        if m.emulator_threads > 1:
            lines.append(f"  forwarding threads {min(m.emulator_threads, len(plan.cell_links))} (mahimahi-link --threads; "
                         "the links dealt out, a shared cell's members on one thread)")
    else:
        lines.append(f"cellular link: {m.describe()}, in {netplan.EPC}; the endpoint's traffic enters srsUE's tunnel")
    lines.append(f"core delay (mechanism {spec.core.mechanism}" + (f": {plan.delay_mechanism}" if spec.core.mechanism == "auto" else "") + "):")
    for role in ("edge", "cloud"):
        if spec.role(role):
            label = spec.core.edge_label if role == "edge" else spec.core.cloud_label
            lines.append(f"  {role:<6} {spec.one_way_ms(role):g} ms one-way ({label}), RTT {2 * spec.one_way_ms(role):g} ms")
    if spec.cell is not None:
        c = spec.cell
        lines.append(f"shared cell: uplink {c.uplink or 'private links'}, downlink {c.downlink or 'private links'}, "
                     f"{c.blocks} blocks, {c.slot_us} us slots"
                     + (f", SR every {c.sr_period_slots} slots, k2 {c.k2_slots}, "
                        + (f"periodic BSR every {c.periodic_bsr_slots} slots" if c.periodic_bsr_slots else "a BSR in every transmission")
                        if c.uplink_signalling and c.uplink else ""))
        if c.access is not None:
            a = presets.ACCESS[c.access]
            lines[-1] = lines[-1].replace("shared cell:", f"access procedure ({c.access}: {a.what}; "
                                          "each endpoint's uplink a one-UE cell):", 1)
            lines.append(f"  radio after the trace, both directions: {a.summary()}")
        elif c.sites:
            lines[-1] = lines[-1].replace("shared cell:", f"{len(c.sites)} shared cells (the first's):", 1)
        for site in c.sites:
            chan = [f"{d} channel {t.given}" for d, t in (("uplink", site.uplink_trace), ("downlink", site.downlink_trace)) if t]
            lines.append(f"  cell {site.name}: uplink {site.uplink or 'private links'}, downlink {site.downlink or 'private links'}, "
                         f"{site.blocks} blocks" + "".join(f", {x}" for x in chan) + f"; starting here: {', '.join(site.members) or 'none'}")
        for u in c.members:
            lines.append(f"  {u.name:<10} {u.cls}" + (f" SLO {u.slo_ms:g} ms" if u.cls == "lc" else ""))
    return lines


def _processes(spec: ExperimentSpec, plan: netplan.Plan) -> list[str]:
    lines: list[str] = []
    lines.append("processes:")
    if spec.mobile.srsran is not None:
        lines.append(f"  {netplan.EPC}: srsepc, srsenb, srsue from {spec.mobile.srsran.prefix}/bin (configs in the run's srsran/), "
                     f"the UE's tunnel {lte.UE_TUN} in {spec.role('endpoint')[0].name}")
        lines.append("  ran: mahimahi-link forward: every frame past its trace (bypass 0.0.0.0/0), the core delay added")
    elif plan.mahimahi:
        for sh in plan.mahimahi:
            lines.append(f"  {sh.namespace}: mm-link --no-command --pass-through={sh.device} (the gateway of {sh.endpoint}), "
                         f"as {WORKLOAD_USER}")
        lines.append("  ran: mahimahi-link forward: every frame past its trace (bypass 0.0.0.0/0), the core delay added")
    else:
        lines.append(f"  ran: mahimahi-link forward ({len(plan.cell_links)} link(s))")
    for n in spec.role("bulk"):
        lines.append(f"  {n.name}: iperf3 TCP {spec.cell.bulk_direction if spec.cell else ''} with {plan.offload_target}, "
                     f"port {netplan.BULK_PORT + n.index}")
    for n in spec.nodes:
        if n.role in ("edge", "cloud"):
            servers = "".join(f", {a.name + ': ' if spec.mix else ''}{a.workload.app} server ({_how(a.workload.server, spec.engine)}"
                              + (f", {a.workload.workers} requests at once" if a.workload.workers > 1 else "") + ")"
                              for a in spec.apps)
            lines.append(f"  {n.name}: mosquitto :{netplan.MQTT_PORT}" + (" (TCP_NODELAY)" if spec.tcp_nodelay else "")
                         + (servers if n.name == plan.offload_target else ""))
    for n in spec.role("endpoint"):
        a = spec.app_of(n.name)
        aw = a.workload
        slo = "" if not spec.mix else ", best effort" if a.slo_ms is None else f", SLO {a.slo_ms:g} ms"
        lines.append(f"  {n.name}: {a.name + ': ' if spec.mix else ''}{aw.app} endpoint ({_how(aw.endpoint, spec.engine)}) -> {plan.offload_target} "
                     f"({plan.addresses[plan.offload_target]}), "
                     + (f"utilisation {aw.utilisation:g} of its capacity" if aw.utilisation is not None
                        else f"load {aw.params['load']:g} of the cell (its rate at the run's start)" if aw.params.get("load")
                        else f"{aw.rate:g} req/s")
                     + f" {aw.arrivals}"
                     + (f" ({aw.onoff['on_s']:g} s bursts at {aw.onoff['ratio']:g}x every ~{aw.onoff['off_s']:g} s)" if aw.onoff else "")
                     + (f", bursts of {aw.burst}" if aw.burst > 1 else "")
                     + (", congestion control" if aw.congestion_control.get("enabled") else "") + slo)
    return lines


def _how(side, engine: str) -> str:
    if side.runtime == "container":
        return f"{'k3s pod' if engine == 'k3s' else 'container'} {containers.ref(side.image)}" + (f" {' '.join(side.command)}" if side.command else "")
    return "process" + (f": {' '.join(side.command)}" if side.command else "")
