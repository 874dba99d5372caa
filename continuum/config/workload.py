"""[workload] and [workload.apps]: each app's load, payload, sides (process or
container) and parameters, checked against the app catalog (continuum/workloads)."""

from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType
from typing import Any

from continuum.config import raw
from continuum.config.spec import AppSpec, NodeSpec, SideSpec, WorkloadSpec
from continuum.config.validation import Issues, validate_section
from continuum.errors import ConfigIssue
from continuum.workloads import REGISTRY as APPS
from workloads import contract


def workload(w: raw.Workload, base: Path, bad, failed, file: str, issues: list[ConfigIssue], key: str = "workload") -> WorkloadSpec | None:
    app = APPS.get(w.app)
    if app is None and not failed(f"{key}.app"):
        bad(f"{key}.app", f"unknown app {w.app!r}; valid: {', '.join(sorted(APPS))}")
    params: dict[str, Any] = dict(w.params)
    if w.utilisation is not None and "rate" in w.model_fields_set and key == "workload":
        bad(f"{key}.utilisation", "give the load as rate (requests/s per endpoint) or as utilisation "
                                  "(a share of the node's capacity for the app), not both")
    if w.utilisation is not None and app is not None and not app.builtin:
        bad(f"{key}.utilisation", f"{w.app!r} apps bring their own server, which calibration cannot time "
                                  "(it calls a built-in app's model in-process): give rate instead")
    if key == "workload" and "onoff" in w.model_fields_set and w.arrivals != "onoff" and not failed(f"{key}.arrivals"):
        bad(f"{key}.onoff", f"shapes arrivals = \"onoff\"; this load's arrivals are {w.arrivals!r}")
    if app is not None and app.params is not None:
        model = validate_section(app.params, w.params, file, f"{key}.params", issues)
        params = model.model_dump() if model is not None else params

    pl = w.payload.model_dump(exclude_none=True)
    if app is not None and app.payload_from_params and w.payload.model_fields_set and not failed(f"{key}.payload"):
        bad(f"{key}.payload", f"{w.app}'s request sizes follow its own [{key}.params] (its video's resolution and "
                              "bitrate), not [workload.payload]; remove the table")
    if app is not None and app.builtin and not app.images[0] and w.runtime == "container" and not failed(f"{key}.runtime", "workload.runtime"):
        bad("workload.runtime", f"{w.app} runs as processes only (it has no container images yet); set workload.runtime = \"process\"")
    if app is not None:
        pl.setdefault("min_bytes", app.default_payload[0])
        pl.setdefault("max_bytes", app.default_payload[1])
    if not failed(f"{key}.payload"):
        lo, hi = pl.get("min_bytes"), pl.get("max_bytes")
        if lo is not None and hi is not None and lo > hi:
            bad(f"{key}.payload", f"min_bytes {lo} > max_bytes {hi}")
        if app is not None and app.payload_limits and lo is not None and hi is not None:
            a, b = app.payload_limits
            if lo < a or hi > b:
                bad(f"{key}.payload", f"{w.app} makes {app.payload_unit} of {a} to {b} bytes; got {lo}..{hi}")
        if pl["distribution"] == "fixed" and "mean_bytes" not in pl and lo != hi:
            bad(f"{key}.payload.mean_bytes", "distribution \"fixed\" needs mean_bytes (or min_bytes = max_bytes)")
    if app is None:
        return None

    sides = {}
    if w.app == "custom":
        c = w.custom
        if c is None:
            bad(f"{key}.custom", "app = \"custom\" needs a [workload.custom] table with endpoint_image or "
                                   "endpoint_command, and server_image or server_command")
            return None
        for side in ("endpoint", "server"):
            image, command = getattr(c, f"{side}_image"), tuple(getattr(c, f"{side}_command"))
            if not image and not command:
                bad(f"{key}.custom.{side}_command", f"give {side}_image or {side}_command for the {side} side")
            if w.runtime == "container" and not image:
                bad(f"{key}.custom.{side}_image", "workload.runtime is container: give an image for this side")
            # An image means a container (the command, if any, is its command); a command alone, a process.
            sides[side] = SideSpec("container" if image else "process", image, command)
        env = dict(c.environment)
        for var in env:
            if var.startswith("CONTINUUM_"):
                bad(f"{key}.custom.environment.{var}", "CONTINUUM_* variables are set by continuum (the contract)")
    else:
        if w.custom is not None:
            bad(f"{key}.custom", f"only for app = \"custom\" (app is {w.app!r})")
        env = {}
        for side, image in zip(("endpoint", "server"), app.images):
            sides[side] = SideSpec(w.runtime, image if w.runtime == "container" else None, ())
    return WorkloadSpec(
        w.app, w.offload, w.rate, w.timeout_s, MappingProxyType(params), w.arrivals, w.burst, w.qos,
        MappingProxyType(pl), MappingProxyType(w.congestion_control.model_dump()), sides["endpoint"], sides["server"],
        MappingProxyType(env), base, w.run_as_root, w.workers, w.utilisation,
        MappingProxyType(w.onoff.model_dump() if w.arrivals == "onoff" else {}),
    )


NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,23}")


def apps(w: raw.Workload, nodes: list[NodeSpec], groups: raw.Nodes | None, ctx: Issues,
         slo_ms: float, urgency_ms: float | None) -> tuple[WorkloadSpec | None, list[AppSpec]]:
    """The workload and its apps: one on every endpoint, or [workload.apps]'s groups, each
    inheriting what it does not set; SLOs default to the edge section's (slo_ms, urgency_ms)."""
    bad, failed = ctx.bad, ctx.failed
    out: list[AppSpec] = []
    main = workload(w, ctx.base, bad, failed, ctx.file, ctx.issues)
    if groups is not None and getattr(groups, w.offload).count < 1 and not failed("workload.offload", f"nodes.{w.offload}"):
        bad("workload.offload", f"offloads to {w.offload!r} but nodes.{w.offload}.count is 0")
    endpoints = [n.name for n in nodes if n.role == "endpoint"]
    if main is not None and not w.apps:
        out.append(AppSpec(w.app, main, tuple(endpoints), slo_ms, urgency_ms or contract.urgency_ms(slo_ms)))
    for i, (name, g) in enumerate(w.apps.items()):
        key = f"workload.apps.{name}"
        if not NAME.fullmatch(name):
            bad(key, "an app's name is letters, digits and _ (it names its files and its cgroup)")
        inherited = {"apps"} | ({"params", "payload", "custom"} if g.app != w.app else set())
        if g.rate is not None or g.utilisation is not None:  # the group states its own load
            inherited |= {"rate", "utilisation"}
        if g.onoff is not None and (g.arrivals or w.arrivals) != "onoff":
            bad(f"{key}.onoff", f"shapes arrivals = \"onoff\"; this app's arrivals are {g.arrivals or w.arrivals!r}")
        if g.rate is not None and g.utilisation is not None:
            bad(f"{key}.utilisation", "give the load as rate (requests/s per endpoint) or as utilisation "
                                      "(a share of the node's capacity for the app), not both")
        merged = {**w.model_dump(exclude=inherited),
                  **g.model_dump(exclude_none=True, exclude={"endpoints", "slo_ms", "urgency_ms", "best_effort"})}
        gw = workload(raw.Workload.model_validate(merged), ctx.base, bad, failed, ctx.file, ctx.issues, key)
        first = sum(x.endpoints for x in list(w.apps.values())[:i])
        slo = None if g.best_effort else (g.slo_ms or slo_ms)
        if g.best_effort and (g.slo_ms or g.urgency_ms):
            bad(f"{key}.best_effort", "a best-effort app has no SLO: drop slo_ms and urgency_ms, or best_effort")
        if gw is not None:
            out.append(AppSpec(name, gw, tuple(endpoints[first:first + g.endpoints]), slo,
                                None if slo is None else (g.urgency_ms or urgency_ms or contract.urgency_ms(slo)), i))

    return main, out
