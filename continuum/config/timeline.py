"""[[timeline]]: the changes an experiment makes while it runs, checked with
the rest of the file (every problem at once, each under timeline[i].KEY) and
resolved to TimelineEvents the emulator applies at their times. Built so far:
outages, trace switches and core-delay steps on the emulated link,
recorded handovers as outages, handovers between several cells
([cells.NAME]), and the endpoints' load steps and relocations."""

from __future__ import annotations

import dataclasses

from continuum.config import link, raw
from continuum.config.spec import AppSpec, CellSpec, NodeSpec, TimelineEvent
from continuum.config.validation import Issues
from continuum.workloads import REGISTRY as APPS

WHOSE = {"to_cells": "a recorded drive's handovers (handovers)", "queue": "an outage (outage_s, handovers, handover)", "interruption_ms": "a handover (handovers, handover)",
         "phase": "a trace switch (uplink, downlink)",
         "tier": "a core-delay step (core_delay_ms)", "node": "a core-delay step (core_delay_ms)"}
CHANGES = ("outage_s", "handovers", "handover", "uplink/downlink", "core_delay_ms", "rate/utilisation", "relocate")


def resolve(entries: list[raw.TimelineEntry], nodes: list[NodeSpec], apps: list[AppSpec], cell: CellSpec | None,
            p: dict, total_s: float | None, ctx: Issues) -> tuple[TimelineEvent, ...]:
    """Each entry as an event, in time order (a file's order among equal times)."""
    endpoints = [n.name for n in nodes if n.role == "endpoint"]
    groups = {a.name: a.endpoints for a in apps} if p["workload"] is not None and p["workload"].apps else {}
    keyed: list[tuple[str, TimelineEvent]] = []
    for i, e in enumerate(entries):
        key = f"timeline[{i}]"
        if ctx.failed(key):
            continue
        ev = _entry(e, key, endpoints, groups, cell, apps, p, total_s, ctx)
        if isinstance(ev, list):  # a recorded drive's handovers: one outage each
            keyed += [(key, x) for x in ev]
        elif ev is not None:
            keyed.append((key, ev))
    keyed.sort(key=lambda k: k[1].t_s)
    return _moves_timed(keyed, apps, p, ctx)


def _moves_timed(keyed: list[tuple[str, TimelineEvent]], apps: list[AppSpec], p: dict, ctx: Issues) -> tuple[TimelineEvent, ...]:
    """The events with each relocation's move timed from where the service is then and the core
    delays then in force (the timeline's earlier relocations and core-delay steps applied): a move
    from a node to itself, or of UEs whose services are on different nodes, is refused."""
    core = p.get("core")
    if core is None or not any(ev.kind == "relocate" for _, ev in keyed):
        return tuple(ev for _, ev in keyed)
    tier_ms = {t: _one_way(getattr(core, t)) for t in ("edge", "cloud")}
    at: dict[str, str] = {}  # UE -> the node serving it
    for a in apps:
        for u in a.endpoints:
            at[u] = f"{a.workload.offload}0"
    delay: dict[tuple[str, str], float] = {}  # (UE, node) -> one-way ms, where a step changed it
    out = []
    for key, ev in keyed:
        if ev.kind == "core_delay":
            for u in ev.ues:
                for n in ([ev.node] if ev.node else [f"{ev.tier}{i}" for i in range(getattr(p["nodes"], ev.tier).count)]):
                    delay[(u, n)] = float(ev.core_delay_ms or 0.0)
        if ev.kind != "relocate":
            out.append(ev)
            continue
        target = str(ev.relocate)
        sources = sorted({at[u] for u in ev.ues if u in at})
        if len(sources) != 1:
            ctx.bad(f"{key}.ue", f"at {ev.t_s:g} s these endpoints' services are on {' and '.join(sources) or 'no node'}: "
                                 "relocate each node's endpoints in an entry of their own")
            continue
        source = sources[0]
        if source == target:
            ctx.bad(f"{key}.relocate", f"{target} already serves {ev.given_ue} at {ev.t_s:g} s")
            continue
        one_way = max(delay.get((u, source), tier_ms[_tier(source)]) + delay.get((u, target), tier_ms[_tier(target)])
                      for u in ev.ues)
        move_s = one_way / 1000 + ev.state_bytes * 8 / (ev.core_rate_mbps * 1e6)
        out.append(dataclasses.replace(ev, move_s=move_s))
        for u in ev.ues:
            at[u] = target
    return tuple(out)


def _tier(node: str) -> str:
    return node.rstrip("0123456789")


def _entry(e: raw.TimelineEntry, key: str, endpoints: list[str], groups: dict[str, tuple[str, ...]], cell: CellSpec | None,
           apps: list[AppSpec], p: dict, total_s: float | None, ctx: Issues) -> TimelineEvent | list[TimelineEvent] | None:
    bad = ctx.bad
    ok = True
    given = [k for k, v in (("outage_s", e.outage_s), ("handovers", e.handovers), ("handover", e.handover),
                            ("uplink/downlink", e.uplink or e.downlink),
                            ("core_delay_ms", e.core_delay_ms), ("rate", e.rate), ("utilisation", e.utilisation),
                            ("relocate", e.relocate))
             if v is not None]
    if len(given) != 1 and ok:
        bad(key, f"one change per entry: {' and '.join(given)} given" if given else
                 f"no change given: set one of {', '.join(CHANGES)}")
        return None
    if total_s is not None and e.t_s >= total_s:
        bad(f"{key}.t_s", f"{e.t_s:g} s is past the repetition's end: t_s counts from its start, warm-up included, "
                          f"and must be below warmup_s + duration_s = {total_s:g} s")
        ok = False
    ues = _ues(e.ue, key, endpoints, groups, bad)
    if ues is None:
        return None
    for k, misplaced in (("queue", e.queue != "keep" and e.outage_s is None and e.handovers is None and e.handover is None),
                         ("interruption_ms", "interruption_ms" in e.model_fields_set and e.handovers is None and e.handover is None),
                         ("phase", "phase" in e.model_fields_set and not (e.uplink or e.downlink or e.handover)),
                         ("tier", e.tier is not None and e.core_delay_ms is None),
                         ("node", e.node is not None and e.core_delay_ms is None),
                         ("to_cells", e.to_cells and e.handovers is None)):
        if misplaced:
            bad(f"{key}.{k}", f"{k} belongs to {WHOSE[k]}")
            ok = False
    for k in ("state_bytes", "core_rate_mbps"):
        if k in e.model_fields_set and e.relocate is None:
            bad(f"{key}.{k}", f"{k} belongs to a relocation (relocate)")
            ok = False
    if e.relocate is not None:  # the endpoints' doing too
        move = _relocate(e, key, ues, apps, p, ctx)
        return move if ok else None
    if e.rate is not None or e.utilisation is not None:  # the endpoints' doing: any endpoint, in a cell or not
        load = _load(e, key, ues, apps, ctx)
        return load if ok else None
    if e.handover is not None:
        ok = _handover(e, key, ues, cell, bad) and ok
    mobile = p.get("mobile")
    if mobile is not None and mobile.mode == "srsran":
        bad(key, "with mobile.mode = \"srsran\" the real stack is the link: a timeline changes the emulated link")
        return None
    refs = {}
    for d in ("uplink", "downlink"):
        given_trace = getattr(e, d)
        if given_trace is None:
            continue
        ref, problem = link.trace(given_trace, ctx.base, "up" if d == "uplink" else "down", ctx.materialize)
        if problem:
            bad(f"{key}.{d}", problem)
            ok = False
        refs[d] = ref
    if not ok:
        return None
    given_ue = e.ue if isinstance(e.ue, str) else ", ".join(e.ue)
    if e.outage_s is not None:
        return TimelineEvent(e.t_s, ues, "outage", outage_s=e.outage_s, queue=e.queue, given_ue=given_ue)
    if e.handovers is not None:
        return _handovers(e, key, ues, given_ue, total_s, cell, ctx)
    if e.handover is not None:
        return TimelineEvent(e.t_s, ues, "handover", handover=e.handover, outage_s=e.interruption_ms / 1000, queue=e.queue,
                             phase=e.phase if "phase" in e.model_fields_set else "aligned", given_ue=given_ue)
    if e.core_delay_ms is not None:
        tier = _core_delay_tier(e, key, ues, apps, p, ctx)
        return None if tier is None else TimelineEvent(e.t_s, ues, "core_delay", core_delay_ms=e.core_delay_ms, tier=tier, node=e.node,
                                                       given_ue=given_ue)
    return TimelineEvent(e.t_s, ues, "trace", uplink=refs.get("uplink"), downlink=refs.get("downlink"), phase=e.phase,
                         given_ue=given_ue)


def _handover(e: raw.TimelineEntry, key: str, ues: tuple[str, ...], cell: CellSpec | None, bad) -> bool:
    """A handover names one of several cells ([cells.NAME]) and moves members of them."""
    if cell is None or not cell.sites:
        bad(f"{key}.handover", "a handover moves UEs between cells: give the cells as [cells.NAME] tables (docs/cell.md)")
        return False
    ok = True
    if cell.site(str(e.handover)) is None:
        bad(f"{key}.handover", f"no cell is named {e.handover!r}; cells: {', '.join(s.name for s in cell.sites)}")
        ok = False
    outside = [u for u in ues if cell.member(u) is None]
    if outside:
        bad(f"{key}.ue", f"{', '.join(outside)} {'is' if len(outside) == 1 else 'are'} in no cell (a private link): "
                         "a handover moves the cells' members")
        ok = False
    return ok


def _ues(ue: str | list[str], key: str, endpoints: list[str], groups: dict[str, tuple[str, ...]], bad) -> tuple[str, ...] | None:
    """The endpoints an entry names: endpoints, app groups of a mix, or all."""
    names = [ue] if isinstance(ue, str) else ue
    if not names:
        bad(f"{key}.ue", "an empty list: name an endpoint, a [workload.apps] group, or \"all\"")
        return None
    out: list[str] = []
    for n in names:
        if n == "all":
            out += endpoints
        elif n in endpoints:
            out.append(n)
        elif n in groups:
            out += groups[n]
        else:
            valid = ", ".join(["all", *endpoints, *groups])
            bad(f"{key}.ue", f"{n!r} is not an endpoint or app group of this file; valid: {valid}")
            return None
    return tuple(dict.fromkeys(out))


def _core_delay_tier(e: raw.TimelineEntry, key: str, ues: tuple[str, ...], apps: list[AppSpec], p: dict,
                     ctx: Issues) -> str | None:
    """A core-delay step's tier (the emulator's delay rule for it changes, for these UEs' packets
    from then on), or None when the step cannot be made here (said)."""
    provider, core, nodes = p.get("provider"), p.get("core"), p.get("nodes")
    if e.node is not None:
        servers = _servers(nodes)
        if e.node not in servers:
            ctx.bad(f"{key}.node", f"{e.node!r} is not an edge or cloud node of this file; valid: {', '.join(servers) or 'none'}")
            return None
        if e.tier is not None and e.tier != _tier(e.node):
            ctx.bad(f"{key}.tier", f"{e.node} is a {_tier(e.node)} node: give node or tier, not both")
            return None
    tiers = sorted({a.workload.offload for a in apps if set(a.endpoints) & set(ues)})
    tier: str | None = _tier(e.node) if e.node else e.tier or (tiers[0] if len(tiers) == 1 else None)
    if tier is None:
        ctx.bad(f"{key}.tier", f"these endpoints' apps offload to {' and '.join(sorted(tiers)) or 'nothing'}: "
                               "say which tier's delay changes (tier = \"edge\" or \"cloud\")")
        return None
    if nodes is not None and getattr(nodes, tier).count == 0:
        ctx.bad(f"{key}.tier", f"this file has no {tier} node")
        return None
    if provider is not None and provider.kind == "qemu":
        ctx.bad(f"{key}.core_delay_ms", "the qemu provider's core delay is netem inside the guests, which a timeline "
                                        "does not change yet; the netns and hosts providers' is the emulator's")
        return None
    if core is not None and (core.mechanism == "netem" or (core.mechanism == "auto" and core.jitter_ms > 0)):
        ctx.bad(f"{key}.core_delay_ms", "the timeline steps the emulator's core delay; this file's is netem's "
                                        "(core.mechanism = \"netem\", or jitter): use core.mechanism = \"mahimahi-link\" "
                                        "without jitter")
        return None
    return tier


def _load(e: raw.TimelineEntry, key: str, ues: tuple[str, ...], apps: list[AppSpec], ctx: Issues) -> TimelineEvent | None:
    """A load step: each UE's endpoint sends at the new rate from then on (a utilisation's rate comes
    from the run's calibration, as [workload] utilisation's does: calibration.apply)."""
    bad = ctx.bad
    ok = True
    for a in apps:
        mine = [u for u in ues if u in a.endpoints]
        if not mine:
            continue
        w = a.workload
        if w.congestion_control.get("enabled"):
            bad(f"{key}.ue", f"{', '.join(mine)} run {a.name} with congestion control, which sets their rate itself")
            ok = False
        if w.arrivals == "onoff":
            bad(f"{key}.ue", f"{', '.join(mine)} run {a.name} with arrivals = \"onoff\", whose bursts a load step does not "
                             "combine with yet: use constant or poisson arrivals")
            ok = False
        if e.utilisation is not None and not APPS[w.app].builtin:
            bad(f"{key}.utilisation", f"{a.name}'s server is its own ({w.app!r}), which calibration cannot time; give the "
                                      "step as rate (requests/s per endpoint)")
            ok = False
    if not ok:
        return None
    given_ue = e.ue if isinstance(e.ue, str) else ", ".join(e.ue)
    rates = tuple((u, e.rate) for u in ues) if e.rate is not None else ()
    return TimelineEvent(e.t_s, ues, "load", rate=e.rate, utilisation=e.utilisation, ue_rates=rates, given_ue=given_ue)


def _handovers(e: raw.TimelineEntry, key: str, ues: tuple[str, ...], given_ue: str, total_s: float | None,
               cell: CellSpec | None, ctx: Issues) -> list[TimelineEvent] | None:
    """A recorded drive's handovers as outages at their times on the entry's traces' clock (which
    restarts with every repetition, as the traces do), those at or after t_s within the repetition;
    a drive shorter than the repetition loops, as its traces do. With to_cells, each is a handover
    to the cell named by the log's new cell ID ([cells.ID]), the UEs starting in the drive's first."""
    from continuum.tracearchive import convert, drive, fetch, index

    assert e.handovers is not None
    path = ctx.base / e.handovers
    try:
        if path.is_file():  # a G-NetTrack log of your own drive (its traces: `continuum traces convert gnettrack`)
            d = drive.read_cells(path.read_text(errors="replace"), str(path))
        else:
            entry, _ = index.find(e.handovers)
            d = drive.of_entry(entry)
    except index.UnknownTrace as err:
        ctx.bad(f"{key}.handovers", f"{err}; handovers come from an archive entry converted from a drive log "
                                    "(irish-5g-*) or a G-NetTrack CSV file")
        return None
    except (convert.ConvertError, fetch.FetchError) as err:
        ctx.bad(f"{key}.handovers", str(err))
        return None
    end = total_s if total_s is not None else float(d.duration_s)
    due = [(loop * d.duration_s + h.t_s, h) for loop in range(int(end // d.duration_s) + 1) for h in d.handovers
           if e.t_s <= loop * d.duration_s + h.t_s < end]
    if e.to_cells and not _drive_cells(e, key, ues, [h for _, h in due], cell, ctx):
        return None
    return [TimelineEvent(float(t), ues, "handover" if e.to_cells else "outage", outage_s=e.interruption_ms / 1000,
                          queue=e.queue, given_ue=given_ue, handover=str(h.target) if e.to_cells else None,
                          phase="aligned", cause=f"handover {h.source} -> {h.target} (drive log line {h.line})")
            for t, h in due]


def _drive_cells(e: raw.TimelineEntry, key: str, ues: tuple[str, ...], due: list, cell: CellSpec | None, ctx: Issues) -> bool:
    """to_cells: a [cells.ID] for every cell the drive serves the UEs from, and the UEs starting in its first."""
    if cell is None or not cell.sites:
        ctx.bad(f"{key}.to_cells", "the drive's handovers move UEs between cells: give each cell the log names as "
                                   "[cells.ID] (docs/cell.md)")
        return False
    ids = list(dict.fromkeys([due[0].source, *(h.target for h in due)])) if due else []
    missing = [i for i in ids if cell.site(str(i)) is None]
    if missing:
        ctx.bad(f"{key}.to_cells", f"the drive serves the UEs from cell(s) {', '.join(map(str, ids))}; no [cells.ID] "
                                   f"for {', '.join(map(str, missing))} (cells here: {', '.join(s.name for s in cell.sites)})")
        return False
    wrong = [u for u in ues if (s := cell.start(u)) is None or (ids and s.name != str(ids[0]))]
    if wrong:
        ctx.bad(f"{key}.ue", f"{', '.join(wrong)} must start in the drive's first cell, {ids[0] if ids else '?'} "
                             f"([cells.{ids[0] if ids else 'ID'}] members), and be a cell member")
        return False
    return True


def _relocate(e: raw.TimelineEntry, key: str, ues: tuple[str, ...], apps: list[AppSpec], p: dict,
              ctx: Issues) -> TimelineEvent | None:
    """A relocation: the UEs' service (their app's server, with its broker) moves to another edge or
    cloud node, stop-and-copy. The move's time is modelled (`_moves_timed`): the state crosses the
    core from the old node to the new one (their one-way delays then) at core_rate_mbps."""
    assert e.relocate is not None
    nodes, w = p.get("nodes"), p.get("workload")
    servers = _servers(nodes)
    if e.relocate not in servers:
        ctx.bad(f"{key}.relocate", f"{e.relocate!r} is not an edge or cloud node of this file; valid: {', '.join(servers) or 'none'}")
        return None
    provider = p.get("provider")
    if provider is not None and provider.kind != "netns":
        ctx.bad(f"{key}.relocate", f"a relocation runs on the netns provider so far (its live test); under {provider.kind!r} "
                                   "it is not tried yet")
        return None
    if w is not None and "container" in (w.runtime,):
        ctx.bad(f"{key}.relocate", "a relocation starts the app's server on its target as a process: use runtime = \"process\"")
        return None
    given_ue = e.ue if isinstance(e.ue, str) else ", ".join(e.ue)
    return TimelineEvent(e.t_s, ues, "relocate", relocate=e.relocate, state_bytes=e.state_bytes,
                         core_rate_mbps=e.core_rate_mbps, given_ue=given_ue)


def _servers(nodes) -> list[str]:
    """The file's edge and cloud nodes by name."""
    return [f"{role}{i}" for role in ("edge", "cloud") for i in range(getattr(nodes, role).count)] if nodes else []


def _one_way(v: str | float) -> float:
    """A [core] tier's one-way delay in ms, a preset's or as written."""
    from continuum.config import presets

    return float(presets.CORE_ONE_WAY_MS.get(v, 0.0)) if isinstance(v, str) else float(v)
