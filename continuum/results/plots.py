"""The run's PNG plots: end-to-end latency per request over time, where the
time of typical and slow requests goes, each cellular link's capacity vs
delivered throughput vs queueing delay, node CPU/memory against their limits,
and the sending rate under congestion control. Every time axis is the run's
one timeline (seconds since the first measured request; warm-up shaded at
negative times, the wind-down after the last answer hatched), so the figures
of one run can be laid side by side."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from continuum.config import presets  # noqa: E402
from continuum.results import events, timeline  # noqa: E402
from continuum.results.timeline import Timeline  # noqa: E402

PARTS = [("preprocessing_ms", "pre-processing (M3)"), ("uplink_ms", "uplink (M1)"),
         ("server_ms", "server (M4)"), ("downlink_ms", "downlink (M2)")]
TIME_LABEL = "time since the first measured request (s)"


def latency_axis(ax, low: float, high: float) -> None:
    """A CDF's latency axis: log where the curves span more than 30x (a 1.2 Gbit/s link's 2 ms beside an LTE
    trace's 600: both stay readable), plain otherwise; labelled so."""
    if low > 0 and high / low > 30:
        ax.set_xscale("log")
    ax.set_xlabel("ms" + (" (log)" if ax.get_xscale() == "log" else ""))


def shade(ax, tl: Timeline, xlim: tuple[float, float], legend: bool = True) -> None:
    """The run's one x range, warm-up and wind-down, the same on every time axis."""
    x0, x1 = xlim
    for i, (a, b) in enumerate(tl.warmups):
        ax.axvspan(a, b, color="0.88", zorder=0, label="warm-up (not measured)" if legend and i == 0 else None)
    if tl.workload_end_s < x1:
        ax.axvspan(tl.workload_end_s, x1, facecolor="none", edgecolor="0.75", hatch="//", lw=0, zorder=0,
                   label="after the last answer (servers stopping)" if legend else None)
    last, low = None, False
    for i, (t, label) in enumerate(sorted(tl.events)):  # the timeline's changes, labelled along the axes' top
        ax.axvline(t, color="tab:purple", ls="--", lw=1, zorder=1,
                   label="a [[timeline]] change (as applied)" if legend and i == 0 else None)
        # a change close to the one before is labelled at the bottom, so the two labels do not overlap
        low = not low if last is not None and t - last < 0.03 * (x1 - x0) else False
        last = t
        ax.annotate(label, (t, 0.0 if low else 1.0), xycoords=("data", "axes fraction"), xytext=(2, 2 if low else -2),
                    textcoords="offset points", rotation=90, va="bottom" if low else "top", ha="left", fontsize=7,
                    color="tab:purple")
    ax.set_xlim(x0, x1)


def latency_over_time(df: pd.DataFrame, summary: dict, tl: Timeline, xlim: tuple[float, float], out: Path) -> None:
    """Each answered request's end-to-end latency when it was drawn; unanswered and early-dropped
    ones marked at the top. With several apps, a colour per app (its endpoints thin lines of it),
    so that many endpoints stay readable; a log axis when the latencies span decades."""
    fig, ax = plt.subplots(figsize=(9, 4.4))
    ok_all = df[df["status"] == "ok"]
    lat = ok_all["e2e_ms"].astype(float)
    top = float(lat.max()) if len(lat) else 1.0
    log = len(lat) > 1 and float(lat.min()) > 0 and top / float(lat.min()) > 30
    mark_at = top * (1.6 if log else 1.05)
    several = "app" in df and df["app"].nunique() > 1
    # several apps, or many endpoints of one: a colour per app (its endpoints thin lines of it), one legend entry each
    by_app = several or df["endpoint"].nunique() > timeline.MANY_NODES
    groups = df.groupby("app", sort=False) if several else [("all", df)] if by_app else [(None, df)]
    for i, (app, g) in enumerate(groups):
        colour = f"C{i}" if by_app else None
        for k, (ep, e) in enumerate(g.groupby("endpoint")):
            ok = e[e["status"] == "ok"]
            label = (f"{app if several else 'all'} ({g['endpoint'].nunique()} endpoints)" if k == 0 else None) if by_app else str(ep)
            ax.plot(tl.seconds(ok["t_drawn"]), ok["e2e_ms"], ".-", ms=2.5 if by_app else 3, lw=0.4 if by_app else 0.6,
                    color=colour, alpha=0.8 if by_app else 1.0, label=label)
        lost = g[~g["status"].isin(["ok", "early_drop"])]
        who = app if by_app else "all endpoints"
        if len(lost):
            ax.plot(tl.seconds(lost["t_drawn"]), [mark_at] * len(lost), "x", color=colour or "r", ms=4,
                    label=f"{who}: no answer (drawn at the top)")
        early = g[g["status"] == "early_drop"]
        if len(early):
            ax.plot(tl.seconds(early["t_drawn"]), [mark_at * (0.9 if log else 0.97)] * len(early), "|", color=colour or "m",
                    label=f"{who}: dropped early at the edge (at the top)")
    e2e = summary["metrics"]["e2e_ms"]
    if e2e.get("count"):
        every = ", all apps" if several else ""
        ax.axhline(e2e["median"], color="k", ls="--", lw=1, label=f"median {e2e['median']:.1f} ms (measured{every})")
        ax.axhline(e2e["p99"], color="0.3" if by_app else "C3", ls=":" if by_app else "--", lw=1, label=f"P99 {e2e['p99']:.1f} ms (measured{every})")
    if log:
        ax.set_yscale("log")
        ax.set_ylim(float(lat.min()) * 0.7, mark_at * 1.4)
    else:
        ax.set_ylim(0, top * 1.12)
    ax.set_xlabel(TIME_LABEL)
    ax.set_ylabel("end-to-end latency (ms" + (", log)" if log else ")"))
    ax.set_title(f"End-to-end latency per request: {summary['answered']} of {summary['requests']} measured answered")
    ax.grid(alpha=0.3, which="both" if log else "major")
    shade(ax, tl, xlim)
    ax.legend(fontsize=7, loc="best", ncol=2 if by_app or df["endpoint"].nunique() > 4 else 1, framealpha=0.85)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def decomposition(summary: dict, out: Path) -> bool:
    d = summary.get("decomposition")
    if not d:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    names = (("around_median", "requests around the median\n(e2e P45-P55)"), ("slowest_1pct", "slowest 1%\n(e2e >= P99)"))
    for x, (key, _label) in enumerate(names):
        g = d[key]
        bottom = 0.0
        for i, (col, part) in enumerate(PARTS):
            v = g["mean_parts_ms"][col]
            ax.bar(x, v, bottom=bottom, color=f"C{i}", label=part if x == 0 else None, width=0.55)
            bottom += v
        ax.text(x, bottom, f"{g['mean_e2e_ms']:.1f} ms\n(n={g['requests']})", ha="center", va="bottom", fontsize=8)
    ax.set_xticks([0, 1], [label for _, label in names])
    ax.set_ylim(0, max(d[k]["mean_e2e_ms"] for k, _ in names) * 1.2)
    ax.set_ylabel("mean latency of these requests (ms)")
    ax.set_title("Where the time goes: each part's mean over the same requests\n(parts add up to their mean end-to-end latency)",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def link(endpoint: str, bins: dict[str, pd.DataFrame | None], tl: Timeline, xlim: tuple[float, float], out: Path,
         bin_s: float, emulator: str = "mahimahi-link", light: bool = False, access: str | None = None) -> bool:
    """Each direction on its own scale: a log scale where the traffic is far
    below the capacity (a 0.01 Mbit/s downlink under a 48 Mbit/s trace).
    With workload-aware replay (light) the delay is the light stage's and the queue's together.
    With the access procedure (`access`, a preset's name) its radio stage comes after the link's
    log, so the figure says what it adds that the curves do not show."""
    if all(b is None or b.empty for b in bins.values()):
        return False
    fig, axes = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for ax, (d, b) in zip(axes, bins.items()):
        if b is None or b.empty:
            ax.set_title(f"{d}: no log")
            continue
        cap, dlv = b["capacity_mbps"], b["delivered_mbps"]
        log = dlv.max() < 0.1 * cap.max() and (dlv > 0).any()
        ax.plot(b["t_s"], cap.where(cap > 0) if log else cap, color="0.5", lw=1, label="trace capacity")
        # on a log scale an empty bin is a gap: sparse traffic (a request a second in 0.5 s
        # bins) would leave lone points a line cannot draw, so each bin gets a marker
        ax.plot(b["t_s"], dlv.where(dlv > 0) if log else dlv, color="C0", lw=1, label="delivered",
                **({"marker": ".", "ms": 3} if log else {}))
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(f"{d} Mbit/s" + (" (log scale)" if log else ""))
        ax2 = ax.twinx()
        what = "delay in the link: light stage + queue" if light else "queueing delay"
        ax2.plot(b["t_s"], b["queue_delay_ms"], color="C3", lw=1, label=f"{what} (mean of departures)")
        ax2.set_ylabel("link delay (ms)" if light else "queueing delay (ms)", color="C3")  # the legend says what it holds
        ax2.set_ylim(bottom=0)
        drops = int(b["drops"].sum())
        ax.set_title(f"{d}: {dlv.mean():.2f} Mbit/s delivered on average of {cap.mean():.1f} Mbit/s capacity"
                     + (f", {drops} packets dropped" if drops else ""), fontsize=9)
        ax.grid(alpha=0.3)
        shade(ax, tl, xlim)
        lines = [x for x in ax.get_lines() + ax2.get_lines() + list(ax.patches) if x.get_label() and not x.get_label().startswith("_")]
        ax.legend(lines, [x.get_label() for x in lines], fontsize=7, loc="upper left", bbox_to_anchor=(1.1, 1))
    axes[-1].set_xlabel(TIME_LABEL)
    by = "upstream mm-link, patched" if emulator == "mahimahi" else emulator + (", workload-aware replay" if light else "")
    fig.suptitle(f"{endpoint}: cellular link ({by}), {bin_s:g} s bins (partial bins left out)")
    if access in presets.ACCESS:
        fig.text(0.01, 0.005, f"Not in these curves: the access procedure's radio stage after the queue ({access}: "
                              f"{presets.ACCESS[access].summary()}).", fontsize=7, color="0.3")
        fig.tight_layout(rect=(0, 0.03, 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


MANY_LINKS = 12  # more endpoints than this: one figure of all their links together, not a figure each


def links_together(links: dict[str, dict[str, pd.DataFrame | None]], tl: Timeline, xlim: tuple[float, float], out: Path,
                   bin_s: float, shared_cell: bool = False) -> bool:
    """Many endpoints' links in one figure: per direction the capacity and
    delivery summed over the endpoints, and the spread of their queueing
    delays (the median endpoint's and the worst's per bin). In a shared cell
    every member's log holds the cell's opportunities: the capacity is the
    cell's, not a sum. A figure per
    endpoint was 100 files for 100 UEs, each 0.5 s to draw; their logs stay."""
    fig, axes = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    drawn = False
    for ax, d in zip(axes, ("uplink", "downlink")):
        t = timeline.links_together(links, d, shared_cell)
        if t is None:
            ax.set_title(f"{d}: no log")
            continue
        drawn = True
        n, cap, dlv = t.attrs["links"], t["capacity_mbps"], t["delivered_mbps"]
        log = dlv.max() < 0.1 * cap.max() and (dlv > 0).any()
        ax.plot(cap.index, cap.where(cap > 0) if log else cap, color="0.5", lw=1,
                label="the cell's capacity (shared)" if shared_cell else "trace capacity, summed")
        ax.plot(dlv.index, dlv.where(dlv > 0) if log else dlv, color="C0", lw=1, label="delivered, summed",
                **({"marker": ".", "ms": 2} if log else {}))
        if log:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.set_ylabel(f"{d} Mbit/s, {n} links" + (" (log)" if log else ""))
        ax2 = ax.twinx()
        ax2.plot(t.index, t["queue_median_ms"], color="C3", lw=1, label="queueing delay: median link")
        ax2.plot(t.index, t["queue_max_ms"], color="C3", lw=0.7, ls=":", label="queueing delay: worst link")
        ax2.set_ylabel("queueing delay (ms)", color="C3")
        ax2.set_ylim(bottom=0)
        ax.set_title(f"{d}: {dlv.mean():.2f} Mbit/s delivered on average of {cap.mean():.1f} Mbit/s "
                     + ("the cell's capacity" if shared_cell else "capacity") + f", {n} endpoints together", fontsize=9)
        ax.grid(alpha=0.3)
        shade(ax, tl, xlim)
        lines = [x for x in ax.get_lines() + ax2.get_lines() + list(ax.patches) if x.get_label() and not x.get_label().startswith("_")]
        ax.legend(lines, [x.get_label() for x in lines], fontsize=7, loc="upper left", bbox_to_anchor=(1.1, 1))
    if not drawn:
        plt.close(fig)
        return False
    axes[-1].set_xlabel(TIME_LABEL)
    fig.suptitle(f"{len(links)} endpoints' cellular links together, {bin_s:g} s bins (each link's log in links/)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def srsran_kpis(run_dir: Path, tl: Timeline, xlim: tuple[float, float], out: Path) -> bool:
    """mobile.mode = "srsran": what srsENB measured of the UE each second
    (its JSON report): bit rates, MCS, BLER and channel quality, on the
    requests' time axis. False without a report."""
    from srsran_integration import kpis

    k = kpis.enb_report(run_dir / "srsran" / "enb-report.json")
    if k.empty:
        return False
    t = tl.seconds(k["t_ns"])
    fig, axes = plt.subplots(4, 1, figsize=(9, 9), sharex=True)
    rate, mcs, bler, quality = axes
    for d, c in (("dl", "C0"), ("ul", "C1")):
        name = "downlink" if d == "dl" else "uplink"
        rate.plot(t, k[f"{d}_bitrate"].astype(float) / 1e6, ".-", ms=3, color=c, label=name)
        mcs.plot(t, k[f"{d}_mcs"].astype(float), ".-", ms=3, color=c, label=name)
        bler.plot(t, k[f"{d}_bler"].astype(float) * 100, ".-", ms=3, color=c, label=name)
    rate.set_ylabel("bit rate (Mbit/s)\nat the eNB's MAC")
    mcs.set_ylabel("MCS index")
    mcs.set_ylim(-1, 29)
    bler.set_ylabel("BLER (%)")
    bler.set_ylim(-3, 103)
    quality.plot(t, k["dl_cqi"].astype(float), ".-", ms=3, color="C0", label="downlink CQI (UE's report)")
    quality.set_ylabel("CQI (0-15)")
    quality.set_ylim(-0.5, 15.5)
    q2 = quality.twinx()
    q2.plot(t, k["ul_snr"].astype(float), ".-", ms=3, color="C1", label="uplink SNR (eNB's PUSCH)")
    q2.set_ylabel("uplink SNR (dB)", color="C1")
    for ax in axes:
        ax.grid(alpha=0.3)
        shade(ax, tl, xlim)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.08, 1))
    q2.legend(fontsize=7, loc="lower left", bbox_to_anchor=(1.08, 0))
    axes[-1].set_xlabel(TIME_LABEL)
    fig.suptitle("srsRAN's cell, measured by srsENB each second (its JSON report); the radio is "
                 + _radio(run_dir), fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def _radio(run_dir: Path) -> str:
    man = run_dir / "manifest.json"
    m = (json.loads(man.read_text()).get("mobile") or {}) if man.exists() else {}
    if m.get("radio") == "zmq":
        return "ZMQ (samples over sockets: no channel, no fading)"
    return f"{m.get('radio', '?')}, band {m.get('band', '?')}"


def sending_rate(df: pd.DataFrame, rate_logs: list[Path], tl: Timeline, xlim: tuple[float, float], out: Path) -> bool:
    """Congestion control at work: each endpoint's sending rate (from its rate
    log) over its end-to-end latency. False when no rate was ever changed."""
    logs = [pd.read_csv(p) for p in rate_logs if p.stat().st_size > 0]
    if not logs or not len(df):
        return False
    changes_all = pd.concat(logs)
    fig, ax = plt.subplots(figsize=(9, 4))
    ax2 = ax.twinx()
    for i, (ep, g) in enumerate(df.groupby("endpoint")):
        ok = g[g["status"] == "ok"]
        ax2.plot(tl.seconds(ok["t_drawn"]), ok["e2e_ms"], ".", ms=3, color=f"C{i}", alpha=0.4, label=f"{ep} e2e")
        changes = changes_all[changes_all["endpoint"] == ep].sort_values("t")
        first = g["send_rate"].iloc[0]
        t = [tl.seconds(g["t_drawn"].min()), *tl.seconds(changes["t"]), tl.seconds(g["t_drawn"].max())]
        r = [first, *changes["rate"], changes["rate"].iloc[-1] if len(changes) else first]
        ax.step(t, r, where="post", color=f"C{i}", lw=1.5, label=f"{ep} sending rate")
    ax.set_xlabel(TIME_LABEL)
    ax.set_ylabel("sending rate (requests/s)")
    ax.set_ylim(bottom=0)
    ax2.set_ylabel("end-to-end latency (ms, log scale)")
    ax2.set_yscale("log")
    ax.grid(alpha=0.3)
    shade(ax, tl, xlim)
    lines = ax.get_lines() + ax2.get_lines()
    ax.legend(lines, [x.get_label() for x in lines], fontsize=8, loc="upper left", bbox_to_anchor=(1.1, 1))
    ax.set_title("Application-level congestion control")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def nodes(s: pd.DataFrame | None, limits: dict, tl: Timeline, xlim: tuple[float, float], out: Path) -> bool:
    """CPU and memory per node, each with its limit as a dashed line of its
    colour. With many endpoints (SMEC's 12 UEs) the servers keep a colour
    each and the endpoints are one group of thin grey lines with their limit
    once: a line and a limit per endpoint made a legend longer than the figure."""
    if s is None:
        return False
    fig, (a, b) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True)
    names = list(s.groupby("node").groups)
    endpoints = timeline.endpoint_nodes(names, limits)
    shown_limits: set[tuple[str, float, float]] = set()
    colour_of = {n: f"C{i}" for i, n in enumerate(n for n in names if n not in endpoints)}
    for name, g in s.groupby("node"):
        member = name in endpoints
        first = member and name == endpoints[0]
        colour = "0.55" if member else colour_of[name]
        label = (f"endpoints ({len(endpoints)}), each" if first else None) if member else name
        style = {"color": colour, "lw": 0.7 if member else 1.5, "alpha": 0.7 if member else 1.0}
        a.plot(g["t_s"], g["cpu_cores"], label=label, **style)
        b.plot(g["t_s"], g["memory_bytes"] / 2**20, label=label, **style)
        lim = limits.get(name)
        if not lim:
            continue
        speed = lim.get("speed", 1.0)  # speed < 1: the kernel's quota is cpus x speed
        key = ("endpoints" if member else name, lim["cpus"] * speed, lim["memory_bytes"])
        if key in shown_limits:
            continue  # the endpoints' limit, drawn once for all that share it
        shown_limits.add(key)
        who = "endpoint" if member else name
        each = " each" if member else ""
        a.axhline(lim["cpus"] * speed, color=colour, ls="--", lw=1,
                  label=f"{who} limit {lim['cpus'] * speed:g} cores{each}" + (f" ({lim['cpus']:g} at speed {speed:g})" if speed != 1 else ""))
        b.axhline(lim["memory_bytes"] / 2**20, color=colour, ls="--", lw=1,
                  label=f"{who} limit {lim['memory_bytes'] / 2**20:.0f} MiB{each}")
    a.set_ylabel("CPU (cores)")
    b.set_ylabel("memory (MiB)")
    a.set_ylim(bottom=0)
    b.set_ylim(bottom=0)
    b.set_xlabel(TIME_LABEL)
    a.set_title("Node CPU and memory (cgroup), limits dashed", fontsize=10)
    for ax in (a, b):
        ax.grid(alpha=0.3)
        shade(ax, tl, xlim, legend=ax is a)
    a.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    b.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def node_limits(run_dir: Path) -> dict:
    """Each node's CPU and memory limit, from the manifest (older runs: none)."""
    try:
        return json.loads((run_dir / "manifest.json").read_text()).get("nodes") or {}
    except (OSError, ValueError):
        return {}


def time_range(tl: Timeline, links: list[pd.DataFrame | None], samples: pd.DataFrame | None,
               bin_s: float) -> tuple[float, float]:
    """One x range for every time-series plot of the run: from where the
    workload starts (its first warm-up request) to the latest thing any of
    them shows (the wind-down, the teardown). The verification's pings and
    the set-up before the workload are left out: 20 s of nothing at the
    left of every figure (issue #43); the CSVs and logs keep them."""
    start = min([w[0] for w in tl.warmups] + [0.0])
    ends = [tl.workload_end_s]
    for b in links:
        if b is not None and not b.empty:
            ends.append(float(b["t_s"].max()) + bin_s)
    if samples is not None:
        ends.append(float(samples["t_s"].max()))
    hi = max(ends)
    pad = max(0.01 * (hi - start), 0.5)
    return start - pad, hi + pad


# The figures of the run being plotted, for the forked workers to find (fork: nothing is pickled).
_JOBS: list[Callable[[], list[Path]]] = []


def _render(i: int) -> list[Path]:
    return _JOBS[i]()


def _one(made: bool | None, path: Path) -> list[Path]:
    return [path] if made else []


# A figure made in a worker process beside the others.
PlotJob = Callable[[], list[Path]]


@dataclass(frozen=True)
class Plot:
    """What a figure beyond these (an edge system's) gets: the run, its summary and the one time axis."""

    run_dir: Path
    df: pd.DataFrame
    summary: dict
    tl: Timeline
    xlim: tuple[float, float]
    folder: Path


def _emulator(run_dir: Path) -> tuple[str, bool, str | None]:
    """Which emulator carried the run's links (the manifest's; mahimahi-link where it does not say),
    whether it replayed them workload-aware (a light stage in front of the traces), and the access
    procedure's preset if one ran (its radio stage comes after the link's log)."""
    try:
        m = json.loads((run_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return "mahimahi-link", False, None
    mobile = m.get("mobile") or {}
    access = (m.get("cell") or {}).get("access")
    return (mobile.get("emulator") or {}).get("name", "mahimahi-link"), mobile.get("replay") == "workload-aware", access


def all_plots(run_dir: Path, df: pd.DataFrame, summary: dict, bin_s: float = 0.5,
              more: Callable[[Plot], list[PlotJob]] | None = None) -> list[Path]:
    """Every figure of the run, rendered side by side on the machine's cores:
    matplotlib spends ~0.2-1.5 s per figure here, one core at a time, and the
    results of every run waited for all of them in turn."""
    plots = run_dir / "plots"
    plots.mkdir(exist_ok=True)
    tl = timeline.of_requests(df)
    if tl is None:
        return []
    tl = dataclasses.replace(tl, events=events.lines(run_dir, tl.origin_ns))
    endpoints = sorted(df["endpoint"].unique())
    links = {ep: {d: timeline.link_bins(run_dir / "links" / f"{ep}.{d}.log", tl, bin_s) for d in ("uplink", "downlink")}
             for ep in endpoints}
    samples = timeline.node_samples(run_dir / "nodes.csv", tl)
    xlim = time_range(tl, [b for ep in links.values() for b in ep.values()], samples, bin_s)
    def latency() -> list[Path]:
        latency_over_time(df, summary, tl, xlim, plots / "latency_over_time.png")
        return [plots / "latency_over_time.png"]

    jobs: list[Callable[[], list[Path]]] = [
        latency, lambda: _one(decomposition(summary, plots / "decomposition.png"), plots / "decomposition.png")]
    emulator, light, access = _emulator(run_dir)
    if len(endpoints) > MANY_LINKS:
        shared = bool(summary.get("cell"))
        jobs.append(lambda: _one(links_together(links, tl, xlim, plots / "links.png", bin_s, shared), plots / "links.png"))
    else:
        jobs += [functools.partial(lambda ep: _one(link(ep, links[ep], tl, xlim, plots / f"link_{ep}.png", bin_s, emulator, light, access),
                                                   plots / f"link_{ep}.png"), ep) for ep in endpoints]
    jobs += [lambda: _one(sending_rate(df, sorted((run_dir / "raw").glob("rate-*.csv")), tl, xlim, plots / "sending_rate.png"),
                          plots / "sending_rate.png"),
             lambda: _one(nodes(samples, node_limits(run_dir), tl, xlim, plots / "nodes.png"), plots / "nodes.png")]
    if more is not None:  # the edge systems' figures (continuum/results/report.py)
        jobs += more(Plot(run_dir, df, summary, tl, xlim, plots))
    jobs += [lambda: _one(srsran_kpis(run_dir, tl, xlim, plots / "srsran.png"), plots / "srsran.png"),
             lambda: _one(cell_share(run_dir, tl, xlim, plots / "cell_share.png", bin_s), plots / "cell_share.png")]
    c = summary.get("cell")
    man = run_dir / "manifest.json"
    if c and man.exists():
        cfg = json.loads(man.read_text()).get("cell") or {}
        members = {m["name"]: m for m in cfg.get("members", [])}
        jobs.append(lambda: _one(ran_latency_cdf(df, c, float(cfg.get("offload_one_way_ms", 0.0)), members,
                                                 plots / "ran_latency_cdf.png"), plots / "ran_latency_cdf.png"))
    return _run(jobs)


def _run(jobs: list[Callable[[], list[Path]]]) -> list[Path]:
    """The jobs' figures, in the jobs' order: in forked workers where the
    machine has more than one core for this process, else here."""
    workers = min(len(jobs), len(os.sched_getaffinity(0)), 4)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [path for job in jobs for path in job()]
    global _JOBS
    _JOBS = jobs
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return [path for made in pool.map(_render, range(len(jobs))) for path in made]
    finally:
        _JOBS = []


MANY_MEMBERS = 20  # more UEs in a cell than distinct colours: no legend, their throughput as sum, median and busiest


def member_colours(names: list[str]) -> dict[str, object]:
    """A colour of its own for each of up to 20 series (matplotlib's default cycle repeats after 10)."""
    cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return {n: cmap(i % cmap.N) for i, n in enumerate(names)}


def cell_share(run_dir: Path, tl: Timeline, xlim: tuple[float, float], out: Path, bin_s: float) -> bool:
    """Per cell direction: each UE's share of the resource blocks, and what it
    moved, on the run's time axis (measured: the scheduler's log, the link logs)."""
    from continuum.results import cell

    logs = [lg for d in ("uplink", "downlink") if (lg := cell.read_log(run_dir / "links" / f"cell-{d}.log")) is not None]
    if not logs:
        return False
    panels: list[list[tuple[str | None, str]]] = []
    for lg in logs:  # a share panel per cell (several cells: each one's, its members' blocks while in it)
        every = [(name, f"cell {name} ({lg.direction}), scheduler {sched}: {blocks} blocks per {lg.slot_ns / 1e6:g} ms slot "
                        "(blank: unused; a member's blocks while in it)") for name, sched, blocks in lg.cells]
        one = [(None, f"{lg.direction} cell, scheduler {lg.scheduler}: {lg.blocks} blocks per {lg.slot_ns / 1e6:g} ms slot "
                      "(blank: unused)")]
        panels.append(list(every) if every else list(one))
    rows = sum(len(p) + 1 for p in panels)
    fig, axes = plt.subplots(rows, 1, figsize=(9, 3.2 * rows), sharex=True, squeeze=False)
    row = 0
    for lg, cells in zip(logs, panels):
        colour = member_colours(lg.members)
        for name, title in cells:
            share = axes[row][0]
            row += 1
            bins = cell.share_bins(lg, tl, bin_s, name)
            if not bins.empty:
                share.stackplot(bins.index + bin_s / 2, *(bins[m] for m in lg.members), labels=lg.members, step="mid",
                                colors=[colour[m] for m in lg.members])
            share.set_ylim(0, 1.05)
            share.set_ylabel("share of the cell's\nresource blocks")
            many = len(lg.members) > MANY_MEMBERS
            share.set_title(title + (f"\n{len(lg.members)} UEs: a band each, colours repeating, no legend" if many else ""),
                            fontsize=10)
            shade(share, tl, xlim, legend=False)
            share.grid(alpha=0.3)
            if not many:
                share.legend(loc="upper left", fontsize=8, ncol=min(6, len(lg.members)))
        tput = axes[row][0]
        row += 1
        own = {m: b for m in lg.members
               if (b := timeline.link_bins(run_dir / "links" / f"{m}.{lg.direction}.log", tl, bin_s)) is not None and not b.empty}
        if len(own) > MANY_MEMBERS:  # a line per UE is a smear: their sum, the median UE and the busiest
            t = timeline.links_together({m: {lg.direction: b} for m, b in own.items()}, lg.direction, shared_cell=True)
            if t is not None:
                tput.plot(t.index + bin_s / 2, t["delivered_mbps"], drawstyle="steps-mid", color="C0",
                          label=f"all {len(own)} UEs together")
                per = pd.concat([b.set_index("t_s")["delivered_mbps"] for b in own.values()], axis=1)
                tput.plot(per.index + bin_s / 2, per.median(axis=1), drawstyle="steps-mid", color="C1", label="the median UE")
                tput.plot(per.index + bin_s / 2, per.max(axis=1), drawstyle="steps-mid", color="C3", lw=0.8, label="the busiest UE")
                tput.legend(loc="upper left", fontsize=8, ncol=3)
        else:
            for m, b in own.items():
                tput.plot(b["t_s"] + bin_s / 2, b["delivered_mbps"], label=m, drawstyle="steps-mid", color=colour[m])
        tput.set_ylabel(f"{lg.direction} delivered\n(Mbit/s, {bin_s:g} s bins)")
        tput.set_ylim(bottom=0)
        shade(tput, tl, xlim, legend=False)
        tput.grid(alpha=0.3)
    axes[-1][0].set_xlabel(TIME_LABEL)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def ran_latency_cdf(df: pd.DataFrame, cell_summary: dict, one_way_ms: float, members: dict, out: Path) -> bool:
    """RAN latency (uplink less the core's one-way delay) of answered measured
    requests, one CDF per class, with each SLO marked."""
    m = df[(df["phase"] == "measure") & (df["status"] == "ok") & df["endpoint"].isin(members)]
    if m.empty:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for cls, label in (("lc", "latency-critical"), ("be", "best effort")):
        x = (m[m["endpoint"].map(lambda e: members[e]["cls"]) == cls]["uplink_ms"].astype(float) - one_way_ms).sort_values()
        if len(x):
            ax.plot(x.to_numpy(), (pd.RangeIndex(1, len(x) + 1) / len(x)).to_numpy(), drawstyle="steps-post",
                    label=f"{label} ({len(x)} requests)")
    for k, slo in enumerate(sorted({v["slo_ms"] for v in members.values() if v["cls"] == "lc"})):
        ax.axvline(slo, color="0.3", ls="--", lw=1)
        ax.text(slo, 0.03 + 0.07 * k, f" SLO {slo:g} ms", fontsize=8, color="0.3")  # staggered: SLOs can lie close
    lat = m["uplink_ms"].astype(float) - one_way_ms
    wide = lat.max() > 20 * max(lat.median(), 1e-3)
    ax.set_xlabel(f"RAN latency per request (ms{', log scale' if wide else ''}): uplink (M1) less the core's one-way {one_way_ms:g} ms")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.01)
    if wide:  # a long tail: a log axis keeps the typical requests readable
        ax.set_xscale("log")
    else:
        ax.set_xlim(left=0)
    ax.set_title(f"shared cell, uplink scheduler {cell_summary.get('uplink') or 'private'}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True
