"""report.html: one page per run that a researcher opens in a browser, offline,
and can pass on as one file: the configuration, the run's health, every time
series on one shared time axis, the distributions with their definitions, and
the manifest. Plotly's Python package writes the figures; its JavaScript is
inlined once and the data embedded, so nothing is fetched at view time.

The page's numbers are the summary's (summary.json), written into elements the
tests read back (`data-metric`, `data-stat`). Time series are the run's own:
per-request points thinned for display above MAX_POINTS (said on the page; the
CSVs keep every request), link and node series at their bins."""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from continuum.results import events, timeline
from continuum.results.tables import METRICS

MAX_POINTS = 10_000  # per-request points per series; more are thinned evenly (the CSVs keep all)
DEFINITIONS = {
    "uplink_ms": "M1: from the endpoint publishing the request to the server receiving it (the cellular uplink, "
                 "the core network, the broker)",
    "downlink_ms": "M2: from the server publishing the answer to the endpoint receiving it",
    "preprocessing_ms": "M3: from the request being drawn to its publication (encoding on the endpoint)",
    "server_ms": "M4: from the server receiving the request to publishing its answer (queueing and inference)",
    "inference_ms": "the part of M4 spent in the model",
    "e2e_ms": "from the request being drawn to its answer arriving: M3 + M1 + M4 + M2 request by request "
              "(its percentiles are not the sums of theirs)",
}
COLOURS = {"uplink_ms": "#1f77b4", "downlink_ms": "#2ca02c", "preprocessing_ms": "#9467bd", "server_ms": "#ff7f0e",
           "inference_ms": "#8c564b", "e2e_ms": "#111111"}
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: right; } th { background: #f4f4f4; }
td.l, th.l { text-align: left; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; max-height: 30em; }
.ok { color: #1a7f37; } .bad { color: #c62828; font-weight: bold; } .warn { color: #b26a00; } .note { color: #555; font-size: 0.9em; }
nav a { margin-right: 1em; }
img { max-width: 100%; } .markdown td, .markdown th { text-align: left; } .markdown h1 { font-size: 1.35em; }
h2.file { font-family: monospace; font-size: 1em; color: #555; }
"""
SECTIONS = ("configuration", "health", "time-series", "distributions", "apps", "manifest")


def write_run(run_dir: Path, df: pd.DataFrame, summary: dict, bin_s: float = 0.5) -> Path:
    """RUN_DIR/report.html from the run's files and its summary (as report.build made them)."""
    run_dir = Path(run_dir)
    manifest = _json(run_dir / "manifest.json") or {}
    verification = _json(run_dir / "verification.json") or manifest.get("verification") or {}
    title = f"{manifest.get('experiment', run_dir.name)}: run {manifest.get('run_id', '')}"
    body = [f"<h1>{esc(title)}</h1>",
            f"<p class='note'>{esc(str(run_dir))} · status <b>{esc(manifest.get('status', '?'))}</b> · started "
            f"{esc(manifest.get('started', '?'))} · provider {esc(manifest.get('provider', '?'))}</p>",
            "<nav>" + "".join(f"<a href='#{s}'>{s.replace('-', ' ')}</a>" for s in SECTIONS) + "</nav>",
            _configuration(run_dir, manifest), _health(manifest, verification, summary),
            _time_series(run_dir, df, summary, manifest, bin_s), _distributions(df, summary), _apps(summary), _manifest(manifest)]
    out = run_dir / "report.html"
    out.write_text(page(title, body))
    return out


def page(title: str, body: list[str], library: str | None = None) -> str:
    """A whole page. Plotly's JavaScript and each figure's data are gzip-compressed
    and base64-encoded into the page, and a short loader inflates them with the
    browser's DecompressionStream (every current browser has it): the library is
    4.9 MB as text, 1.4 MB so. `library`: a relative address to load the library
    from instead of carrying it (the pages in the repository: third-party code
    is not committed there, see experiment_page)."""
    lib = (f"<script type='text/javascript' src='{esc(library)}'></script>" if library is not None
           else f"<script type='application/octet-stream' id='plotly-gz'>{_packed_library()}</script>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{esc(title)}</title><style>{STYLE}</style>{lib}</head><body>"
            + "\n".join(body) + f"<script type='text/javascript'>{LOADER}</script></body></html>\n")


# Inflates the library (when the page carries it) and draws each figure from its packed
# JSON; with no library (a repository page before it was placed) each figure says why.
LOADER = """
async function inflate(b64) {
  const bytes = Uint8Array.from(atob(b64.trim()), c => c.charCodeAt(0));
  const text = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return await new Response(text).text();
}
function say(html) {
  for (const f of document.querySelectorAll('div.figure')) f.insertAdjacentHTML('afterbegin', "<p class='bad'>" + html + "</p>");
}
async function draw() {
  const packed = document.getElementById('plotly-gz');
  if (!window.Plotly && packed) {
    const lib = document.createElement('script');
    lib.textContent = await inflate(packed.textContent);
    document.head.appendChild(lib);
  }
  if (!window.Plotly) {
    say('The interactive figure needs Plotly, which the repository does not carry (third-party code): ' +
        '<code>continuum report FOLDER</code> places it where this page looks (.local/share/continuum/), ' +
        'and <code>--self-contained</code> writes a page that carries it.');
    return;
  }
  for (const s of document.querySelectorAll('script.figure-data')) {
    const fig = JSON.parse(await inflate(s.textContent));
    await Plotly.newPlot(s.dataset.for, fig.data, fig.layout, fig.config);
  }
  document.body.dataset.figures = 'drawn';
}
draw().catch(e => { console.error('report.html: ' + e); say('The figures could not be drawn (' + e +
  '): a current Chrome, Firefox or Safari opens this page.'); });
"""


@functools.lru_cache(maxsize=1)
def _packed_library() -> str:
    return _pack(get_plotlyjs())


def _pack(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=6, mtime=0)).decode()


def figure_html(fig: go.Figure, name: str) -> str:
    """A figure's div and its data, packed; the page's loader draws it."""
    spec = json.loads(fig.to_json())
    spec["config"] = {"displaylogo": False, "responsive": True}
    return (f"<div class='figure' data-figure='{esc(name)}'><div id='fig-{esc(name)}'></div>"
            f"<script type='application/octet-stream' class='figure-data' data-for='fig-{esc(name)}'>"
            f"{_pack(json.dumps(spec, separators=(',', ':')))}</script></div>")


def _configuration(run_dir: Path, m: dict) -> str:
    host = m.get("host") or {}
    rows = [("provider", m.get("provider")), ("seed", m.get("seed")), ("config SHA-256", m.get("config_sha256")),
            ("core delay mechanism", m.get("delay_mechanism")),
            ("host", f"{host.get('cpu_model', '?')}, {host.get('cpus', '?')} CPUs, {(host.get('memory_bytes') or 0) / 2**30:.0f} GiB; "
                     f"{host.get('os', '')}" if host else None)]
    mobile = m.get("mobile") or {}
    if mobile:
        emulator = (mobile.get("emulator") or {}).get("name", "mahimahi-link")
        rows.append(("cellular link", f"{mobile.get('mode')}; emulator {emulator}; segmentation {mobile.get('segmentation')}"))
    for d, t in (m.get("traces") or {}).items():
        rows.append((f"{d} trace", t.get("given") if isinstance(t, dict) else t))
    core = m.get("core") or {}
    for k, v in core.items():
        rows.append((f"core {k}", v))
    nodes = m.get("nodes") or {}
    node_rows = "".join(
        f"<tr><td class='l'>{esc(n)}</td><td class='l'>{esc(v.get('role'))}</td><td>{esc(v.get('cpus'))}</td>"
        f"<td>{(v.get('memory_bytes') or 0) / 2**20:.0f}</td><td>{esc(v.get('speed', 1))}</td>"
        f"<td class='l'>{esc((m.get('addresses') or {}).get(n, ''))}</td></tr>" for n, v in nodes.items())
    toml = (run_dir / "experiment.toml").read_text() if (run_dir / "experiment.toml").exists() else "(experiment.toml missing)"
    kinds: dict[tuple, list[str]] = {}
    for n, v in nodes.items():
        kinds.setdefault((v.get("role"), v.get("cpus"), v.get("memory_bytes"), v.get("speed", 1)), []).append(n)
    shapes = ", ".join(f"{len(names)} {role} node{'s' if len(names) > 1 else ''} of {cpus} CPUs, {(mem or 0) / 2**20:.0f} MiB"
                       + (f", speed {speed}" if speed != 1 else "") for (role, cpus, mem, speed), names in kinds.items())
    table = ("<table><tr><th class='l'>node</th><th class='l'>role</th><th>CPUs</th><th>memory MiB</th><th>speed</th>"
             "<th class='l'>address</th></tr>" + node_rows + "</table>")
    return ("<section id='configuration'><h2>Configuration</h2>" + _kv(rows) + _long(table, len(nodes), shapes)
            + f"<details><summary>the experiment file</summary><pre>{esc(toml)}</pre></details></section>")


LONG = 12  # a table of more rows (a node or an endpoint each) is folded under its one-line summary


def _long(table: str, rows: int, summary: str, bad: bool = False) -> str:
    """A table of a row per node or endpoint: as it is for a few, folded under its summary for many (100 UEs);
    open, its summary in red, when a row failed."""
    if rows <= LONG:
        return table
    return (f"<details{' open' if bad else ''}><summary class='{'bad' if bad else ''}'>{esc(summary)} (the {rows} rows)"
            f"</summary>{table}</details>")


def _health(m: dict, v: dict, summary: dict) -> str:
    out = ["<section id='health'><h2>Health</h2>"]
    teardown = m.get("teardown") or {}
    ok = m.get("status") == "complete" and teardown.get("complete", False)
    out.append(f"<p>run <span class='{'ok' if ok else 'bad'}'>{esc(m.get('status', '?'))}</span>; teardown "
               + ("complete" if teardown.get("complete") else f"<span class='bad'>incomplete: {esc(teardown.get('failures'))}</span>")
               + (f"; error: <span class='bad'>{esc(m['error'])}</span>" if m.get("error") else "") + "</p>")
    out.append(f"<p>{summary.get('answered', 0)} of {summary.get('requests', 0)} measured requests answered "
               f"({summary.get('timeouts', 0)} timeouts, {summary.get('early_drops', 0)} dropped early, "
               f"{summary.get('dropped', 0)} never reached a server)</p>")
    rtt = v.get("core_rtt") or []
    if rtt:
        failed = sum(not r["ok"] for r in rtt)
        out.append(_long("<table><tr><th class='l'>core RTT</th><th>plan ms</th><th>lower quartile ms</th><th>median ms</th>"
                   "<th>tolerance ms</th><th class='l'>check</th></tr>" + "".join(
                       f"<tr><td class='l'>{esc(r['from'])} → {esc(r['to'])}</td><td>{r['expected_rtt_ms']:g}</td>"
                       f"<td>{r['p25_rtt_ms']:.2f}</td><td>{r['median_rtt_ms']:.2f}</td><td>{r['tolerance_ms']:g}</td>"
                       f"<td class='l {'ok' if r['ok'] else 'bad'}'>{'ok' if r['ok'] else 'FAILED'}</td></tr>" for r in rtt)
                   + "</table>", len(rtt), f"core RTT checks: {len(rtt) - failed} of {len(rtt)} ok", failed > 0))
    once = v.get("shaped_once") or []
    if once:
        good = sum(bool(r["ok"]) for r in once)
        out.append(_long("<table><tr><th class='l'>shaped once</th><th>pings</th><th>entered its uplink</th>"
                   "<th>entered its downlink</th><th class='l'>check</th></tr>" + "".join(
                       f"<tr><td class='l'>{esc(r['endpoint'])}</td><td>{r['pings']}</td>"
                       f"<td>{esc(r.get(r['endpoint'] + '.uplink_packets'))}x</td>"
                       f"<td>{esc(r.get(r['endpoint'] + '.downlink_packets'))}x</td>"
                       f"<td class='l {'ok' if r['ok'] else 'bad'}'>{'once' if r['ok'] else 'NOT once'}</td></tr>" for r in once)
                   + "</table>", len(once), f"shaped once: {good} of {len(once)} endpoints", good < len(once)))
    leaks = v.get("no_leaks")
    if leaks:
        out.append(f"<p>routes out of the run's namespaces: <span class='{'ok' if leaks.get('ok') else 'bad'}'>"
                   f"{'none' if leaks.get('ok') else 'FOUND'}</span></p>")
    out.append(_servers(m))
    if summary.get("server_too_slow"):
        out.append(f"<p class='bad'>the server was too slow for the offered load: {esc(summary['server_too_slow'])}</p>")
    return "".join(out) + "</section>"


PER_ENDPOINT = 4  # more endpoints than this: their links drawn together (sums, the median and worst queue)
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]


def _servers(m: dict) -> str:
    """What served each app (model, weights: random ones are a warning) and its calibrated
    service time where the run calibrated it (the load was stated as utilisation)."""
    w = m.get("workload") or {}
    servers = w.get("servers") or ({"": w["server"]} if w.get("server") else {})
    if not servers:
        return ""
    cal = (m.get("calibration") or {}).get("apps") or {}
    rows = []
    for app, s in servers.items():
        weights = str(s.get("weights", ""))
        random = weights.startswith("random")
        c = cal.get(app) or {}
        service = c.get("service_ms") or {}
        rows.append(f"<tr><td class='l'>{esc(app or s.get('app'))}</td><td class='l'>{esc(s.get('model'))}</td>"
                    f"<td class='l {'warn' if random else ''}'>{esc(weights)}"
                    + (" — the latency is the model's; its answers are not meaningful" if random else "") + "</td>"
                    f"<td>{'' if not service else format(service.get('median', 0), '.1f')}</td>"
                    f"<td>{'' if not c.get('capacity_rps') else format(c['capacity_rps'], '.1f')}</td>"
                    f"<td class='l'>{esc(c.get('source', ''))}</td></tr>")
    return ("<table><tr><th class='l'>server</th><th class='l'>model</th><th class='l'>weights</th>"
            "<th>calibrated service ms (median)</th><th>capacity /s</th><th class='l'>calibration</th></tr>"
            + "".join(rows) + "</table>")


def _time_series(run_dir: Path, df: pd.DataFrame, summary: dict, manifest: dict, bin_s: float) -> str:
    tl = timeline.of_requests(df)
    if tl is None:
        return "<section id='time-series'><h2>Time series</h2><p>no requests</p></section>"
    tl = timeline.Timeline(tl.origin_ns, tl.warmups, tl.workload_end_s, events.lines(run_dir, tl.origin_ns))
    endpoints = sorted(df["endpoint"].unique())
    links = {ep: {d: timeline.link_bins(run_dir / "links" / f"{ep}.{d}.log", tl, bin_s) for d in ("uplink", "downlink")}
             for ep in endpoints}
    together = len(endpoints) > PER_ENDPOINT
    shared = bool(summary.get("cell"))  # as plots.links_together is told
    own: dict[tuple[str, str], pd.DataFrame] = {(ep, d): b for ep, per in links.items() for d, b in per.items()
                                                if b is not None and not b.empty}
    directions = [d for d in ("uplink", "downlink") if any(k[1] == d for k in own)]
    summed = {d: timeline.links_together(links, d, shared) for d in directions} if together else {}
    nodes = timeline.node_samples(run_dir / "nodes.csv", tl)
    from continuum.edge.registry import SYSTEMS

    systems = [p for s in SYSTEMS.values() for p in s.time_series(run_dir, df, tl)]
    rows = (["latency ms (log)"] + [f"{d} Mbit/s" for d in directions] + (["queue delay ms"] if directions else [])
            + (["node CPU cores"] if nodes is not None else []) + [p.title for p in systems])
    fig = make_subplots(rows=len(rows), cols=1, shared_xaxes=True, vertical_spacing=0.03, subplot_titles=rows)
    apps = list(dict.fromkeys(df["app"].dropna())) if "app" in df else []
    app_colour = {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(apps)}
    thinned, big = _latency(fig, df, tl, app_colour)
    r = 2
    for d in directions:
        t = summed.get(d)
        if together:
            if t is not None:
                fig.add_trace(go.Scatter(x=t.index, y=t["capacity_mbps"], mode="lines", line={"color": "#999", "width": 1},
                                         name=f"{d} capacity" + (" (the cell's)" if shared else f", {t.attrs['links']} links summed"),
                                         legendgroup=d), row=r, col=1)
                fig.add_trace(go.Scatter(x=t.index, y=t["delivered_mbps"], mode="lines", legendgroup=d,
                                         name=f"{d} delivered, {t.attrs['links']} links summed"), row=r, col=1)
        else:
            for (ep, dd), b in own.items():
                if dd != d:
                    continue
                fig.add_trace(go.Scatter(x=b["t_s"], y=b["capacity_mbps"], mode="lines", name=f"{ep} {d} capacity",
                                         line={"color": "#999", "width": 1}, legendgroup=d), row=r, col=1)
                fig.add_trace(go.Scatter(x=b["t_s"], y=b["delivered_mbps"], mode="lines", name=f"{ep} {d} delivered",
                                         legendgroup=d), row=r, col=1)
        drawn = [t] if t is not None else [b for (_, dd), b in own.items() if dd == d]
        cap = max((float(x["capacity_mbps"].max()) for x in drawn), default=0.0)
        dlv = max((float(x["delivered_mbps"].max()) for x in drawn), default=0.0)
        if 0 < dlv < 0.1 * cap:  # traffic far below the capacity (64 UEs' 20 of 770 Mbit/s): a log axis shows both
            fig.update_yaxes(type="log", title_text="Mbit/s (log)", row=r, col=1)
        r += 1
    if directions:
        for d in directions:
            if together:
                t = summed.get(d)
                if t is not None:
                    fig.add_trace(go.Scatter(x=t.index, y=t["queue_median_ms"], mode="lines", name=f"{d} queue delay: median link",
                                             legendgroup="queue"), row=r, col=1)
                    fig.add_trace(go.Scatter(x=t.index, y=t["queue_max_ms"], mode="lines", name=f"{d} queue delay: worst link",
                                             line={"dash": "dot", "width": 1}, legendgroup="queue"), row=r, col=1)
            else:
                for (ep, dd), b in own.items():
                    if dd == d:
                        fig.add_trace(go.Scatter(x=b["t_s"], y=b["queue_delay_ms"], mode="lines",
                                                 name=f"{ep} {d} queue delay", legendgroup="queue"), row=r, col=1)
        r += 1
    if nodes is not None:
        _node_cpu(fig, nodes, manifest.get("nodes") or {}, r, bin_s)
        r += 1
    for panel in systems:
        for i, line in enumerate(panel.lines):
            shape = {"shape": "hv"} if line.kind == "steps" else {}
            colour = app_colour.get(line.app or "", PALETTE[(i + len(apps)) % len(PALETTE)])  # an app's colour as in the latency row
            fig.add_trace(go.Scatter(x=np.asarray(line.x), y=np.asarray(line.y), name=line.name, legendgroup=panel.title,
                                     mode="markers" if line.kind == "markers" else "lines",
                                     marker={"size": 4, "color": colour}, line={**shape, "color": colour}), row=r, col=1)
        if panel.log:
            fig.update_yaxes(type="log", row=r, col=1)
        r += 1
    for w0, w1 in tl.warmups:
        fig.add_vrect(x0=w0, x1=w1, fillcolor="#bbb", opacity=0.25, line_width=0, row="all", col=1)
    for at, label in tl.events:
        fig.add_vline(x=at, line={"color": "#c62828", "dash": "dot", "width": 1}, row="all", col=1)
        fig.add_annotation(x=at, y=1, yref="paper", text=label, showarrow=False, font={"size": 9, "color": "#c62828"},
                           textangle=-90, xanchor="left", yanchor="top")
    fig.update_xaxes(title_text="s since the first measured request", row=len(rows), col=1)
    # the axis starts where the workload does (the links and nodes were sampled from before: zoom out to see it)
    start = min([a for a, _ in tl.warmups] + [0.0])
    fig.update_xaxes(range=[start - 1, tl.workload_end_s + 1])
    fig.update_layout(height=240 * len(rows), margin={"t": 40, "b": 40, "l": 60, "r": 20},
                      legend={"orientation": "v", "font": {"size": 10}, "groupclick": "toggleitem"})
    answered = int((df["status"] == "ok").sum())
    note = ((f"<p class='note'>{answered} answered requests, the warm-up's included" + (f": at most {MAX_POINTS} of them per series, evenly spaced "
             "(requests.csv holds every one)" if thinned else "") + "; the end-to-end latency drawn, its parts a click on "
             "the legend away</p>") if big else "")
    grouped = (f"<p class='note'>{len(endpoints)} endpoints: their links are drawn together (delivery summed; capacity "
               + ("the cell's, which they share" if shared else "summed") + "; the median and the worst link's queueing delay "
               "per bin); each link's own log is in links/.</p>") if together else ""
    return ("<section id='time-series'><h2>Time series</h2><p class='note'>One time axis: seconds since the first "
            "measured request, from the workload's start (zoom out for what came before); grey: warm-up (not measured); "
            f"red dotted: timeline changes. Links in {bin_s:g} s bins. Click a legend entry to hide or show its series.</p>"
            + note + grouped + figure_html(fig, "time-series") + "</section>")


def _latency(fig: go.Figure, df: pd.DataFrame, tl: timeline.Timeline, app_colour: dict[str, str]) -> tuple[bool, bool]:
    """Row 1: each answered request's latency parts when it was drawn; with several apps the
    end-to-end latency in a colour per app (their parts hidden until clicked in the legend).
    (whether a series was thinned for display, whether only the end-to-end latency is drawn at first)."""
    answered = df[df["status"] == "ok"]
    several = "app" in df and df["app"].nunique() > 1
    groups = list(answered.groupby("app", sort=False)) if several else [("", answered)]
    # a big run: only the end-to-end points drawn at first (every drawn point costs the page's opening time:
    # 64 UEs' 7,680 requests' four parts took 3.9 s to open here, their end-to-end alone 2.4 s)
    thinned, big = False, 4 * len(answered) > MAX_POINTS
    for i, (app, g) in enumerate(groups):
        if len(g) > MAX_POINTS:
            g, thinned = g.iloc[np.linspace(0, len(g) - 1, MAX_POINTS).astype(int)], True
        t = tl.seconds(g["t_drawn"])
        for col in ("e2e_ms", "uplink_ms", "server_ms", "downlink_ms"):
            colour = app_colour.get(str(app), PALETTE[i % len(PALETTE)]) if several else COLOURS[col]
            part = METRICS[col].strip()
            fig.add_trace(go.Scatter(x=t, y=g[col], mode="markers", name=f"{app}: {part}" if several else part,
                                     legendgroup=f"latency {app}", visible=True if col == "e2e_ms" or not (several or big) else "legendonly",
                                     marker={"size": 4 if col == "e2e_ms" else 3, "color": colour,
                                             "symbol": {"e2e_ms": "circle", "uplink_ms": "triangle-up", "server_ms": "square",
                                                        "downlink_ms": "triangle-down"}[col] if several else "circle"},
                                     customdata=np.stack([g["endpoint"], g["request_id"]], axis=-1),
                                     hovertemplate="%{customdata[0]} %{customdata[1]}<br>%{y:.2f} ms at %{x:.2f} s"),
                          row=1, col=1)
    fig.update_yaxes(type="log", title_text="ms (log)", row=1, col=1)
    return thinned, big


def _node_cpu(fig: go.Figure, nodes: pd.DataFrame, roles: dict, row: int, bin_s: float) -> None:
    """Each node's CPU; with many nodes the endpoints as two lines (the median endpoint's and the busiest's)."""
    endpoints = timeline.endpoint_nodes(list(nodes["node"].unique()), roles)
    for name, g in nodes.groupby("node"):
        if name not in endpoints:
            fig.add_trace(go.Scatter(x=g["t_s"], y=g["cpu_cores"], mode="lines", name=f"{name} CPU", legendgroup="cpu"),
                          row=row, col=1)
    if endpoints:
        # each node is sampled on its own clock: put the samples in common bins before taking the median across nodes
        e = nodes[nodes["node"].isin(endpoints)].assign(t_s=lambda x: (x["t_s"] / bin_s).round() * bin_s) \
            .pivot_table(index="t_s", columns="node", values="cpu_cores", aggfunc="mean")
        fig.add_trace(go.Scatter(x=e.index, y=e.median(axis=1), mode="lines", line={"color": "#777"}, legendgroup="cpu",
                                 name=f"endpoints' CPU ({len(endpoints)}): median"), row=row, col=1)
        fig.add_trace(go.Scatter(x=e.index, y=e.max(axis=1), mode="lines", line={"color": "#777", "dash": "dot", "width": 1},
                                 legendgroup="cpu", name=f"endpoints' CPU ({len(endpoints)}): busiest"), row=row, col=1)


CDF_POINTS = 2000  # steps drawn per CDF; more requests: every n-th of the sorted values, the first and the last kept


def cdf(sorted_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A sorted sample's empirical CDF as drawn: each value and the share at or below it,
    at most CDF_POINTS of them (116,000 requests' six CDFs were 5 MB of a page's 8.5)."""
    n = len(sorted_x)
    at = np.linspace(0, n - 1, CDF_POINTS).round().astype(int) if n > CDF_POINTS else np.arange(n)
    return sorted_x[at], (at + 1) / n


def _distributions(df: pd.DataFrame, summary: dict) -> str:
    answered = df[(df["phase"] == "measure") & (df["status"] == "ok")]
    fig = go.Figure()
    for col, label in METRICS.items():
        x = np.sort(answered[col].dropna().astype(float).to_numpy())
        if not len(x):
            continue
        x, y = cdf(x)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=label.strip(),
                                 line={"shape": "hv", "color": COLOURS[col]},
                                 hovertemplate="%{x:.2f} ms: %{y:.1%} at or below"))
    fig.update_xaxes(type="log", title_text="ms (log)")
    fig.update_yaxes(title_text="share of answered requests", range=[0, 1])
    fig.update_layout(height=420, margin={"t": 30, "b": 40, "l": 60, "r": 20})
    head = ("<table><tr><th class='l'>metric</th><th>count</th><th>median ms</th><th>P95 ms</th><th>P99 ms</th>"
            "<th>max ms</th><th class='l'>definition</th></tr>")
    rows = []
    for col, label in METRICS.items():
        s = (summary.get("metrics") or {}).get(col) or {}
        if not s.get("count"):
            continue
        cells = "".join(f"<td data-metric='{col}' data-stat='{k}'>{s[k]:.2f}</td>" for k in ("median", "p95", "p99", "max"))
        rows.append(f"<tr><td class='l'>{esc(label.strip())}</td><td data-metric='{col}' data-stat='count'>{s['count']}</td>"
                    f"{cells}<td class='l note'>{esc(DEFINITIONS[col])}</td></tr>")
    return ("<section id='distributions'><h2>Distributions</h2><p class='note'>Measured, answered requests. Each "
            "percentile is of its own metric: percentiles are never summed." + (
                f" The CDFs are drawn at {CDF_POINTS} evenly spaced ranks of their {len(answered)} requests (the table's "
                "numbers are of all of them)." if len(answered) > CDF_POINTS else "")
            + "</p>" + head + "".join(rows) + "</table>"
            + figure_html(fig, "distributions") + "</section>")


def _apps(summary: dict) -> str:
    apps = summary.get("apps") or {}
    if not apps:
        return "<section id='apps'><h2>Apps</h2><p class='note'>one app, no SLO set</p></section>"
    rows = []
    for name, a in apps.items():
        slo = a.get("slo_ms")
        met = a.get("slo_met")
        rows.append(f"<tr><td class='l'>{esc(name)}</td><td>{a.get('answered', '')}</td><td>{'' if slo is None else f'{slo:g}'}</td>"
                    f"<td data-app='{esc(name)}' data-stat='slo_met'>{'' if met is None else f'{met:.1%}'}</td></tr>")
    return ("<section id='apps'><h2>Apps</h2><table><tr><th class='l'>app</th><th>answered</th><th>SLO ms</th>"
            "<th>SLO met</th></tr>" + "".join(rows) + "</table></section>")


def _manifest(m: dict) -> str:
    versions = m.get("versions") or {}
    return ("<section id='manifest'><h2>Manifest</h2>" + _kv(list(versions.items()))
            + f"<details><summary>manifest.json</summary><pre>{esc(json.dumps(m, indent=2))}</pre></details></section>")


def _kv(rows: list[tuple[str, object]]) -> str:
    return "<table>" + "".join(f"<tr><th class='l'>{esc(k)}</th><td class='l'>{esc(v)}</td></tr>" for k, v in rows
                               if v not in (None, "")) + "</table>"


def _json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def esc(x: object) -> str:
    """Text for a page, in an element or an attribute (None: nothing); the experiment pages use it too."""
    return html.escape("" if x is None else str(x), quote=True)


def write_comparison(folders: list[Path], out: Path) -> Path:
    """OUT/report.html comparing runs: each run against the first, as `continuum compare` judges them
    (medians, P99s, their ratios, the KS distance, a verdict per metric), the CDFs overlaid per
    metric and the end-to-end latency over each run's own time axis."""
    from continuum.results import compare

    sides = [compare.load(f) for f in folders]
    base = sides[0]
    results = [compare.compare(base, s) for s in sides[1:]]
    names = [f"{chr(65 + i)}: {s.folder.name}" for i, s in enumerate(sides)]
    body = [f"<h1>{esc(base.manifest.get('experiment', '?'))}: {len(sides)} runs compared</h1>",
            "<nav>" + "".join(f"<a href='#{s}'>{s}</a>" for s in ("runs", "differences", "distributions", "over-time")) + "</nav>",
            "<section id='runs'><h2>Runs</h2><table><tr><th class='l'>run</th><th class='l'>folder</th><th class='l'>what</th>"
            "<th>answered</th></tr>" + "".join(
                f"<tr><td class='l'>{esc(n[0])}</td><td class='l'>{esc(s.folder)}</td><td class='l'>"
                f"{esc(compare.side_name(compare._describe(s), compare._describe(base if s is not base else sides[-1])))}</td>"
                f"<td>{int((s.requests['status'] == 'ok').sum())} of {len(s.requests)}</td></tr>" for n, s in zip(names, sides))
            + "</table></section>"]
    rows = []
    for n, c in zip(names[1:], results):
        for r in c["metrics"]:
            if r["group"] != "all":
                continue
            f = lambda v, fmt="{:.2f}": "-" if v is None or (isinstance(v, float) and np.isnan(v)) else fmt.format(v)  # noqa: E731
            rows.append(f"<tr><td class='l'>A → {esc(n[0])}</td><td class='l'>{esc(r['label'])}</td>"
                        f"<td data-run='{n[0]}' data-metric='{r['metric']}' data-stat='median_a'>{f(r['median_a'])}</td>"
                        f"<td data-run='{n[0]}' data-metric='{r['metric']}' data-stat='median_b'>{f(r['median_b'])}</td>"
                        f"<td>{f(r['median_ratio'])}</td><td>{f(r['p99_a'])}</td><td>{f(r['p99_b'])}</td>"
                        f"<td>{f(r['p99_ratio'])}</td>"
                        f"<td data-run='{n[0]}' data-metric='{r['metric']}' data-stat='ks'>{f(r['ks'], '{:.3f}')}</td>"
                        f"<td class='l {'ok' if r['verdict'] == 'agrees' else 'bad' if r['verdict'] == 'diverges' else ''}'>"
                        f"{esc(r['verdict'])}</td></tr>")
    tol = results[0]["tolerance"] if results else {"median_ratio": 0.1, "ks": 0.2}
    body.append("<section id='differences'><h2>Differences</h2><p class='note'>Each run against A. A metric agrees when "
                f"its median is within ±{tol['median_ratio']:.0%} of A's and the two-sample Kolmogorov-Smirnov distance "
                f"(the largest gap between the two CDFs) is at most {tol['ks']:g}. Ratios are run / A; percentiles "
                "are compared, never summed.</p><table><tr><th class='l'>runs</th><th class='l'>metric</th>"
                "<th>median A ms</th><th>median ms</th><th>ratio</th><th>P99 A ms</th><th>P99 ms</th><th>ratio</th>"
                "<th>KS</th><th class='l'>verdict</th></tr>" + "".join(rows) + "</table></section>")
    metrics = [m for m in METRICS if any(s.requests[m].notna().any() for s in sides if m in s.requests)]
    fig = make_subplots(rows=(len(metrics) + 2) // 3, cols=3, subplot_titles=[METRICS[m].strip() for m in metrics])
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    for k, col in enumerate(metrics):
        for i, (n, s) in enumerate(zip(names, sides)):
            x = np.sort(s.requests.loc[s.requests["status"] == "ok", col].dropna().astype(float).to_numpy())
            if not len(x):
                continue
            x, y = cdf(x)
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=n,
                                     legendgroup=n, showlegend=k == 0, line={"shape": "hv", "color": palette[i % 6]},
                                     hovertemplate="%{x:.2f} ms: %{y:.1%}"), row=k // 3 + 1, col=k % 3 + 1)
        fig.update_xaxes(type="log", row=k // 3 + 1, col=k % 3 + 1)
    fig.update_layout(height=330 * ((len(metrics) + 2) // 3), margin={"t": 40, "b": 30, "l": 50, "r": 20})
    body.append("<section id='distributions'><h2>Distributions</h2><p class='note'>Answered, measured requests; "
                "x: ms (log)</p>" + figure_html(fig, "comparison-cdfs") + "</section>")
    over = go.Figure()
    for i, (n, s) in enumerate(zip(names, sides)):
        ok = s.requests[s.requests["status"] == "ok"]
        if not len(ok):
            continue
        t = (ok["t_drawn"] - ok["t_drawn"].min()) / 1e9
        over.add_trace(go.Scatter(x=t, y=ok["e2e_ms"], mode="markers", name=n, marker={"size": 4, "color": palette[i % 6]}))
    over.update_yaxes(type="log", title_text="end-to-end ms (log)")
    over.update_xaxes(title_text="s since each run's first measured request")
    over.update_layout(height=380, margin={"t": 20, "b": 40, "l": 60, "r": 20})
    body.append("<section id='over-time'><h2>Over time</h2>" + figure_html(over, "comparison-over-time") + "</section>")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    path.write_text(page(f"{base.manifest.get('experiment', '?')}: runs compared", body))
    return path
