"""What the experiment file's model asks of an edge system, and nothing more:
the [edge.SECTION] table it owns, the apps' SLO defaults that table gives,
and its settings resolved against the rest of the file. The config layer
names no system; continuum/experiment.py hands it the registered ones
(continuum/edge/registry.py), whose full interface is continuum/edge/system.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Sequence

from pydantic import BaseModel

from continuum.config import raw
from continuum.config.spec import AppSpec, CellSpec, MobileSpec, NodeSpec, WorkloadSpec
from continuum.config.validation import Issues, validate_section
from workloads import contract

# What a running edge system may ask of the nodes and of the provider that builds them (EdgeSection.needs).
NEEDS = {
    "node_daemon": "a root daemon on the offload node's machine, with its cgroup in view",
    "child_cgroups": "child cgroups under the offload node's own (per app or per task)",
    "passive_spin": "servers that wait without spinning (OpenMP's passive wait): their threads get fewer cores",
    "server_queue": "servers that queue requests themselves: their processing time includes the queue",
}

# The needs a provider meets by implementing a node verb (Provider.node_verbs); the others every provider meets.
PROVIDER_VERBS = ("node_daemon", "child_cgroups")

DEFAULT_SLO_MS = contract.DEFAULT_SLO_MS


@dataclass(frozen=True)
class Draft:
    """The file as resolved so far, for an edge system's checks across sections."""

    nodes: tuple[NodeSpec, ...]
    apps: tuple[AppSpec, ...]
    workload: WorkloadSpec | None
    groups: raw.Nodes | None  # [nodes] as written (a mix's endpoint count filled in)
    mix: bool  # [workload.apps]
    provider: str | None
    cell: CellSpec | None = None  # the shared cell, resolved
    mobile: MobileSpec | None = None  # [mobile], resolved


class EdgeSection(Protocol):
    name: ClassVar[str]  # its key in ExperimentSpec.edge: "smec"
    section: ClassVar[str]  # the table it owns: [edge.<section>] ("": none, another key turns it on)
    table: ClassVar[str]  # or a top-level table it owns instead ("transport": [transport]; "": none)
    title: ClassVar[str]  # for people: "SMEC's edge manager"
    switch: ClassVar[str]  # the key that turns it on, where a conflict is reported
    manages: ClassVar[str | None]  # the edge resource it decides over ("cpu"): two running systems may not share one
    model: ClassVar[type[BaseModel]]

    def slo_defaults(self, table: Any) -> tuple[float, float | None] | None:
        """The apps' SLO and urgency budget (ms) where [workload.apps] does not give them; None: no say."""
        ...

    def resolve(self, table: Any, draft: Draft, ctx: Issues) -> Any | None:
        """Its settings when it runs in this experiment (None: it does not), problems into ctx."""
        ...

    def needs(self, settings: Any) -> frozenset[str]:
        """What it asks of nodes and providers when it runs (keys of NEEDS)."""
        ...

    def stays_behind(self, settings: Any) -> str | None:
        """What of it a [[timeline]] relocation cannot take along to the service's new node, for
        people, with what would move (None: it moves with the service)."""
        ...


def key(s: EdgeSection) -> str:
    """Where the system's table is in `tables`' result: its [edge.SECTION]'s name, or its top-level table's."""
    return s.section or s.table


def top_tables(systems: Sequence[EdgeSection]) -> dict[str, EdgeSection]:
    """The top-level tables the systems own ([transport]), by name."""
    return {s.table: s for s in systems if s.table}


def tables(file: dict[str, Any], systems: Sequence[EdgeSection], ctx: Issues) -> dict[str, Any]:
    """The systems' tables, each checked against its owner's model, by `key`: [edge]'s (a table no
    system owns is an error) and the top-level tables a system owns."""
    out: dict[str, Any] = {}
    for name, top in top_tables(systems).items():
        if name in file:
            if not isinstance(file[name], dict):
                ctx.bad(name, f"expected a table ([{name}])")
            else:
                out[name] = validate_section(top.model, file[name], ctx.file, name, ctx.issues)
    data = file.get("edge")
    if data is None:
        return out
    owners = {s.section: s for s in systems if s.section}  # a system with no section owns no table
    if not isinstance(data, dict):
        ctx.bad("edge", "expected a table ([edge.SECTION] tables: " + ", ".join(f"[edge.{k}]" for k in owners) + ")")
        return out
    for section, table in data.items():
        owner = owners.get(section)
        if owner is None:
            ctx.bad(f"edge.{section}", f"unknown key; valid: {', '.join(owners) or 'none (no edge system is registered)'}")
        elif not isinstance(table, dict):
            ctx.bad(f"edge.{section}", f"expected a table ([edge.{section}])")
        else:
            out[section] = validate_section(owner.model, table, ctx.file, f"edge.{section}", ctx.issues)
    return out


def slo_defaults(tabs: dict[str, Any], systems: Sequence[EdgeSection]) -> tuple[float, float | None]:
    for s in systems:
        d = s.slo_defaults(tabs.get(key(s)))
        if d is not None:
            return d
    return DEFAULT_SLO_MS, None


def resolve(tabs: dict[str, Any], systems: Sequence[EdgeSection], draft: Draft, ctx: Issues) -> tuple[dict[str, Any], frozenset[str]]:
    """The systems that run, with their settings, and what they need together."""
    running: dict[str, Any] = {}
    for s in systems:
        settings = s.resolve(tabs.get(key(s)), draft, ctx)
        if settings is not None:
            running[s.name] = settings
    holder: dict[str, EdgeSection] = {}
    for s in systems:
        if s.name not in running or s.manages is None:
            continue
        first = holder.setdefault(s.manages, s)
        if first is not s and not ctx.failed(first.switch):
            ctx.bad(first.switch, f"{first.title} and {s.title} both manage the edge's {s.manages}: choose one")
    needs: frozenset[str] = frozenset()
    for s in systems:
        if s.name in running:
            needs |= s.needs(running[s.name])
    return running, needs


def staying(running: dict[str, Any], systems: Sequence[EdgeSection]) -> list[str]:
    """What the running systems leave on the offload node when the service relocates."""
    return [w for s in systems if s.name in running and (w := s.stays_behind(running[s.name]))]
