"""The link sections: [mobile] (the traces and queues mahimahi-link replays,
or srsRAN's real stack in their place) and [core] (the one-way delay per
destination tier)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from continuum import traces
from continuum.config import presets, raw
from continuum.config.spec import CoreSpec, LightRef, MobileSpec, NodeSpec, SrsranSpec
from continuum.config.validation import Issues
from continuum.traces import TraceRef
from srsran_integration import lte


def mobile(p: dict[str, Any], nodes: list[NodeSpec], ctx: Issues) -> MobileSpec | None:
    """[mobile] resolved: the traces found (archive names, presets, paths), queue arguments and bypass rules checked."""
    bad, failed, base, materialize = ctx.bad, ctx.failed, ctx.base, ctx.materialize
    provider = p.get("provider")
    mobile = None
    m = p.get("mobile")
    if m is not None and m.mode == "srsran":
        mobile = _srsran(m, p, nodes, bad, failed)
    elif m is not None:
        if m.srsran is not None:
            bad("mobile.srsran", "[mobile.srsran] configures mode = \"srsran\"; this file's mobile.mode is \"emulated\" "
                                 "(set mobile.mode = \"srsran\", or remove the table)")
        up_name, down_name = m.uplink, m.downlink
        if m.preset is not None:
            if m.preset in presets.NOT_PUBLIC:
                bad("mobile.preset", f"{m.preset!r}: {presets.NOT_PUBLIC[m.preset]}; public presets: {', '.join(presets.MOBILE)}")
            elif m.preset not in presets.MOBILE:
                bad("mobile.preset", f"unknown preset {m.preset!r}; valid: {', '.join(presets.MOBILE)}")
            else:
                up_name = up_name or presets.MOBILE[m.preset][0]
                down_name = down_name or presets.MOBILE[m.preset][1]
        refs = {}
        for key, given in (("uplink", up_name), ("downlink", down_name)):
            if given is None:
                if m.preset is None:
                    bad(f"mobile.{key}", "no trace given: set mobile.preset or mobile.uplink and mobile.downlink (archive name or file path)")
                continue
            if failed("mobile.preset", f"mobile.{key}"):
                continue
            ref, problem = trace(given, base, "up" if key == "uplink" else "down", materialize)
            if problem:
                from_preset = m.preset is not None and getattr(m, key) is None
                bad("mobile.preset" if from_preset else f"mobile.{key}", problem)
            refs[key] = ref
        for d in ("uplink", "downlink"):
            kind, args = getattr(m, f"{d}_queue"), getattr(m, f"{d}_queue_args")
            if failed(f"mobile.{d}_queue", f"mobile.{d}_queue_args"):
                continue
            for problem in raw.queue_args_problems(kind, args):
                bad(f"mobile.{d}_queue_args", problem)
        for i, rule in enumerate(m.bypass):
            if not _valid_bypass(rule):
                bad(f"mobile.bypass[{i}]", f"{rule!r}: expected PREFIX or PREFIX:PORT, e.g. '10.200.2.0/24' or '10.200.2.2:1883'")
        up_ref, down_ref = refs.get("uplink"), refs.get("downlink")
        lights = {d: _light(m, d, refs.get(d), base, bad, failed) for d in ("uplink", "downlink")}
        if up_ref and down_ref:
            mobile = MobileSpec(
                m.preset, up_ref, down_ref, m.uplink_queue, m.uplink_queue_args,
                m.downlink_queue, m.downlink_queue_args, m.uplink_loss, m.downlink_loss, tuple(m.bypass), m.ms_bursts,
                segmentation="emulator" if m.emulator == "mahimahi" else _segmentation(m.segmentation, provider),
                emulator_threads=m.emulator_threads, emulator=m.emulator,
                uplink_light=lights["uplink"], downlink_light=lights["downlink"],
            )
        if any(lights.values()):
            _light_problems(m, p, bad)
        if m.emulator == "mahimahi":
            _upstream_problems(m, p, bad)
        if m.segmentation == "kernel" and provider is not None and provider.kind != "netns":
            bad("mobile.segmentation", f"\"kernel\" (host offloads on, mahimahi-link --gso) is built by the netns provider; "
                                       f"{provider.kind!r} keeps \"emulator\"")

    return mobile


def _light(m: raw.Mobile, d: str, ref: TraceRef | None, base: Path, bad, failed) -> LightRef | None:
    """mobile.{d}_light, or the light part of the direction's archive entry (replay = "auto"), parsed."""
    from continuum.tracearchive import fetch, index, light

    key = f"mobile.{d}_light"
    given = getattr(m, f"{d}_light")
    if m.replay == "plain":
        if given is not None:
            bad(key, f"{given!r} is a light trace for workload-aware replay, and mobile.replay is \"plain\": "
                     "remove one of the two")
        return None
    if failed(key):
        return None
    archive_id = None
    if given is not None:
        path = traces.locate_file(given, base)
        if path is None:
            bad(key, f"{given!r}: no such file (a light trace: lines \"TIME_MS BASE_DELAY_MS PDO_MS...\", "
                     "see docs/link-replay.md)" + (f" (relative to {base})" if "/" in given else ""))
            return None
    elif ref is not None and ref.archive_id is not None:
        try:
            entry, _ = index.find(ref.archive_id)
            path = fetch.light_path(entry, d[:-4] if d.endswith("link") else d)
        except (index.UnknownTrace, fetch.FetchError, index.IndexError_) as e:
            bad(f"mobile.{d}", f"its light part: {e}")
            return None
        if path is None:
            return None
        given, archive_id = f"{ref.archive_id} (light part)", ref.archive_id
    else:
        return None
    try:
        t = light.parse(path)
    except light.LightTraceError as e:
        bad(key if archive_id is None else f"mobile.{d}", str(e))
        return None
    if "," in str(path) or (t.offsets is not None and "," in str(t.offsets)):
        bad(key, f"{path}: a ',' in its path would split mahimahi-link's --link option; move or rename it")
        return None
    return LightRef(given, path, traces.sha256(path), t.pdo_bytes, t.idle_ms, t.offsets, archive_id, t.active_ms)


def _light_problems(m: raw.Mobile, p: dict[str, Any], bad) -> None:
    """Workload-aware replay is mahimahi-link's, for private links replayed from their own traces."""
    why = "a light trace (workload-aware replay) "
    if m.emulator == "mahimahi":
        bad("mobile.emulator", f"{why}is replayed by mahimahi-link; upstream mm-link has no light stage: set "
                               "mobile.replay = \"plain\" to compare with it")
    if m.access is not None:
        bad("mobile.access", f"{why}and the access procedure (a one-UE cell) are not combined yet: pick one, or set "
                             "mobile.replay = \"plain\"")
    elif p.get("cell") is not None:
        bad("cell", f"{why}is for private links; a shared cell schedules its members from their channels: set "
                    "mobile.replay = \"plain\"")


def core(p: dict[str, Any], ctx: Issues) -> CoreSpec | None:
    """[core]: each tier's one-way delay, a preset's or as written."""
    bad = ctx.bad
    core = None
    c = p.get("core")
    if c is not None:
        delays = {}
        for tier in ("edge", "cloud"):
            v = getattr(c, tier)
            if isinstance(v, str):
                if v in presets.CORE_ONE_WAY_MS:
                    delays[tier] = (presets.CORE_ONE_WAY_MS[v], v)
                else:
                    bad(f"core.{tier}", f"unknown preset {v!r}; valid: {', '.join(presets.CORE_ONE_WAY_MS)} or a one-way delay in ms")
            elif not 0 <= v <= 10000:  # nan too
                bad(f"core.{tier}", f"{v} ms: a one-way delay must be between 0 and 10000 ms")
            else:
                delays[tier] = (float(v), f"{float(v):g} ms")
        if len(delays) == 2:
            core = CoreSpec(delays["edge"][0], delays["edge"][1], delays["cloud"][0], delays["cloud"][1], c.jitter_ms, c.mechanism)

    return core


EMULATED_ONLY = ("preset", "uplink", "downlink", "uplink_light", "downlink_light", "uplink_queue", "uplink_queue_args", "downlink_queue",
                 "downlink_queue_args", "uplink_loss", "downlink_loss", "bypass", "ms_bursts", "segmentation",
                 "emulator_threads", "emulator")


def _upstream_problems(m: raw.Mobile, p: dict[str, Any], bad) -> None:
    """emulator = "mahimahi": what only mahimahi-link does, named by its key (upstream mm-link
    replays one UE's traces through its queues; the rest is this project's)."""
    why = "emulator = \"mahimahi\" (upstream mm-link) "
    provider = p.get("provider")
    if provider is not None and provider.kind != "netns":
        bad("mobile.emulator", f"{why}runs on the netns provider (one mm-link per endpoint in this machine's namespaces); "
                               f"this file's provider.kind is {provider.kind!r}")
    if m.segmentation == "kernel":
        bad("mobile.segmentation", f"{why}reads MTU packets from its TUN devices: \"kernel\" (mahimahi-link --gso) is "
                                   "mahimahi-link's; leave the key out")
    if m.emulator_threads > 1:
        bad("mobile.emulator_threads", f"{why}is one process per endpoint, each single-threaded: forwarding threads are "
                                       "mahimahi-link's (--threads); leave the key out")
    if m.ms_bursts:
        bad("mobile.ms_bursts", f"{why}always delivers in its 1-ms ticks; the key makes mahimahi-link do as mm-link does: "
                                "leave it out")
    for key in ("uplink_loss", "downlink_loss"):
        if getattr(m, key):
            bad(f"mobile.{key}", f"{why}has no random loss (upstream's mm-loss is another shell); "
                                 "loss is mahimahi-link's: set it to 0 or use emulator = \"mahimahi-link\"")
    for i, rule in enumerate(m.bypass):
        if ":" in rule:
            bad(f"mobile.bypass[{i}]", f"{rule!r}: {why}filters by address only (mahimahi-patches/0004): "
                                       "give a PREFIX without a port")
    if p.get("cell") is not None:
        bad("cell", f"{why}replays each UE's own traces; the shared cell and its MAC schedulers are mahimahi-link's "
                    "(--uplink-cell/--downlink-cell): remove [cell] or use emulator = \"mahimahi-link\"")


def _segmentation(asked: str, provider: raw.Provider | None) -> str:
    """mobile.segmentation as run: "auto" is the kernel's (offloads on, mahimahi-link --gso: a
    tenth of the CPU per Gbit/s, 10 Gbit/s-class links) where the netns provider builds the
    path, and the emulator's MTU frames where another provider does (its own check refuses
    an explicit "kernel" there)."""
    if asked != "auto":
        return asked
    return "kernel" if provider is None or provider.kind == "netns" else "emulator"


def _srsran(m: raw.Mobile, p: dict, nodes: list[NodeSpec], bad, failed) -> MobileSpec | None:
    """mode = "srsran": the real stack in place of the emulated link; what it
    cannot be combined with is named by its key."""
    r = m.srsran or raw.Srsran()
    ok = True

    def no(key: str, why: str) -> None:
        nonlocal ok
        bad(key, why)
        ok = False

    for key in EMULATED_ONLY:
        if key in m.model_fields_set:
            no(f"mobile.{key}", "replays or shapes the emulated link (mode = \"emulated\"); with mode = \"srsran\" "
                                "srsRAN's real stack is the link: remove the key")
    if p.get("cell") is not None:
        no("cell", "the shared emulated cell replaces the emulated link; with mobile.mode = \"srsran\" the cell is "
                   "srsRAN's own (its MAC scheduler): remove [cell]")
    provider = p.get("provider")
    if provider is not None and provider.kind != "netns":
        no("provider.kind", f"mobile.mode = \"srsran\" runs the stack in the netns provider's namespaces; "
                            f"{provider.kind!r} does not place it yet (use kind = \"netns\")")
    endpoints = [n for n in nodes if n.role == "endpoint"]
    if len(endpoints) != 1 and not failed("nodes.endpoint.count"):
        no("nodes.endpoint.count", f"{len(endpoints)} endpoints: srsRAN's cell here carries one UE "
                                   "(srsUE's ZMQ radio is one socket pair; over the air, one phone): set count = 1")
    core = p.get("core")
    if core is not None and core.mechanism == "mahimahi-link":
        no("core.mechanism", "with mobile.mode = \"srsran\" no emulator is on the path to add the core delay: "
                             "use \"netem\" (or \"auto\", which picks it)")
    w = p.get("workload")
    if w is not None and w.runtime == "container":
        no("workload.runtime", "with mobile.mode = \"srsran\" the endpoint runs as a process: srsUE's tunnel "
                               "is put in the endpoint's named namespace, which a container's sandbox does not have")
    if r.generation == "5g":  # the rest of the table is the 5G files' business
        bad("mobile.srsran.generation", "continuum run drives srsRAN 4G (srsENB, srsEPC, srsUE); for 5G (srsRAN Project's "
                                        "gNB or SMEC's fork, Open5GS) playbooks/srsran-5g.yml installs a lab machine and "
                                        "`python3 -m srsran_integration configs FILE OUT` writes the cell's files "
                                        "(srsran-integration/README.md): use generation = \"4g\" to run here")
        return None
    if r.generation == "4g" and r.band is not None and r.band != lte.band(r.arfcn):
        no("mobile.srsran.band", f"EARFCN {r.arfcn} is in band {lte.band(r.arfcn)}, not {r.band} (leave band out for 4g)")
    if r.generation == "4g" and r.policy != "pf":
        no("mobile.srsran.policy", f"{r.policy!r} picks SMEC's fork's 5G scheduler policy (generation = \"5g\", "
                                   "written by `python3 -m srsran_integration configs`); srsENB schedules with its own")
    prb = lte.PRB_OF_MHZ.get(float(r.bandwidth_mhz))
    if prb is None:
        no("mobile.srsran.bandwidth_mhz", f"{r.bandwidth_mhz:g} MHz is not an LTE channel; valid: "
                                          + ", ".join(f"{mhz:g} ({n} PRBs)" for mhz, n in lte.PRB_OF_MHZ.items()))
        prb = 25
    cell = lte.Cell(radio=r.radio, earfcn=r.arfcn, prb=prb, tx_gain=r.tx_gain, rx_gain=r.rx_gain,
                    device_args=r.device_args, ue=r.ue, ue_device_args=r.ue_device_args, zmq_port=r.zmq_port)
    for key, why in lte.problems(cell):
        if key != "bandwidth_mhz":
            no(f"mobile.srsran.{key}", why)
    if r.ue == "cots" and not any(k == "ue" for k, _ in lte.problems(lte.Cell(radio=r.radio, ue=r.ue))):
        no("mobile.srsran.ue", "a phone (ue = \"cots\") carries its own traffic, not the emulated endpoint's: "
                               "continuum run needs ue = \"srsue\"; for a phone, srsran_integration writes the eNB, "
                               "EPC and subscriber files (see srsran-integration/README.md)")
    prefix = Path(r.prefix)
    if not prefix.is_absolute():
        no("mobile.srsran.prefix", f"{r.prefix!r}: srsRAN's installation prefix is an absolute path (e.g. /usr/local)")
    if not ok or failed("mobile"):
        return None
    return MobileSpec(None, None, None, "infinite", "", "infinite", "", 0.0, 0.0, (), False,
                      mode="srsran", srsran=SrsranSpec(r.generation, cell, prefix, r.attach_timeout_s))


def trace(given: str, base: Path, direction: str, materialize: bool) -> tuple[TraceRef | None, str | None]:
    """A trace for mahimahi-link's --link option: resolved, and with no ',' in its path."""
    ref, problem = traces.resolve(given, base, direction, materialize)
    if ref is not None and "," in str(ref.path):
        return None, (f"trace {given!r} lies at {ref.path}, whose ',' would split mahimahi-link's "
                      "--link option; move or rename it (or the trace cache, $CONTINUUM_TRACE_CACHE)")
    return ref, problem


def _valid_bypass(rule: str) -> bool:
    import ipaddress

    prefix, _, port = rule.partition(":") if rule.count(":") == 1 else (rule, "", "")
    try:
        ipaddress.ip_network(prefix, strict=False)
    except ValueError:
        return False
    return port == "" or (port.isdigit() and 0 < int(port) < 65536)
