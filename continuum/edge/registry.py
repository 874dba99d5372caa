"""The registered edge systems, in the order their parts start and their
results appear. Adding one: docs/architecture.md."""

from __future__ import annotations

from typing import Any

from continuum.config import ExperimentSpec
from continuum.config.edge import NEEDS, PROVIDER_VERBS
from continuum.edge.mecanic import Mecanic
from continuum.edge.mosaic import Mosaic
from continuum.edge.pdcell import Pdcell
from continuum.edge.smec import Smec
from continuum.edge.system import EdgeSystem
from continuum.edge.tutti import Tutti

SYSTEMS: dict[str, EdgeSystem] = {s.name: s for s in (Smec(), Mosaic(), Tutti(), Mecanic(), Pdcell())}


def running(spec: ExperimentSpec) -> list[tuple[EdgeSystem, Any]]:
    """The systems that run in this experiment, each with its settings."""
    return [(s, spec.edge[name]) for name, s in SYSTEMS.items() if name in spec.edge]


def node_code() -> tuple[str, ...]:
    """The repository's folders the nodes' processes import, beside its root."""
    return tuple(dict.fromkeys(f for s in SYSTEMS.values() for f in s.node_code))


def problems(spec: ExperimentSpec, kind: str, verbs: frozenset[str]) -> list[str]:
    """What keeps the running systems from running under this provider (`verbs`: the node
    verbs it implements) and on this machine; empty when nothing does."""
    out = []
    for s, settings in running(spec):
        missing = [n for n in PROVIDER_VERBS if n in s.needs(settings) and n not in verbs]
        if missing:
            out.append(f"the {kind} provider does not run {s.title} ({f'[edge.{s.section}]' if s.section else s.switch}) yet: it needs "
                       + " and ".join(NEEDS[n] for n in missing) + " (the netns provider has them)")
        out += s.host_problems(settings, spec)
        if spec.mobile.emulator == "mahimahi" and type(s).link_args is not EdgeSystem.link_args:
            out.append(f"{s.title} ({f'[edge.{s.section}]' if s.section else s.switch}) runs inside mahimahi-link; "
                       "mobile.emulator = \"mahimahi\" (upstream mm-link) has no such stage: use emulator = \"mahimahi-link\"")
    return out
