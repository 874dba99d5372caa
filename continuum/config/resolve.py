"""Experiment file -> a typed, frozen ExperimentSpec (continuum/config/spec.py),
or ONE ConfigError that lists every problem (TOML syntax, unknown keys, wrong
types, impossible values, unknown presets, missing or invalid traces), each
with its key path and what would be valid. Nothing on the host is touched.
The providers' kinds and the edge systems come from the caller
(continuum/experiment.py): the file's model knows neither."""

from __future__ import annotations

import dataclasses

import hashlib
import math
import os
import re
import tomllib
import typing
from pathlib import Path
from typing import Any, Collection, Sequence, cast

from pydantic import BaseModel

from continuum.config import edge, link, presets, raw, timeline
from continuum.config.cell import cell as resolve_cell
from continuum.config.edge import Draft, EdgeSection
from continuum.config.spec import (MIN_QUOTA_US, ROLES, CalibrationSpec, ExperimentSpec, Machine, NodeSpec,
                                   cpu_period_us)
from continuum.config.validation import Issues, validate_section
from continuum.config.workload import apps as resolve_apps
from continuum.errors import ConfigError, ConfigIssue


def load(path: str | os.PathLike, materialize: bool = True, *, providers: Collection[str],
         systems: Sequence[EdgeSection], provider: str | None = None, text: str | None = None) -> ExperimentSpec:
    """Parse, validate and resolve an experiment file; raise ConfigError with all problems.
    `providers`: the kinds [provider] may name; `systems`: the edge systems, each owning an [edge.*] table.
    materialize=False (validate, --dry-run) writes nothing: archive traces not made
    yet are only checked to be makeable here. `provider`: [provider] kind as given on the
    command line, in place of the file's (the run's copy of the file has it)."""
    path = Path(path)
    file = str(path)
    try:
        text = path.read_text() if text is None else text
    except OSError as e:
        raise ConfigError([ConfigIssue(file, "(file)", f"cannot read: {e.strerror}")]) from None
    if provider is not None:
        text = with_provider(text, provider, file)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([ConfigIssue(file, "(syntax)", f"not valid TOML: {e}")]) from None

    issues: list[ConfigIssue] = []
    sections = raw.ExperimentFile.model_fields
    owned = edge.top_tables(systems)
    if "sweep" in data:
        issues.append(ConfigIssue(file, "sweep", "this file is a campaign (a [sweep] of points): `continuum run` and "
                                                 "`continuum validate` take it; other commands take one point's file "
                                                 "(each point's run folder has its experiment.toml)"))
    for key in data:
        if key == "sweep":
            continue
        if key not in sections and key not in owned:
            issues.append(ConfigIssue(file, key, f"unknown section; valid: {', '.join([*sections, *owned])}"))
    if "experiment" not in data:
        issues.append(ConfigIssue(file, "experiment", "required section is missing (name, duration_s)"))
    parsed: dict[str, Any] = {}
    for key, field in sections.items():
        if key == "edge":
            continue  # its tables belong to the edge systems: edge.tables
        if key == "timeline":  # [[timeline]]: an array of tables, each checked on its own
            parsed[key] = _timeline_entries(data.get(key, []), file, issues)
            continue
        if key == "cells":  # [cells.NAME]: a table of tables, each checked on its own
            parsed[key] = _cell_sites(data.get(key, {}), file, issues)
            continue
        if key in data:
            if not isinstance(data[key], dict):
                issues.append(ConfigIssue(file, key, "expected a table ([" + key + "])"))
                continue
            ann = field.annotation
            model = next((a for a in typing.get_args(ann) if a is not type(None)), ann)  # [cell] is optional
            parsed[key] = validate_section(cast(type[BaseModel], model), data[key], file, key, issues)
        elif key != "experiment":
            parsed[key] = field.default

    ctx = Issues(file, path.resolve().parent, materialize, issues)
    parsed["edge"] = edge.tables(data, systems, ctx)
    ctx.schema_done()
    spec = _resolve(path, text, parsed, ctx, providers, systems)
    if issues:
        raise ConfigError(issues)
    assert spec is not None
    return spec


PROVIDER_TABLE = re.compile(r"^\[provider\][ \t]*(#.*)?\n", flags=re.M)
KIND_LINE = re.compile(r"^kind[ \t]*=.*$", flags=re.M)


def with_provider(text: str, kind: str, file: str) -> str:
    """The file's text with [provider] kind set to `kind` (`continuum run --provider KIND`): the
    table's kind line replaced, or a kind line put under its header, or the table added; the
    run folder's experiment.toml is this text, so that it runs the same again."""
    header = PROVIDER_TABLE.search(text)
    line = f'kind = "{kind}"  # continuum run --provider {kind}'
    if header is None:
        out = text.rstrip("\n") + f"\n\n[provider]\n{line}\n"
    else:
        start = header.end()
        end = next((m.start() for m in re.finditer(r"^\[", text[start:], flags=re.M)), len(text) - start) + start
        body = text[start:end]
        body = KIND_LINE.sub(line, body, count=1) if KIND_LINE.search(body) else line + "\n" + body
        out = text[:start] + body + text[end:]
    try:
        got = tomllib.loads(out).get("provider", {}).get("kind")
    except tomllib.TOMLDecodeError:
        got = None
    if got != kind:
        raise ConfigError([ConfigIssue(file, "provider.kind", f"--provider {kind}: could not set it in this file (its "
                                       "[provider] is not a plain table); set kind in the file instead")])
    return out


def _cell_sites(data: Any, file: str, issues: list[ConfigIssue]) -> dict[str, raw.CellSite]:
    """[cells.NAME]'s tables that validate (the others' problems reported as cells.NAME.KEY)."""
    if not isinstance(data, dict) or not all(isinstance(d, dict) for d in data.values()):
        issues.append(ConfigIssue(file, "cells", "expected a table of cells ([cells.NAME] once per cell)"))
        return {}
    out = {}
    for name, d in data.items():
        site = validate_section(raw.CellSite, d, file, f"cells.{name}", issues)
        if site is not None:
            out[name] = site
    return out


def _timeline_entries(data: Any, file: str, issues: list[ConfigIssue]) -> list[raw.TimelineEntry]:
    """[[timeline]]'s entries that validate (the others' problems reported as timeline[i].KEY)."""
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        issues.append(ConfigIssue(file, "timeline", "expected an array of tables ([[timeline]] once per change)"))
        return []
    out = []
    for i, d in enumerate(data):
        entry = validate_section(raw.TimelineEntry, d, file, f"timeline[{i}]", issues)
        if entry is not None:
            out.append(entry)
    return out


def _access_cells(p: dict[str, Any], nodes: list[NodeSpec], bad) -> tuple[raw.Cell, dict[str, raw.CellSite]] | None:
    """[mobile] access = PRESET: a one-UE cell per endpoint with the preset's uplink signalling (the shared
    cell's model, src/cell/), the downlink private; None without it or where it cannot be."""
    m = p.get("mobile")
    if m is None or m.access is None or m.mode != "emulated":
        return None
    preset = presets.ACCESS.get(m.access)
    if preset is None:
        bad("mobile.access", f"unknown preset {m.access!r}; valid: {', '.join(presets.ACCESS)} (docs/link-replay.md)")
        return None
    if p.get("cell") is not None or p["cells"]:
        bad("mobile.access", "a [cell] has its own uplink signalling (cell.uplink_signalling, sr_period_ms, k2_slots, ...): "
                             "set it there, or remove [cell] for the private links' access procedure")
        return None
    if m.emulator == "mahimahi":
        bad("mobile.access", "the access procedure is mahimahi-link's (a one-UE cell); upstream mm-link has none")
        return None
    cell = raw.Cell(uplink="rr", downlink="private", slot_us=preset.slot_us, blocks=preset.blocks, uplink_signalling=True,  # type: ignore[arg-type]
                    sr_period_ms=preset.sr_period_ms, k2_slots=preset.k2_slots, sr_grant_blocks=preset.sr_grant_blocks,
                    periodic_bsr_ms=preset.periodic_bsr_ms)
    endpoints = [n.name for n in nodes if n.role == "endpoint"]
    sites = {f"access-{e}": raw.CellSite(members=[e]) for e in endpoints} if len(endpoints) > 1 else {}
    return cell, sites


def _resolve(path: Path, text: str, p: dict[str, Any], ctx: Issues, providers: Collection[str],
             systems: Sequence[EdgeSection]) -> ExperimentSpec | None:
    bad, failed = ctx.bad, ctx.failed
    provider = p.get("provider")
    hosts = _provider(provider, providers, ctx)
    w = p.get("workload")
    nodes, groups = _nodes(p.get("nodes"), w, ctx)
    slo_ms, urgency_ms = edge.slo_defaults(p["edge"], systems)
    c = None
    if p["cells"] and p.get("cell") is None:
        bad("cells", "several cells share [cell]'s settings (slot_us, signalling, classes): add a [cell] table")
    access = _access_cells(p, nodes, bad)
    if access is not None:
        p = {**p, "cell": access[0], "cells": access[1]}
    if p.get("cell") is not None and groups is not None:
        c = resolve_cell(p["cell"], nodes, bad, failed, ctx.base, ctx.materialize, _cell_classes(w, nodes, slo_ms), p["cells"])
        if c is not None and access is not None:
            c = dataclasses.replace(c, access=p["mobile"].access)
        if c is not None:
            b = p["cell"].bulk
            nodes += [NodeSpec(f"bulk{i}", "bulk", i, b.cpus, raw.parse_memory(b.memory)) for i in range(b.count)]
    mobile = link.mobile(p, nodes, ctx)
    core = link.core(p, ctx)
    workload, apps = resolve_apps(w, nodes, groups, ctx, slo_ms, urgency_ms) if w is not None else (None, [])
    e = p.get("experiment")
    e = p.get("experiment")
    if e is not None and workload is not None and workload.runtime == "container" and ":" in e.output:
        bad("experiment.output", f"{e.output!r}: a ':' cannot be mounted into the workload's containers "
                                 "(docker run -v SRC:DST); choose another folder")
    if e is not None and (any(ord(ch) < 32 or ord(ch) == 127 for ch in e.output) or "{name}" in e.output):
        bad("experiment.output", "a control character (line break, NUL, ...) or '{name}' (the emulator's log-name "
                                 "template) in the output folder's name would send the run's logs elsewhere; "
                                 "choose another folder")
    if (provider is not None and provider.engine == "k3s" and workload is not None
            and "process" in (workload.endpoint.runtime, workload.server.runtime) and not failed("workload.runtime")):
        bad("workload.runtime", "engine = \"k3s\" starts the workload's sides as pods, from container images: "
                                "set workload.runtime = \"container\"")
    mix = w is not None and bool(w.apps)
    e = p.get("experiment")
    total_s = e.warmup_s + e.duration_s if e is not None else None
    events = timeline.resolve(p["timeline"], nodes, apps, c, p, total_s, ctx) if p["timeline"] else ()
    if mobile is not None and mobile.emulator == "mahimahi" and any(e.kind != "load" for e in events):
        bad("timeline", "emulator = \"mahimahi\" (upstream mm-link) replays its traces as they are: outages, trace "
                        "switches, handovers and core-delay steps are mahimahi-link's (--timeline); keep only load "
                        "steps or use emulator = \"mahimahi-link\"")
    if mobile is not None and (mobile.uplink_light or mobile.downlink_light) and any(e.kind == "trace" for e in events):
        bad("timeline", "a trace switch with a light trace (workload-aware replay): the light part would not follow "
                        "the switch; set mobile.replay = \"plain\"")
    draft = Draft(tuple(nodes), tuple(apps), workload, groups, mix, None if provider is None else provider.kind, c, mobile)
    running, needs = edge.resolve(p["edge"], systems, draft, ctx)
    staying = edge.staying(running, systems)
    for i, entry in enumerate(p["timeline"]):
        if entry.relocate is not None and staying and not failed(f"timeline[{i}].relocate"):
            bad(f"timeline[{i}].relocate", "a relocation moves the app's server and its broker, and "
                                           + "; ".join(staying) + ": a relocation with it is not built yet")
    for role in ("endpoint", "edge", "cloud"):
        wanted = [n.name for n in nodes if n.role == role or (role == "endpoint" and n.role == "bulk")]
        if hosts and wanted and not any(role in h.roles for h in hosts):
            bad("provider.hosts", f"no machine has role {role!r} for {', '.join(wanted)}; add it to a machine's role")
    if ctx.issues or e is None or mobile is None or core is None or workload is None or not apps:
        return None
    out = Path(e.output)
    if not out.is_absolute():
        out = Path.cwd() / out
    return ExperimentSpec(
        source=path.resolve(), text=text, sha256=hashlib.sha256(text.encode()).hexdigest(), name=e.name, seed=e.seed,
        duration_s=e.duration_s, warmup_s=e.warmup_s, repetitions=e.repetitions, output=out,
        provider=p["provider"].kind, nodes=tuple(nodes), mobile=mobile, core=core, workload=workload, cell=c,
        edge=running, edge_needs=needs, apps=tuple(apps), mix=mix,
        hosts=tuple(hosts), host_keys=p["provider"].host_keys, provision=p["provider"].provision,
        engine=p["provider"].engine, k3s_server=p["provider"].k3s_server, vm_cpu=p["provider"].vm_cpu,
        vm_manager=p["provider"].vm_manager,
        calibration=CalibrationSpec(**p["calibration"].model_dump()),
        timeline=events, tcp_nodelay=bool(w is not None and w.tcp_nodelay),
    )


def _provider(provider: raw.Provider | None, providers: Collection[str], ctx: Issues) -> list[Machine]:
    """[provider]: its kind among the registered ones; the hosts provider's machines."""
    bad = ctx.bad
    hosts: list[Machine] = []
    if provider is not None and provider.kind not in providers:
        bad("provider.kind", f"unknown provider {provider.kind!r}; valid: {', '.join(sorted(providers))}")
    if provider is not None and provider.kind != "hosts" and provider.hosts:
        bad("provider.hosts", f"machines are for kind = \"hosts\"; this file's provider.kind is {provider.kind!r}")
    if provider is not None and provider.kind != "qemu" and provider.vm_cpu != "auto":
        bad("provider.vm_cpu", f"the VMs' CPU model is for kind = \"qemu\"; this file's provider.kind is {provider.kind!r}")
    if provider is not None and provider.kind != "qemu" and provider.vm_manager != "qemu":
        bad("provider.vm_manager", f"the VMs' manager is for kind = \"qemu\"; this file's provider.kind is {provider.kind!r}")
    if provider is not None and provider.kind != "hosts" and provider.engine != "processes":
        bad("provider.engine", f"engine = {provider.engine!r} runs on the hosts provider's machines (kind = \"hosts\"); "
                               f"this file's provider.kind is {provider.kind!r}")
    elif provider is not None and provider.kind == "hosts":
        if not provider.hosts:
            bad("provider.hosts", "kind = \"hosts\" needs the machines: [provider.hosts.NAME] with address, role "
                                  "(endpoint, edge, cloud or link) and optionally user, port, key")
        for hname, h in provider.hosts.items():
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,30}", hname):
                bad(f"provider.hosts.{hname}", "a machine's name is lower-case letters, digits and '-' (up to 31)")
            roles = (h.role,) if isinstance(h.role, str) else tuple(dict.fromkeys(h.role))
            if not roles:
                bad(f"provider.hosts.{hname}.role", "name at least one of endpoint, edge, cloud, link")
            hosts.append(Machine(hname, h.address, h.user, h.port, h.key, roles))
        if provider.engine == "k3s" and provider.k3s_server not in provider.hosts:
            bad("provider.k3s_server", "engine = \"k3s\" needs the machine where `k3s kubectl` reaches the cluster: "
                                       f"one of {', '.join(sorted(provider.hosts)) or 'the machines'}"
                                       + (f" (not {provider.k3s_server!r})" if provider.k3s_server else ""))
        links = [h.name for h in hosts if "link" in h.roles]
        if hosts and len(links) != 1:
            bad("provider.hosts", f"exactly one machine carries the link (role \"link\"): the endpoints' traffic crosses it "
                                  f"to the core; found {len(links)}" + (f" ({', '.join(links)})" if links else ""))
    return hosts


def _nodes(groups: raw.Nodes | None, w: raw.Workload | None, ctx: Issues) -> tuple[list[NodeSpec], raw.Nodes | None]:
    """[nodes]: each role's nodes with their limits (a mix's groups give the endpoint count)."""
    bad, failed = ctx.bad, ctx.failed
    nodes: list[NodeSpec] = []
    if groups is not None and w is not None and w.apps:  # a mix: its groups say how many endpoints there are
        total = sum(g.endpoints for g in w.apps.values())
        given = "endpoint" in groups.model_fields_set and "count" in groups.endpoint.model_fields_set
        if given and groups.endpoint.count != total and not failed("nodes.endpoint.count"):
            bad("nodes.endpoint.count", f"{groups.endpoint.count} endpoints, but [workload.apps] runs {total} "
                                        f"({', '.join(f'{n}: {g.endpoints}' for n, g in w.apps.items())}); "
                                        "leave the count out, or make the two agree")
        groups = groups.model_copy(update={"endpoint": groups.endpoint.model_copy(update={"count": total})})
    if groups is not None:
        for role in ROLES:
            g = getattr(groups, role)
            period = cpu_period_us(g.cpus, g.speed, g.cpu_period_us)
            if g.count and g.cpus * g.speed * period < MIN_QUOTA_US and not failed(f"nodes.{role}"):
                least = math.ceil(MIN_QUOTA_US / (g.cpus * g.speed))
                bad(f"nodes.{role}.cpu_period_us", f"{period} us gives a quota of {g.cpus * g.speed * period:.0f} us "
                                                   f"(cpus {g.cpus:g} x speed {g.speed:g}), below the kernel's "
                                                   f"{MIN_QUOTA_US} us minimum: use at least {least} us")
            for i in range(g.count):
                nodes.append(NodeSpec(f"{role}{i}", role, i, g.cpus, raw.parse_memory(g.memory), period, g.speed,
                                      g.tcp_congestion_control))
        if groups.endpoint.count < 1 and not failed("nodes.endpoint"):
            bad("nodes.endpoint.count", "at least one endpoint is needed to send requests")
    return nodes, groups


def _cell_classes(w: raw.Workload | None, nodes: list[NodeSpec], slo_ms: float) -> dict[str, tuple[str, float]]:
    """A mix: each endpoint's class and SLO in the cell, from its app."""
    by_app: dict[str, tuple[str, float]] = {}
    if w is not None and w.apps:
        eps = iter(n.name for n in nodes if n.role == "endpoint")
        for g in w.apps.values():
            for _ in range(g.endpoints):
                by_app[next(eps, "")] = ("be", g.slo_ms or slo_ms) if g.best_effort else ("lc", g.slo_ms or slo_ms)
    return by_app
