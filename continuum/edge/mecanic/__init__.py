"""MECaNIC on the edge-system interface (docs/mecanic.md): [edge.nic] puts an
ingress stage, the path from a node's NIC to its host, in front of edge nodes.
kind = "mecanic" queues each packet in MECaNIC's shared pool of queues by its
class (5-tuple and L7 keywords: reliability priority -> queue range, latency
priority -> dequeue order, aged); kind = "plain" is one FIFO, the host path as
an ordinary NIC has it. The stage is in the emulator (mahimahi-link --nic,
src/mecanic/), where the endpoints' packets already are: no extra hop or
copy, one clock with the link and the core delay. This package turns the
table into its options and reads its per-packet logs back."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd
from pydantic import Field, model_validator

from continuum.config import ExperimentSpec
from continuum.config.edge import Draft
from continuum.config.raw import Strict
from continuum.config.validation import Issues
from continuum.edge.system import EdgeRun, EdgeSystem
from continuum.network import plan
from continuum.network.plan import MQTT_PORT, NODE_IF
from continuum.runtime import stop_process, wait_for

if TYPE_CHECKING:
    from continuum.network.plan import Plan

NAME = r"^[A-Za-z0-9_.-]+$"
MAX_PATTERNS, MAX_PATTERN_BYTES = 1024, 128  # mahimahi-link's (the paper's NIC: 100 of 128 bytes)
CACHE_PORT = 18830  # the cache agent: where the node's nat table sends MQTT connections from outside
PLAIN_PACKETS, POOL_PACKETS = 256, 64  # queue_packets' defaults: one FIFO (a NIC ring), and each queue of the pool


class RawKeyword(Strict):
    """Bytes at an offset of the transport payload, compared under a mask."""

    offset: int = Field(ge=0, le=65535)
    hex: str = Field(pattern=r"^([0-9A-Fa-f]{2})+$")
    mask: str | None = Field(default=None, pattern=r"^([0-9A-Fa-f]{2})+$")

    @model_validator(mode="after")
    def _same_length(self) -> RawKeyword:
        if self.mask is not None and len(self.mask) != len(self.hex):
            raise ValueError("mask has as many bytes as hex")
        return self


class NicClass(Strict):
    """A class of packets: what it matches (every key given must match; the first class that
    matches wins) and how the stage queues it."""

    name: str = Field(pattern=NAME)
    queues: tuple[int, int] | None = None  # its queue range in the pool, ends included (default: all): its reliability (bandwidth)
    reliability: int = Field(default=0, ge=0, le=1_000_000)  # P^r: may claim queues held by lower ones
    latency: int = Field(default=1, ge=0, le=1_000_000)  # P^l: dequeue priority, and what it gains per dequeue waited
    proto: Literal["tcp", "udp"] | None = None
    src: str | None = None  # a node of this file, or an IPv4 prefix
    dst: str | None = None
    sport: int | tuple[int, int] | None = None
    dport: int | tuple[int, int] | None = None
    mqtt_topic: str | None = Field(default=None, min_length=1)  # an MQTT PUBLISH whose topic starts with this
    http_path: str | None = Field(default=None, min_length=1)  # an HTTP request whose path starts with this
    raw: RawKeyword | None = None


class NicDefault(Strict):
    """How the packets no class matches are queued."""

    queues: tuple[int, int] | None = None  # default: the whole pool
    reliability: int = Field(default=0, ge=0, le=1_000_000)
    latency: int = Field(default=1, ge=0, le=1_000_000)


class CacheEntry(Strict):
    """An answer installed in the NIC before the run: requests whose payload starts with `request`
    (text) or `request_hex` (bytes) are answered with `response_file`'s bytes, from the first one on."""

    request: str | None = Field(default=None, min_length=1, max_length=128)
    request_hex: str | None = Field(default=None, pattern=r"^([0-9A-Fa-f]{2}){1,128}$")
    response_file: str  # relative to the experiment file's folder


class NicCache(Strict):
    """Response caching (docs/mecanic.md): the NIC answers a request whose answer it has seen, or holds."""

    capacity_mb: float = Field(default=64.0, gt=0, le=4096)  # least recently used answers out first (the paper's NIC: 4 GB)
    apps: list[str] | None = None  # whose requests it caches ([workload.apps] names; default: every app's)
    entries: list[CacheEntry] = []  # answers installed before the run (the paper's pre-fetched content)
    # a node that serves the cached apps too: a miss is fetched from it by the NIC, not sent to the host
    origin: str | None = None
    # its one-way delay from the offload node, held by the NIC's agent each way: modelled (default: its tier's
    # core delay less the offload node's, at least 0)
    origin_delay_ms: float | None = Field(default=None, ge=0, le=10_000)


class NicMatching(Strict):
    """Payload pattern matching (docs/mecanic.md): the NIC looks for these in each packet it scans
    and hands the first found to the app with the packet (an IPv4 option a UDP app reads)."""

    patterns: list[str] = []  # text (UTF-8), each 1-128 bytes
    hex_patterns: list[str] = []  # bytes in hex
    classes: list[str] | None = None  # the classes scanned (default: every packet; "default": the unmatched ones)


class EdgeNic(Strict):
    """An ingress stage in front of edge nodes: MECaNIC's queueing, or a plain FIFO (docs/mecanic.md)."""

    kind: Literal["mecanic", "plain"] = "mecanic"
    rate_mbit: float = Field(gt=0, le=100_000)  # the path from the NIC to the host
    nodes: list[str] | None = None  # the nodes it sits in front of (default: every edge node)
    queues: int = Field(default=20, ge=1, le=1024)  # mecanic: the shared pool
    queue_packets: int | None = Field(default=None, ge=1, le=100_000)  # per queue (default 64; plain: 256)
    # mecanic: each queue's cap (default rate_mbit / queues: the paper's reserved share each; 0: uncapped)
    queue_rate_mbit: float | None = Field(default=None, ge=0, le=100_000)
    classes: list[NicClass] = []
    default: NicDefault = NicDefault()
    cache: NicCache | None = None  # the table turns response caching on, in front of the offload node
    matching: NicMatching | None = None


@dataclass(frozen=True)
class Settings:
    kind: str
    rate_bps: int
    queues: int
    queue_packets: int
    queue_rate_bps: int | None
    nodes: tuple[str, ...]
    classes: tuple[dict, ...]  # NicClass.model_dump() each
    default: tuple[int, int, int, int]  # lo, hi, reliability, latency
    cache_mb: float | None = None  # response caching on the offload node's NIC (None: off)
    cache_endpoints: tuple[str, ...] = ()  # whose requests it caches (empty: everyone's)
    cache_entries: tuple[tuple[str, str], ...] = ()  # (request prefix in hex, the answer's file, absolute)
    cache_apps: tuple[str, ...] = ()  # the apps whose requests it caches (every app's when none named)
    origin: str | None = None  # where a miss is fetched from (None: the host's own server)
    origin_delay_ms: float = 0.0  # -1: its tier's core delay less the offload node's, known once the spec is (origin_delay)
    origin_tier: str = ""
    patterns: tuple[str, ...] = ()  # payload pattern matching: the patterns in hex (empty: off)
    scan: tuple[str, ...] = ()  # the classes scanned (empty: every packet)


def _ports(v: int | tuple[int, int]) -> str:
    lo, hi = (v, v) if isinstance(v, int) else v
    return f"{lo}-{hi}"


def _prefix(v: str, addresses: dict[str, str]) -> str:
    return f"{addresses[v]}/32" if v in addresses else v


def class_option(c: dict, addresses: dict[str, str]) -> str:
    """A class as mahimahi-link's --nic-class (node names resolved to their addresses)."""
    lo, hi = c["queues"]
    out = f"{c['name']}:{lo}:{hi}:{c['reliability']}:{c['latency']}"
    if c["proto"]:
        out += f",proto={c['proto']}"
    for key in ("src", "dst"):
        if c[key]:
            out += f",{key}={_prefix(c[key], addresses)}"
    for key in ("sport", "dport"):
        if c[key] is not None:
            out += f",{key}={_ports(c[key])}"
    if c["mqtt_topic"]:
        out += f",mqtt={c['mqtt_topic']}"
    if c["http_path"]:
        out += f",http={c['http_path']}"
    if c["raw"]:
        r = c["raw"]
        out += f",raw={r['offset']}:{r['hex']}" + (f"/{r['mask']}" if r["mask"] else "")
    return out


def log_path(folder: Path, node: str) -> Path:
    return folder / f"nic-{node}.log"


def origin_delay(s: Settings, spec: ExperimentSpec) -> float:
    """The origin's one-way delay from the offload node: as given, else its tier's core delay less the offload
    node's (the edge on the way from the UE to the cloud), at least 0."""
    if s.origin_delay_ms >= 0:
        return s.origin_delay_ms
    tiers = {"edge": spec.core.edge_ms, "cloud": spec.core.cloud_ms}
    return max(0.0, tiers.get(s.origin_tier, 0.0) - tiers.get(spec.workload.offload, 0.0))


class Mecanic(EdgeSystem):
    name = "mecanic"
    section = "nic"
    title = "MECaNIC's ingress stage"
    switch = "edge.nic"
    manages = None  # the NIC's path: no edge resource another system decides over
    model = EdgeNic
    manifest_key = "nic"
    results_package = "continuum.edge.mecanic"
    summary_key = "nic"
    node_code = ("edge-systems",)

    def resolve(self, table: EdgeNic | None, draft: Draft, ctx: Issues) -> Settings | None:
        if table is None:  # (a table with bad keys comes without them: its other problems are named in the same pass)
            return None
        ok = True

        def bad(key: str, msg: str) -> None:
            nonlocal ok
            ctx.bad(key, msg)
            ok = False

        names = [n.name for n in draft.nodes]
        targets = [n.name for n in draft.nodes if n.role in ("edge", "cloud")]
        nodes = table.nodes if table.nodes is not None else [n.name for n in draft.nodes if n.role == "edge"]
        if not nodes:
            bad("edge.nic.nodes", f"no edge node to put the stage in front of; name the nodes (valid: {', '.join(targets) or 'none'})")
        for n in nodes:
            if n not in targets:
                bad("edge.nic.nodes", f"{n!r} is not an edge or cloud node of this file; valid: {', '.join(targets) or 'none'}")
        plain = table.kind == "plain"
        queues = 1 if plain else table.queues
        seen: set[str] = set()
        for i, c in enumerate(table.classes):
            where = f"edge.nic.classes[{i}]"
            if c.name in seen or c.name == "default":
                bad(f"{where}.name", f"{c.name!r} is taken (each class its own name; \"default\" is the unmatched packets')")
            seen.add(c.name)
            lo, hi = c.queues if c.queues is not None else (0, queues - 1)
            if not plain and not 0 <= lo <= hi < queues:
                bad(f"{where}.queues", f"[{lo}, {hi}] is not a range of the pool's {queues} queues: 0 <= first <= last <= {queues - 1}")
            keywords = [k for k in ("mqtt_topic", "http_path", "raw") if getattr(c, k) is not None]
            if len(keywords) > 1:
                bad(where, f"one keyword per class, not {' and '.join(keywords)}")
            for key in ("sport", "dport"):
                v = getattr(c, key)
                if v is not None and not all(0 <= p <= 65535 for p in ((v,) if isinstance(v, int) else v)):
                    bad(f"{where}.{key}", "a port 0..65535, or [first, last]")
                elif isinstance(v, tuple) and v[0] > v[1]:
                    bad(f"{where}.{key}", "[first, last] with first <= last")
            for key in ("src", "dst"):
                v = getattr(c, key)
                if v is None or v in names:
                    continue
                try:
                    ipaddress.IPv4Network(v)
                except ValueError:
                    bad(f"{where}.{key}", f"{v!r} is neither a node of this file ({', '.join(names)}) nor an IPv4 prefix")
        d = table.default
        lo, hi = d.queues if d.queues is not None else (0, queues - 1)
        if not plain and not 0 <= lo <= hi < queues:
            bad("edge.nic.default.queues", f"[{lo}, {hi}] is not a range of the pool's {queues} queues")
        patterns: list[str] = []
        scan: list[str] = []
        cache_endpoints: tuple[str, ...] = ()
        cache_entries: tuple[tuple[str, str], ...] = ()
        origin: str | None = None
        delay_ms: float | None = None
        origin_role = ""
        if table.matching is not None:
            m = table.matching
            patterns = [p.encode().hex() for p in m.patterns]
            for i, h in enumerate(m.hex_patterns):
                if not re.fullmatch(r"([0-9A-Fa-f]{2})+", h):
                    bad(f"edge.nic.matching.hex_patterns[{i}]", f"{h!r} is not hex bytes (e.g. \"47455420\" for \"GET \")")
                patterns.append(h.lower())
            if not 1 <= len(patterns) <= MAX_PATTERNS:
                bad("edge.nic.matching", f"{len(patterns)} patterns: give 1 to {MAX_PATTERNS} (patterns, hex_patterns)")
            for i, h in enumerate(patterns):
                if not 1 <= len(h) // 2 <= MAX_PATTERN_BYTES:
                    bad("edge.nic.matching", f"pattern {i + 1} has {len(h) // 2} bytes: 1 to {MAX_PATTERN_BYTES}")
            names = [k.name for k in table.classes] + ["default"]
            for name in m.classes or []:
                if name not in names:
                    bad("edge.nic.matching.classes", f"{name!r} is not a class of edge.nic.classes; valid: {', '.join(names)}")
            scan = list(m.classes or [])
        if table.cache is not None:
            w = draft.workload
            offload = next((n.name for n in draft.nodes if w is not None and n.role == w.offload), None)
            if draft.provider not in (None, "netns"):
                bad("edge.nic.cache", f"response caching runs on the netns provider so far (this file's: {draft.provider})")
            elif offload is not None and offload not in nodes:
                bad("edge.nic.cache", f"the cache answers for the offload node: add {offload!r} to edge.nic.nodes")
            apps = {a.name: a for a in draft.apps}
            for name in table.cache.apps or []:
                if name not in apps:
                    bad("edge.nic.cache.apps", f"{name!r} is not an app of this file; valid: {', '.join(apps) or 'none'}")
            cache_endpoints = tuple(e for name in (table.cache.apps or []) if name in apps for e in apps[name].endpoints)
            held = 0
            for i, entry in enumerate(table.cache.entries):
                where = f"edge.nic.cache.entries[{i}]"
                if (entry.request is None) == (entry.request_hex is None):
                    bad(where, "give the request's start as request (text) or request_hex (bytes), one of them")
                    continue
                path = (ctx.base / entry.response_file).resolve()
                if not path.is_file():
                    bad(f"{where}.response_file", f"{entry.response_file!r} is not a file (paths start at the experiment file's folder: {ctx.base})")
                    continue
                held += path.stat().st_size
                prefix = entry.request.encode().hex() if entry.request is not None else str(entry.request_hex).lower()
                cache_entries += ((prefix, str(path)),)
            ct = table.cache
            if ct.origin is not None:
                remote = [n for n in draft.nodes if n.role in ("edge", "cloud") and n.name != offload]
                node = next((n for n in remote if n.name == ct.origin), None)
                if node is None:
                    bad("edge.nic.cache.origin", f"{ct.origin!r} is not an edge or cloud node of this file other than the offload node; "
                                                 f"valid: {', '.join(n.name for n in remote) or 'none (add a cloud node)'}")
                else:
                    origin, delay_ms = node.name, ct.origin_delay_ms
                    origin_role = node.role
            if held > table.cache.capacity_mb * 1e6:
                bad("edge.nic.cache.entries", f"the installed answers take {held / 1e6:.1f} MB, more than capacity_mb = {table.cache.capacity_mb:g}")
        if not ok:
            return None
        rate = round(table.rate_mbit * 1e6)
        cap = table.queue_rate_mbit if table.queue_rate_mbit is not None else table.rate_mbit / queues
        return Settings(kind=table.kind, rate_bps=rate, queues=queues,
                        queue_packets=table.queue_packets or (PLAIN_PACKETS if plain else POOL_PACKETS),
                        queue_rate_bps=None if plain or cap == 0 else max(1, round(cap * 1e6)), nodes=tuple(nodes),
                        classes=tuple({**c.model_dump(), "queues": c.queues or (0, queues - 1)} for c in table.classes), default=(lo, hi, d.reliability, d.latency),
                        cache_mb=table.cache.capacity_mb if table.cache else None, cache_endpoints=cache_endpoints, cache_entries=cache_entries,
                        cache_apps=tuple(table.cache.apps or [a.name for a in draft.apps]) if table.cache else (), origin=origin,
                        origin_delay_ms=delay_ms if delay_ms is not None else -1.0 if origin else 0.0,
                        origin_tier=origin_role, patterns=tuple(patterns), scan=tuple(scan))

    def host_problems(self, s: Settings, spec: ExperimentSpec) -> list[str]:
        out = []
        if spec.mobile.emulator_threads > 1:
            out.append("[edge.nic]: the ingress stage is shared by every UE's link, so the emulator runs one forwarding thread: "
                       "leave out mobile.emulator_threads")
        return out

    def server_places(self, s: Settings, spec: ExperimentSpec) -> list[tuple[str, str]]:
        """The origin serves the cached apps: a miss is fetched from there."""
        return [(s.origin, a) for a in s.cache_apps] if s.origin else []

    def describe(self, s: Settings, spec: ExperimentSpec) -> list[str]:
        what = (f"one FIFO of {s.queue_packets} packets" if s.kind == "plain" else
                f"MECaNIC's pool of {s.queues} queues of {s.queue_packets} packets, each capped at "
                + (f"{s.queue_rate_bps / 1e6:g} Mbit/s" if s.queue_rate_bps else "nothing"))
        lines = [f"ingress stage ({s.kind}) in front of {', '.join(s.nodes)}: {s.rate_bps / 1e6:g} Mbit/s to the host, {what}"]
        for c in s.classes:
            lines.append(f"  class {class_option(c, {})}")
        lo, hi, pr, pl = s.default
        lines.append(f"  unmatched packets: queues {lo}..{hi}, reliability {pr}, latency {pl}")
        if s.patterns:
            lines.append(f"  payload pattern matching: {len(s.patterns)} pattern(s), scanning "
                         + (", ".join(s.scan) if s.scan else "every packet") + " (the result: IPv4 option 158)")
        if s.cache_mb:
            lines.append(f"  response caching on the offload node's NIC: up to {s.cache_mb:g} MB of answers, "
                         + (f"for {', '.join(s.cache_endpoints)}" if s.cache_endpoints else "for every endpoint")
                         + (f"; {len(s.cache_entries)} installed before the run" if s.cache_entries else "")
                         + (f"; misses fetched from {s.origin}, {origin_delay(s, spec):g} ms away each way (modelled; it serves {', '.join(s.cache_apps)} too)"
                            if s.origin else ""))
        return lines

    def manifest(self, s: Settings | None, spec: ExperimentSpec) -> dict | None:
        return None if s is None else asdict(s)

    def link_args(self, s: Settings, spec: ExperimentSpec, plan: Plan, logs: Path) -> list[str]:
        addresses = plan.addresses
        out = []
        for node in s.nodes:
            opt = f"--nic={node},prefix={addresses[node]}/32,rate-bps={s.rate_bps},queue-packets={s.queue_packets}"
            out.append(opt + (",plain" if s.kind == "plain" else f",queues={s.queues}"
                              + (f",queue-rate-bps={s.queue_rate_bps}" if s.queue_rate_bps else "")))
        out += [f"--nic-class={class_option(c, addresses)}" for c in s.classes]
        lo, hi, pr, pl = s.default
        out += [f"--nic-default={lo}:{hi}:{pr}:{pl}", f"--nic-log={logs}/nic-{{name}}.log"]
        if s.patterns:
            path = logs / "nic-patterns.txt"  # the emulator reads them from the run folder, beside its logs
            path.write_text("# [edge.nic.matching], one pattern per line in hex\n" + "".join(f"{p}\n" for p in s.patterns))
            out.append(f"--nic-patterns={path}")
            if s.scan:
                out.append(f"--nic-scan={','.join(s.scan)}")
        return out

    def start(self, s: Settings, run: EdgeRun) -> None:
        """Response caching: the agent (the NIC's processor) in the offload node's network namespace,
        outside its cgroup, and the node's MQTT connections from outside redirected to it."""
        if s.cache_mb is None:
            return
        node = run.node
        raw = run.run_dir / "raw"
        ready, log = raw / "nic-cache.ready", run.run_dir / "logs" / "nic-cache-agent.log"
        addresses = plan.build(run.spec).addresses
        if s.origin:
            # Modelled, not emulated: only the endpoints' packets cross the emulator (and this kernel may have no
            # netem), so the agent holds each fetch the core network's one-way delay before it leaves and after it returns.
            run.note({"origin_delay_ms": origin_delay(s, run.spec), "origin_delay": "modelled by the cache agent"})
        argv = node.argv([node.python, "-m", "mecanic.cache_agent", "--port", str(CACHE_PORT), "--broker", f"127.0.0.1:{MQTT_PORT}",
                          *(["--origin", f"{addresses[s.origin]}:{MQTT_PORT}", "--origin-delay-ms", f"{origin_delay(s, run.spec):g}"]
                            if s.origin else []),
                          "--capacity-mb", f"{s.cache_mb:g}", "--log", str(raw / "nic-cache.csv"), "--ready", str(ready),
                          *(["--endpoints", ",".join(s.cache_endpoints)] if s.cache_endpoints else []),
                          *(a for prefix, path in s.cache_entries for a in ("--entry", f"{prefix}={path}"))])
        proc = node.start(argv, log, contained=False)
        run.undo.callback(ready.unlink, missing_ok=True)
        run.undo.callback(stop_process, proc)

        def listening() -> bool:
            if proc.poll() is not None:
                from continuum.errors import ProviderError

                raise ProviderError(f"MECaNIC's cache agent on {node.name} exited ({proc.returncode}); see {log}")
            return ready.exists()

        wait_for(listening, 15, f"MECaNIC's cache agent on {node.name}")
        run.watch("MECaNIC's cache agent", proc, log)
        # Only the connections of the endpoints whose requests it caches reach it, as a NIC's rule steers
        # only the flows it offloads to its engine; the others keep the host's path untouched.
        sources = [addresses[e] for e in s.cache_endpoints] or [""]
        for src in sources:
            rule = ["PREROUTING", "-i", NODE_IF, *(["-s", src] if src else []), "-p", "tcp", "--dport", str(MQTT_PORT),
                    "-j", "REDIRECT", "--to-ports", str(CACHE_PORT)]
            node.run(["iptables", "-w", "-t", "nat", "-A", *rule])
            run.undo.callback(node.run, ["iptables", "-w", "-t", "nat", "-D", *rule], check=False)
        run.phase(f"response caching on {node.name}'s NIC: up to {s.cache_mb:g} MB of answers, "
                  + (f"fetched from {s.origin} ({origin_delay(s, run.spec):g} ms away each way, modelled)" if s.origin
                     else "learned from the server's"))

    def add_records(self, run_dir: Path, df: pd.DataFrame) -> pd.DataFrame:
        """`nic_cache`: hit where the NIC answered the request from what it held, fetched where it answered it
        with the origin's answer, miss where the request went on to the host's server."""
        path = run_dir / "raw" / "nic-cache.csv"
        if not path.exists() or df.empty:
            return df
        c = pd.read_csv(path, dtype={"request_id": str})
        c = c[c["outcome"].isin(["hit", "miss", "fetched"])].drop_duplicates("request_id", keep="last")
        df = df.assign(nic_cache=df["request_id"].astype(str).map(dict(zip(c["request_id"], c["outcome"]))))
        if "dropped" in df:  # (the server never saw it: answered by the NIC, not lost on the way)
            df.loc[df["nic_cache"].isin(["hit", "fetched"]), "dropped"] = 0
        return df
