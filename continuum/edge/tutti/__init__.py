"""Tutti's edge side on the edge-system interface: with the shared cell's
uplink scheduled by tutti ([cell] uplink = "tutti"), a notice agent on the
offload node watches requests arrive and tells the RAN at once, instead of
the RAN waiting for the UE's buffer reports (docs/cell.md). The agent
(continuum/cell/notice.py) and the scheduler (mahimahi-link's cell) are the
cell's; this package is where the cell's scheduler choice touches the edge."""

from __future__ import annotations

from typing import Any

from continuum.cell import traffic
from continuum.config import ExperimentSpec
from continuum.config.edge import Draft
from continuum.config.validation import Issues
from continuum.edge.system import EdgeRun, EdgeSystem
from continuum.network import plan as netplan
from continuum.runtime import stop_process


class Tutti(EdgeSystem):
    """Settings: True (it runs when the cell's uplink scheduler is tutti; it has no table of its own)."""

    name = "tutti"
    section = ""  # owns no [edge.*] table: the cell's uplink scheduler turns it on
    title = "Tutti's request notices"
    switch = "cell.uplink"

    def resolve(self, table: Any, draft: Draft, ctx: Issues) -> bool | None:
        c = draft.cell  # one cell's uplink, or any of several cells'
        return True if c is not None and (c.uplink == "tutti" or any(s.uplink == "tutti" for s in c.sites)) else None

    def describe(self, settings: bool, spec: ExperimentSpec) -> list[str]:
        return [f"Tutti's notice agent on {spec.offload_node.name}: each request's arrival told to the RAN "
                f"(UDP port {netplan.NOTICE_PORT}), in place of the UE's buffer reports"]

    def start(self, settings: bool, run: EdgeRun) -> None:
        agent = traffic.notice_agent(run.node, run.run_dir)
        run.undo.callback(stop_process, agent)
        run.watch(f"the request-notice agent on {run.node.name}", agent, run.run_dir / "logs" / f"notice-agent-{run.node.name}.log")
        run.phase(f"tutti: request notices from {run.node.name} to the RAN (UDP port {netplan.NOTICE_PORT})")
