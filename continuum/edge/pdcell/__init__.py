"""pDCell on the edge-system interface (docs/pdcell.md): [transport] kind =
"pdcell" carries the servers' flows to the UEs on credit from a CU at the
shared cell's downlink (mahimahi-link --cu, src/pdcell/), which sizes each
UE's queue by what the MAC will send next; "phost" is the same transport
unaware of the radio (credits as fast as the fronthaul goes); "tcp" (the
default) leaves TCP end to end. The apps keep TCP sockets: a shim on the
offload node takes the connections its servers open to the UEs (the node's
nat table), a shim on each UE hands the flows to the UE's app
(edge-systems/pdcell/shim.py). This package checks the table, gives the
emulator its options, starts the shims and reads the CU's log back."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from continuum import tcp
from continuum.config import ExperimentSpec
from continuum.config.edge import Draft
from continuum.config.raw import Strict
from continuum.config.validation import Issues
from continuum.edge.system import EdgeRun, EdgeSystem
from continuum.network import plan
from continuum.runtime import Node, stop_process, wait_for
from pdcell import wire
from workloads.contract import ANSWER_PORT

if TYPE_CHECKING:
    from continuum.network.plan import Plan

CU_PORT = wire.PORT  # the transport's UDP port
SHIM_PORT = wire.SHIM_PORT  # the offload node's shim: where its nat table sends the servers' connections to the UEs


class Transport(Strict):
    """How the servers' flows reach the UEs (docs/pdcell.md): TCP end to end, or pDCell's credit
    transport, whose CU sits at the shared cell's downlink and grants credit from what the MAC will
    send next (pdcell), or grants it as fast as the fronthaul goes, unaware of the radio (phost)."""

    kind: Literal["tcp", "pdcell", "phost"] = "tcp"
    buffer_kb: float | Literal["inf"] = 3000  # the CU's buffer shared by its UEs' queues (the paper: 3 MB; "inf": unbounded)
    unscheduled: int = Field(default=2, ge=0, le=64)  # packets a source sends with its request to transmit, without credit
    window_us: int = Field(default=1000, ge=10, le=100_000)  # te - ts: how long a credit may be used
    # after a credit that brought no data, the UE's credits start alpha later: this fixed time, or (unset)
    # the time its queued bytes need at lowest_rate_mbit (the lowest MCS's rate; LTE 20 MHz at CQI 1: ~2 Mbit/s)
    alpha_ms: float | None = Field(default=None, ge=0, le=10_000)
    lowest_rate_mbit: float = Field(default=2.0, gt=0, le=100_000)
    fronthaul_gbit: float = Field(default=10.0, gt=0, le=1000)  # phost: the credits' pace
    # the servers' TCP congestion control (their node's net.ipv4.tcp_congestion_control; unset: what the node
    # inherited from this machine, recorded in the manifest). With pdcell/phost the servers' TCP ends at the local shim.
    congestion_control: Literal["cubic", "reno", "bbr"] | None = None
    # the nodes the flows come from (the data center's servers): each runs the app's server, sharing the offload
    # node's requests (default: the offload node alone)
    servers: list[str] | None = Field(default=None, min_length=1)


CU_KEYS = ("buffer_kb", "unscheduled", "window_us", "alpha_ms", "lowest_rate_mbit", "fronthaul_gbit")  # kinds pdcell, phost


@dataclass(frozen=True)
class Settings:
    kind: str  # "pdcell" | "phost" | "tcp" (only the servers' congestion control: no CU, no shims)
    buffer_bytes: int | None  # None: unbounded
    unscheduled: int
    window_us: int
    alpha_us: int | None  # None: the UE's queued bytes at lowest_bps
    lowest_bps: int
    fronthaul_bps: int
    congestion_control: str | None  # the servers' TCP (None: the node's default, recorded)
    servers: tuple[str, ...] = ()  # the nodes the flows come from (empty: the offload node alone)


class Pdcell(EdgeSystem):
    """Settings: Settings (it runs when [transport] kind is pdcell or phost)."""

    name = "pdcell"
    section = ""
    table = "transport"  # [transport], a top-level table: kind turns it on
    model = Transport
    title = "pDCell's transport"
    switch = "transport.kind"
    manifest_key = "transport"
    results_package = "continuum.edge.pdcell"
    summary_key = "transport"
    node_code = ("edge-systems",)

    def resolve(self, table: Transport | None, draft: Draft, ctx: Issues) -> Settings | None:
        t = table
        c = draft.cell
        downlink = set() if c is None else {c.downlink, *(site.downlink for site in c.sites)} - {None}
        if "mrfs" in downlink and (t is None or t.kind == "tcp"):
            ctx.bad("cell.downlink", "mrfs orders the UEs by the bytes left of their flows, which only pDCell's CU "
                                     "tells the MAC: set [transport] kind = \"pdcell\" (or \"phost\"), or choose rr, pf or smec")
        if t is None:
            return None
        servers: tuple[str, ...] = ()
        if t.servers:
            valid = [n.name for n in draft.nodes if n.role in ("edge", "cloud")]
            for i, n in enumerate(t.servers):
                if n not in valid:
                    ctx.bad(f"transport.servers[{i}]", f"{n!r} is not an edge or cloud node of this file; valid: {', '.join(valid) or 'none'}")
            offload = draft.workload.offload if draft.workload is not None else "edge"
            first = next((n.name for n in draft.nodes if n.role == offload), None)
            if first is not None and first not in t.servers:
                ctx.bad("transport.servers", f"the offload node {first} takes the requests and serves too: list it first")
            servers = tuple(dict.fromkeys(t.servers))
        if t.kind == "tcp":
            cu_only = sorted(set(t.model_fields_set) & set(CU_KEYS))
            for k in cu_only:  # the CU's settings mean nothing without a CU: said, not ignored
                ctx.bad(f"transport.{k}", "sets pDCell's CU, which kind \"tcp\" has none of: remove it, or set kind "
                                          "\"pdcell\" or \"phost\"")
            return Settings("tcp", None, 0, 0, None, 0, 0, t.congestion_control, servers)
        if c is None or not downlink:
            ctx.bad("transport.kind", f"{t.kind!r}: the CU sits at a shared cell's downlink: add [cell] with a downlink "
                                      "scheduler (pf, rr, smec or mrfs)")
            return None
        m = draft.mobile
        if m is not None and (m.downlink_queue != "infinite" or m.downlink_loss > 0):
            ctx.bad("mobile.downlink_queue" if m.downlink_queue != "infinite" else "mobile.downlink_loss",
                    f"{t.kind!r}: the CU bounds the UEs' downlink queues (transport.buffer_kb) and leaves radio losses to the "
                    "radio's own retransmissions: leave downlink_queue \"infinite\" and downlink_loss 0")
        if draft.provider not in (None, "netns"):
            ctx.bad("transport.kind", f"{t.kind!r} runs on the netns provider for now (its shims and nat rules in the "
                                      f"nodes, the CU in this machine's emulator); the {draft.provider} provider does not carry them yet")
            return None
        return Settings(kind=t.kind, buffer_bytes=None if t.buffer_kb == "inf" else int(float(t.buffer_kb) * 1000),
                        unscheduled=t.unscheduled, window_us=t.window_us,
                        alpha_us=None if t.alpha_ms is None else int(t.alpha_ms * 1000), lowest_bps=int(t.lowest_rate_mbit * 1e6),
                        fronthaul_bps=int(t.fronthaul_gbit * 1e9), congestion_control=t.congestion_control, servers=servers)

    def describe(self, s: Settings, spec: ExperimentSpec) -> list[str]:
        cc = f"the servers' TCP: {s.congestion_control or 'the node default (recorded in the manifest)'}"
        if s.kind == "tcp":
            return [f"transport tcp: end to end; {cc}"]
        buffer = "unbounded" if s.buffer_bytes is None else f"{s.buffer_bytes / 1000:g} KB"
        how = ("credits from the cell's grants (pDCell)" if s.kind == "pdcell"
               else f"credits at the fronthaul's {s.fronthaul_bps / 1e9:g} Gbit/s, unaware of the radio (pHost-like)")
        return [f"transport {s.kind}: the servers' flows to the UEs on credit from a CU at the cell's downlink: {how}; "
                f"CU buffer {buffer}, {s.unscheduled} packets with each RTS; TCP shims on {spec.offload_node.name} and each UE; {cc}"]

    def manifest(self, s: Settings | None, spec: ExperimentSpec) -> dict[str, Any] | None:
        if s is None:
            return {"kind": "tcp"}
        if s.kind == "tcp":
            return {"kind": "tcp", "congestion_control": s.congestion_control}
        return {**asdict(s), "rtt_us": cu_rtt_us(s, spec)}

    def server_places(self, s: Settings, spec: ExperimentSpec) -> list[tuple[str, str]]:
        """The flows' other server nodes: each runs every app's server, sharing the offload node's requests."""
        return [(n, a.name) for n in s.servers if n != spec.offload_node.name for a in spec.apps]

    def server_env(self, s: Settings, spec: ExperimentSpec, app: Any, node: Node, raw: Path) -> dict[str, str]:
        if len(s.servers) < 2:
            return {}
        from workloads.contract import Env

        out = {Env.SHARED: "1"}
        if node.name != spec.offload_node.name:  # the requests are at the offload node's broker
            out[Env.BROKER] = f"{plan.build(spec).addresses[spec.offload_node.name]}:{plan.MQTT_PORT}"
        return out

    def link_args(self, s: Settings, spec: ExperimentSpec, plan: Plan, logs: Path) -> list[str]:
        if s.kind == "tcp":
            return []
        buffer = "inf" if s.buffer_bytes is None else str(s.buffer_bytes)
        alpha = f"alpha-us={s.alpha_us}" if s.alpha_us is not None else f"alpha-lowest-bps={s.lowest_bps}"
        opt = (f"--cu=port={CU_PORT},buffer-bytes={buffer},window-us={s.window_us},unscheduled={s.unscheduled},"
               f"rtt-us={cu_rtt_us(s, spec)},{alpha}" + (f",phost,fronthaul-bps={s.fronthaul_bps}" if s.kind == "phost" else ""))
        return [opt, f"--cu-log={logs}/cu.log"]

    def start(self, s: Settings, run: EdgeRun) -> None:
        """The shims: one on the offload node (its servers' connections to the UEs' answer port redirected to it),
        one on each UE, each in its node's network namespace, outside its cgroup (the transport's, not the app's)."""
        servers = [run.nodes[n] for n in s.servers] or [run.node]
        names = ", ".join(n.name for n in servers)
        for node in servers:
            if s.congestion_control:
                tcp.set_on(node, s.congestion_control, run.undo, "transport.congestion_control")
        cc = tcp.current(servers[0])
        run.note({"congestion_control": cc, "servers": [n.name for n in servers]})
        if s.kind == "tcp":
            run.phase(f"transport tcp: the servers' congestion control on {names} is {cc}")
            return
        addresses = plan.build(run.spec).addresses
        endpoints = [n.name for n in run.spec.role("endpoint")]
        for node in servers:
            self._shim(run, node, ["source", "--listen", str(SHIM_PORT), "--unscheduled", str(s.unscheduled)], f"pdcell-shim-{node.name}")
            for e in endpoints:
                rule = ["OUTPUT", "-p", "tcp", "-d", f"{addresses[e]}/32", "--dport", str(ANSWER_PORT), "-j", "REDIRECT", "--to-ports", str(SHIM_PORT)]
                node.run(["iptables", "-w", "-t", "nat", "-A", *rule])
                run.undo.callback(node.run, ["iptables", "-w", "-t", "nat", "-D", *rule], check=False)
        for e in endpoints:
            self._shim(run, run.nodes[e], ["sink"], f"pdcell-shim-{e}")
        run.phase(f"pDCell's transport ({s.kind}): the CU at the cell's downlink, TCP shims on {names} and "
                  f"{len(endpoints)} UE(s); flows to the UEs' port {ANSWER_PORT} go on credit (the servers' TCP to the shim: {cc})")

    def _shim(self, run: EdgeRun, node: Node, args: list[str], name: str) -> None:
        ready, log = run.run_dir / "raw" / f"{name}.ready", run.run_dir / "logs" / f"{name}.log"
        proc = node.start(node.argv([node.python, "-m", "pdcell.shim", *args, "--ready", str(ready)]), log, contained=False)
        run.undo.callback(ready.unlink, missing_ok=True)
        run.undo.callback(stop_process, proc)

        def listening() -> bool:
            if proc.poll() is not None:
                from continuum.errors import ProviderError

                raise ProviderError(f"pDCell's shim on {node.name} exited ({proc.returncode}); see {log}")
            return ready.exists()

        wait_for(listening, 15, f"pDCell's shim on {node.name}")
        run.watch(f"pDCell's shim on {node.name}", proc, log)



def cu_rtt_us(s: Settings, spec: ExperimentSpec) -> int:
    """The CU's first estimate of the credit loop: twice the core's one-way delay to the servers, two slots and a
    millisecond of processing (it then measures the loop itself)."""
    slot_us = spec.cell.slot_us if spec.cell is not None else 1000
    return int(2 * spec.one_way_ms(spec.workload.offload) * 1000 + 2 * slot_us + 1000)
