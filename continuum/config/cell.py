"""[cell]: the shared cell's schedulers, timings and members (each with its
class, SLO and optionally its own channel traces); with [cells.NAME], several
cells that share [cell]'s settings, each with its schedulers, blocks, the UEs
that start in it and their channel there."""

from __future__ import annotations

from pathlib import Path

from continuum.config import raw
from continuum.config.link import trace
from continuum.config.spec import CellMember, CellSite, CellSpec, NodeSpec
from continuum.traces import TraceRef


def cell(c: raw.Cell, nodes: list[NodeSpec], bad, failed, base: Path, materialize: bool,
          by_app: dict[str, tuple[str, float]] | None = None, cells: dict[str, raw.CellSite] | None = None) -> CellSpec | None:
    """Members, classes and timings of the [cell] table; every problem reported.
    by_app: in a mix, an endpoint's class and SLO come from its app unless [cell.ue.NAME] says.
    cells: [cells.NAME], several cells sharing [cell]'s settings (their members: [cell]'s)."""
    by_app = by_app or {}
    cells = cells or {}
    ok = True
    shared = c  # as written: a cell's defaults
    if cells and c.members is not None:
        bad("cell.members", "with several cells ([cells.NAME]) each cell lists the UEs that start in it: "
                            "remove cell.members")
        return None
    if cells:  # [cell]'s schedulers and blocks: the first cell's (so its checks below are that cell's)
        first = next(iter(cells.values()))
        c = c.model_copy(update={"members": [m for site in cells.values() for m in site.members],
                                 "uplink": first.uplink or c.uplink, "downlink": first.downlink or c.downlink,
                                 "blocks": first.blocks or c.blocks})
        for d in ("uplink", "downlink"):
            kinds = {("private" if (getattr(x, d) or getattr(shared, d)) == "private" else "scheduled") for x in cells.values()}
            if len(kinds) > 1:
                bad(f"cells.{d}", f"the {d} is private in some cells and scheduled in others: every cell's {d} is one or the other")
                ok = False
    if c.uplink == "private" and c.downlink == "private":
        bad("cell", "both directions are private: name a scheduler for cell.uplink "
                    f"({', '.join(raw.UPLINK_SCHEDULERS)}) or cell.downlink ({', '.join(raw.DOWNLINK_SCHEDULERS)}), or remove [cell]")
        ok = False
    if c.uplink in raw.NOTICE_SCHEDULERS and not c.uplink_signalling:
        bad("cell.uplink_signalling", "tutti learns request starts from the edge instead of BSRs; "
                                      "it needs uplink_signalling = true (what it improves on)")
        ok = False
    slot_ms = c.slot_us / 1000
    sr_slots = c.sr_period_ms / slot_ms
    if not failed("cell.sr_period_ms", "cell.slot_us") and abs(sr_slots - round(sr_slots)) > 1e-9:
        bad("cell.sr_period_ms", f"{c.sr_period_ms:g} ms is not a whole number of {c.slot_us} us slots "
                                 f"(e.g. {max(1, round(sr_slots)) * slot_ms:g})")
        ok = False
    if c.uplink_signalling and c.sr_grant_blocks > c.blocks and not failed("cell.sr_grant_blocks", "cell.blocks"):
        bad("cell.sr_grant_blocks", f"{c.sr_grant_blocks} is more than the cell's {c.blocks} blocks")
        ok = False
    endpoints = [n.name for n in nodes if n.role == "endpoint"]
    bulk = [f"bulk{i}" for i in range(c.bulk.count)]
    if c.members is None:
        names = endpoints + bulk
    else:
        names = []
        for i, name in enumerate(c.members):
            where = _where(cells, i) or f"cell.members[{i}]"
            if name not in endpoints + bulk:
                bad(where, f"{name!r} is not an endpoint or bulk UE of this file; valid: {', '.join(endpoints + bulk)}")
                ok = False
            elif name in names:
                bad(where, f"{name!r} is named twice" + (": a UE starts in one cell" if cells else ""))
                ok = False
            else:
                names.append(name)
        missing = [b for b in bulk if b not in names]
        if missing:
            bad("cell.members", f"the bulk UEs are cell traffic: list {', '.join(missing)} too (or leave members out: every UE)")
            ok = False
    for name in c.ue:
        if name not in names:
            bad(f"cell.ue.{name}", f"not a member of the cell; members: {', '.join(names) or 'none'}")
            ok = False
        elif name in bulk and c.ue[name].class_ == "lc":
            bad(f"cell.ue.{name}.class", "a bulk UE moves a file as fast as it can: it is best effort (be)")
            ok = False
    if not names and not bulk:
        bad("cell.members", "the cell has no members")
        ok = False
    members = []
    for name in names:
        u = c.ue.get(name, raw.CellUe())
        bulk_ue = name in bulk
        own = _channels({d: (f"cell.ue.{name}.{d}", getattr(u, d)) for d in ("uplink", "downlink")}, base, materialize, bad)
        ok = ok and own is not None
        own = own or {}
        app_cls, app_slo = by_app.get(name, (None, None))
        members.append(CellMember(name, "be" if bulk_ue else (u.class_ or app_cls or c.class_), u.slo_ms or app_slo or c.slo_ms,
                                  own.get("uplink"), own.get("downlink")))
    sites = []
    for name, x in cells.items():
        refs = _channels({d: (f"cells.{name}.{d}_trace", getattr(x, f"{d}_trace")) for d in ("uplink", "downlink")},
                         base, materialize, bad)
        ok = ok and refs is not None
        refs = refs or {}
        up, down = x.uplink or shared.uplink, x.downlink or shared.downlink
        blocks = x.blocks or shared.blocks
        if c.uplink_signalling and c.sr_grant_blocks > blocks and x.blocks is not None:
            bad(f"cells.{name}.blocks", f"{blocks} blocks are fewer than cell.sr_grant_blocks ({c.sr_grant_blocks})")
            ok = False
        if up in raw.NOTICE_SCHEDULERS and not c.uplink_signalling:
            bad(f"cells.{name}.uplink", "tutti needs cell.uplink_signalling = true")
            ok = False
        sites.append(CellSite(name, None if up == "private" else up, None if down == "private" else down, blocks,
                              tuple(x.members), refs.get("uplink"), refs.get("downlink")))
    if not ok:
        return None
    return CellSpec(
        uplink=None if c.uplink == "private" else c.uplink, downlink=None if c.downlink == "private" else c.downlink,
        slot_us=c.slot_us, blocks=c.blocks, uplink_signalling=c.uplink_signalling, sr_period_slots=round(sr_slots),
        k2_slots=c.k2_slots, sr_grant_blocks=c.sr_grant_blocks, periodic_bsr_slots=max(1, round(c.periodic_bsr_ms / slot_ms)) if c.periodic_bsr_ms else 0,
        be_starvation_slots=max(1, round(c.be_starvation_ms / slot_ms)), members=tuple(members), bulk_direction=c.bulk.direction,
        pf_alpha=c.pf_alpha, pf_beta=c.pf_beta, pf_window_slots=max(1, round(c.pf_window_ms / slot_ms)),
        sites=tuple(sites),
    )


def _channels(given: dict[str, tuple[str, str | None]], base: Path, materialize: bool,
              bad) -> dict[str, TraceRef | None] | None:
    """Each direction's channel trace as given ({direction: (its key, archive name or file, or None)}),
    resolved like [mobile]'s; None when one is bad (said under its key)."""
    out: dict[str, TraceRef | None] = {}
    ok = True
    for d, (key, name) in given.items():
        out[d] = None
        if name is not None:
            ref, problem = trace(name, base, "up" if d == "uplink" else "down", materialize)
            if problem:
                bad(key, problem)
                ok = False
            out[d] = ref
    return out if ok else None


def _where(cells: dict[str, raw.CellSite], i: int) -> str | None:
    """The key of the i-th member of several cells' members, all cells' in order (None: one cell)."""
    for name, x in cells.items():
        if i < len(x.members):
            return f"cells.{name}.members[{i}]"
        i -= len(x.members)
    return None
