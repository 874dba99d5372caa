"""Figures and report.md for a thesis run folder (see thesis.py): every
number is computed here from the points' requests.csv and link logs, and
set next to the thesis' finding with a verdict. Requests are pooled over
repetitions; only answered requests of the measured phase count, and
timeouts are reported beside them."""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
# Percentiles of the parts do not add up (each part's P99 is another
# request's); like every run's summary, the breakdowns here are the mean of
# each part over one set of whole requests, so they add up to its e2e.
from continuum.results.tables import decomposition  # noqa: E402
from continuum.tracearchive.mahimahi import OPPORTUNITY_BYTES  # noqa: E402

COMPONENTS = [("preprocessing_ms", "M3 pre-processing", "C2"), ("uplink_ms", "M1 uplink", "C0"),
              ("server_ms", "M4 server", "C3"), ("downlink_ms", "M2 downlink", "C1")]
CORE_ONE_WAY_MS = {"e3-edge": 0.5, "e3-eu-central-1": 5.0, "e3-eu-west-3": 10.0, "e3-us-east-1": 40.0}
LABELS = {
    "e1-lte": "LTE (T-Mobile)", "e1-5g": "5G static (Irish)", "e1-5g-obstacle": "5G degraded (Irish driving)",
    "e1-5g-mmwave": "5G mmWave (Lumos5G)", "e2-image": "W1 image", "e2-text": "W2 text", "e3-edge": "edge (0.5 ms)",
    "e3-eu-central-1": "eu-central-1 (5 ms)", "e3-eu-west-3": "eu-west-3 (10 ms)", "e3-us-east-1": "us-east-1 (40 ms)",
    "6g-emulated": "6G emulated (ours)",
}
TCP_PAYLOAD = 1448  # bytes of a 1500-byte IP packet that carry MQTT data
SIXG_RATE_BPS = 100e9
SIXG_FIXED_MS = 0.1 + 0.1  # the thesis' formula: size / 100 Gbit/s + 0.1 ms + 0.1 ms


@dataclass
class Point:
    name: str
    run_dir: Path
    df: pd.DataFrame  # answered requests of the measured phase
    summary: dict
    manifest: dict
    timeouts: int = 0
    link: pd.DataFrame | None = None  # queue_and_capacity's result

    def med(self, col: str) -> float:
        return float(self.df[col].median())

    def p99(self, col: str) -> float:
        return float(np.percentile(self.df[col], 99))

    def typical(self) -> dict:
        """Mean of each part over the requests around the median (e2e P45-P55)."""
        return decomposition(self.df)["around_median"]["mean_parts_ms"]

    def slowest(self) -> dict:
        """Mean of each part over the slowest 1% of requests (e2e >= P99)."""
        return decomposition(self.df)["slowest_1pct"]["mean_parts_ms"]


def load(out: Path) -> tuple[dict[str, Point], dict]:
    meta = json.loads((out / "points.json").read_text())
    points = {}
    for r in meta["points"]:
        if r["status"] != "complete" or not r.get("run_dir"):
            continue
        d = out / r["run_dir"]
        df = pd.read_csv(d / "requests.csv")
        measured = df[df["phase"] == "measure"]
        ok = measured[measured["status"] == "ok"].copy()
        if ok.empty:
            continue
        points[r["point"]] = Point(r["point"], d, ok, json.loads((d / "summary.json").read_text()),
                                   json.loads((d / "manifest.json").read_text()), timeouts=int((measured["status"] != "ok").sum()))
    return points, meta


# --- link logs ------------------------------------------------------------------
def link_log(path: Path) -> tuple[int, pd.DataFrame]:
    """(init unix ms, events) of an mm-link log."""
    init = None
    with path.open() as f:
        for line in f:
            if not line.startswith("#"):
                break
            if line.startswith("# init timestamp:"):
                init = int(line.split(":")[1])
    ev = pd.read_csv(path, sep=" ", comment=None, skiprows=5, names=["t", "ev", "a", "b"], dtype={"ev": str})
    if init is None:
        raise ValueError(f"{path}: no init timestamp line")
    return init, ev


def queue_and_capacity(p: Point) -> pd.DataFrame:
    """Per request: uplink queue (bytes) when it was published and the uplink
    capacity (Mbit/s) of that second, from the endpoint's uplink log; kept
    beside it (link_per_request.csv) so a committed result folder can be
    redrawn without its bulky link logs."""
    if p.link is not None:  # four figures and a table ask; parse the log once
        return p.link
    cached = p.run_dir / "link_per_request.csv"
    log = p.run_dir / "links" / "endpoint0.uplink.log"
    if cached.exists() and not log.exists():
        p.link = pd.read_csv(cached)
    else:
        p.link = _queue_and_capacity(p, log)
        p.link.to_csv(cached, index=False)
    return p.link


def _queue_and_capacity(p: Point, log: Path) -> pd.DataFrame:
    init, ev = link_log(log)
    t = ev["t"].to_numpy()
    delta = np.where(ev["ev"] == "+", ev["a"], 0) - np.where(ev["ev"] == "-", ev["a"], 0) - np.where(ev["ev"] == "d", ev["b"].fillna(0), 0)
    queue = np.cumsum(delta)
    cap = np.bincount((t[ev["ev"].to_numpy() == "#"] // 1000).astype(int)) * OPPORTUNITY_BYTES * 8 / 1e6
    at = p.df["t_published"].to_numpy() / 1e6 - init
    i = np.searchsorted(t, at, side="right") - 1
    sec = np.clip((at // 1000).astype(int), 0, len(cap) - 1)
    pub = p.df["t_published"].to_numpy()
    got = p.df["t_server_received"].to_numpy()
    size = p.df["request_bytes"].to_numpy()
    # What a request waits behind: bytes published before it and not yet at
    # the server (in the endpoint's TCP buffer or in the link's queue).
    ahead = (pub[None, :] < pub[:, None]) & (got[None, :] > pub[:, None])
    return pd.DataFrame({"link_s": at / 1000, "link_queue_bytes": np.where(i >= 0, queue[np.clip(i, 0, None)], 0), "capacity_mbps": cap[sec],
                         "backlog_bytes": (ahead * size[None, :]).sum(axis=1), "uplink_ms": p.df["uplink_ms"].to_numpy()})


def trace_restarts_s(p: Point) -> list[float]:
    """When each repetition's traces started, in seconds of the link's clock
    (mahimahi-link says so in its log; continuum restarts them at each
    warm-up). A run from before the restarts had its traces start with the
    link, at 0 s, and run on through its repetitions."""
    log = p.run_dir / "logs" / "mahimahi-link.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    said = re.findall(r"restarted from its first line at ([0-9.]+) s", text)
    return [float(x) for x in dict.fromkeys(said)] or [0.0]


def trace_seconds(p: Point) -> np.ndarray:
    """Each request's publish time in seconds since its repetition's traces started."""
    starts = trace_restarts_s(p)
    rep = p.df["repetition"].to_numpy().astype(int) if "repetition" in p.df else np.ones(len(p.df), dtype=int)
    start = np.array([starts[min(r, len(starts)) - 1] for r in rep])
    return queue_and_capacity(p)["link_s"].to_numpy() - start


def trace_capacity(p: Point) -> pd.Series:
    """Uplink capacity per second of the trace as the first repetition met it
    (from its restart to the next one), from the link log; cached beside the
    run like queue_and_capacity."""
    cached = p.run_dir / "trace_capacity_per_second.csv"
    log = p.run_dir / "links" / "endpoint0.uplink.log"
    if cached.exists() and not log.exists():
        return pd.read_csv(cached, index_col="trace_second")["capacity_mbps"]
    _, ev = link_log(log)
    starts = trace_restarts_s(p)
    t = ev.loc[ev["ev"] == "#", "t"].to_numpy() / 1000 - starts[0]
    end = math.floor(starts[1] - starts[0] if len(starts) > 1 else t.max())  # whole seconds only: a partial one reads as a dip
    t = t[(t >= 0) & (t < end)]
    cap = pd.Series(np.bincount(t.astype(int), minlength=end) * OPPORTUNITY_BYTES * 8 / 1e6, name="capacity_mbps")
    cap.index.name = "trace_second"
    cap.to_frame().to_csv(cached)
    return cap


# --- figures --------------------------------------------------------------------
def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def decomposition_bars(points: list[Point], title: str, path: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (stat, fn) in zip(axes, (("requests around the median (e2e P45-P55)", Point.typical),
                                     ("slowest 1% of requests (e2e >= P99)", Point.slowest))):
        bottom = np.zeros(len(points))
        for col, label, color in COMPONENTS:
            v = np.array([fn(p)[col] for p in points])
            ax.bar(range(len(points)), v, bottom=bottom, label=label, color=color)
            bottom += v
        ax.set_xticks(range(len(points)), [LABELS.get(p.name, p.name) for p in points], rotation=15, fontsize=8)
        ax.set_ylabel("mean of each part (ms); stacked: their mean e2e")
        ax.set_title(stat, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    return _save(fig, path)


def e1_per_request(points: list[Point], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for p in points:
        t0 = p.df["t_drawn"].min()
        ax.plot((p.df["t_drawn"] - t0) / 1e9, p.df["e2e_ms"], ".", ms=4, label=LABELS.get(p.name, p.name))
    ax.set_yscale("log")
    ax.set_xlabel("request time (s since the first measured request; repetitions overlaid)")
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_title("E1: per-request end-to-end latency, W1 at 1 request/s to the edge")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, path)


def e3_cdf(points: list[Point], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for p in points:
        x = np.sort(p.df["e2e_ms"].to_numpy())
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=LABELS.get(p.name, p.name))
    ax.set_xscale("log")
    ax.set_xlabel("end-to-end latency (ms)")
    ax.set_ylabel("CDF")
    ax.set_title("E3: end-to-end latency by offloading location (5G static)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, path)


def e3_slope(points: list[Point]) -> tuple[float, float]:
    x = np.array([CORE_ONE_WAY_MS[p.name] for p in points])
    y = np.array([p.med("uplink_ms") for p in points])
    slope, icpt = np.polyfit(x, y, 1)
    return float(slope), float(icpt)


def e3_uplink_vs_core(points: list[Point], path: Path) -> Path:
    slope, icpt = e3_slope(points)
    x = np.array([CORE_ONE_WAY_MS[p.name] for p in points])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(x, [p.med("uplink_ms") for p in points], "o", color="C0", label="median uplink (M1)")
    ax.plot(x, [p.p99("uplink_ms") for p in points], "s", color="C3", label="P99 uplink (M1)")
    xs = np.linspace(0, x.max(), 50)
    ax.plot(xs, icpt + slope * xs, "--", color="C0", label=f"fit: {slope:.2f} ms per ms of one-way core delay")
    ax.set_xlabel("one-way core delay (ms)")
    ax.set_ylabel("uplink latency (ms)")
    ax.set_title("E3: uplink latency vs core delay")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def e4_over_time(points: list[Point], path: Path) -> Path:
    """On the trace's own time axis: every repetition meets the trace from its
    first line, so the repetitions are overlaid on the capacity they met."""
    fig, ax = plt.subplots(figsize=(10, 4.8))
    cap = None
    reps = max(len(trace_restarts_s(p)) for p in points)
    for p in points:
        q = queue_and_capacity(p)
        ax.plot(trace_seconds(p), q["uplink_ms"], ".", ms=3, label=f"{p.name}: uplink latency")
        cap = trace_capacity(p)
    ax.set_yscale("log")
    ax.set_xlabel("time since the trace started (s)" + (f"; {reps} repetitions overlaid, each from the trace's start" if reps > 1 else ""))
    ax.set_ylabel("uplink latency M1 (ms)")
    if cap is not None:
        ax2 = ax.twinx()
        ax2.step(cap.index, cap.to_numpy(), where="post", color="0.5", lw=1, label="uplink capacity (trace)")
        ax2.set_ylabel("uplink capacity (Mbit/s)", color="0.4")
        ax2.legend(fontsize=8, loc="upper right")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3, which="both")
    ax.set_title("E4: uplink latency over time, W1 on Verizon LTE (no congestion control)")
    return _save(fig, path)


def e4_scatter(points: list[Point], x: str, xlabel: str, title: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for p in points:
        q = queue_and_capacity(p)
        ax.plot(q[x] / (1e3 if x.endswith("_bytes") else 1), q["uplink_ms"], ".", ms=4, label=p.name)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("uplink latency M1 (ms)")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, path)


def e4_cc_bars(pairs: list[tuple[str, Point, Point]], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    w = 0.2
    for i, (_label, off, on) in enumerate(pairs):
        for j, (p, stat, color) in enumerate(((off, "median", "C3"), (on, "median", "C2"), (off, "P99", "#f4a3a3"), (on, "P99", "#a3e4a3"))):
            v = p.med("e2e_ms") if stat == "median" else p.p99("e2e_ms")
            ax.bar(i + (j - 1.5) * w, v, w, color=color, label=f"{stat}, congestion control {'on' if p is on else 'off'}" if i == 0 else None)
    ax.set_xticks(range(len(pairs)), [p[0] for p in pairs])
    ax.set_yscale("log")
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_title("E4: application-level congestion control (halve the rate while e2e > 500 ms)")
    ax.grid(axis="y", alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, path)


def sixg_rows(base: Point, emulated: Point | None) -> list[tuple[str, dict]]:
    """Mean of each part over the requests around the median: measured on 5G,
    the thesis' 6G formula (network parts from those requests' sizes,
    compute as measured), and the emulated near-6G link."""
    g = decomposition(base.df)["around_median"]
    e2e = base.df["e2e_ms"]
    near = base.df[(e2e >= g["e2e_band_ms"][0]) & (e2e <= g["e2e_band_ms"][1])]
    if near.empty:
        near = base.df.loc[[(e2e - e2e.median()).abs().idxmin()]]

    def formula(size_col: str) -> float:
        return float((near[size_col] * 8 / SIXG_RATE_BPS * 1e3 + SIXG_FIXED_MS).mean())
    typical = base.typical()
    rows = [("5G static, measured (E1)", typical),
            ("6G formula (thesis), compute as measured",
             {"preprocessing_ms": typical["preprocessing_ms"], "uplink_ms": formula("request_bytes"),
              "server_ms": typical["server_ms"], "downlink_ms": formula("response_bytes")})]
    if emulated is not None:
        rows.append(("6G emulated: 4.8 Gbit/s, 0.1 ms core, 2 CPUs (ours)", emulated.typical()))
    return rows


def sixg_bars(rows: list[tuple[str, dict]], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(9, 4.5))
    bottom = np.zeros(len(rows))
    for col, label, color in COMPONENTS:
        v = np.array([r[1][col] for r in rows])
        ax.barh(range(len(rows)), v, left=bottom, label=label, color=color)
        bottom += v
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.set_xlabel("mean of each part over the requests around the median (ms)")
    ax.set_title("6G projection: the network all but vanishes; compute is the limit")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


# --- report ---------------------------------------------------------------------
def share(p: Point, group) -> dict:
    """Shares of one group's mean e2e (Point.typical or Point.slowest)."""
    parts = group(p)
    total = sum(parts.values())
    net = parts["uplink_ms"] + parts["downlink_ms"]
    return {"compute": (parts["preprocessing_ms"] + parts["server_ms"]) / total, "network": net / total,
            "uplink_of_network": parts["uplink_ms"] / net if net else float("nan")}


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def ms(x: float) -> str:
    return f"{x / 1000:.2f} s" if x >= 1000 else f"{x:.1f} ms"


def span(xs: list[float], fmt=None) -> str:
    fmt = fmt or pct
    return fmt(xs[0]) if min(xs) == max(xs) else f"{fmt(min(xs))}-{fmt(max(xs))}"


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("agrees" if ok else "differs")


def mf1_verdict(shares: list[float]) -> str:
    """MF1 holds per trace and statistic; say so when it holds for most."""
    above = sum(x > 0.9 for x in shares)
    return "agrees" if above == len(shares) else "mostly agrees" if above * 2 > len(shares) else "differs"


def main(out: Path) -> int:
    out = Path(out)
    points, meta = load(out)
    figs = out / "figures"
    figs.mkdir(exist_ok=True)
    have = lambda names: [points[n] for n in names if n in points]  # noqa: E731
    made: list[Path] = []
    rows: list[tuple[str, str, str, str, str]] = []  # finding, thesis, ours, verdict, why
    sections: list[str] = []

    e1 = have(["e1-lte", "e1-5g", "e1-5g-obstacle", "e1-5g-mmwave"])
    if e1:
        made += [e1_per_request(e1, figs / "e1_latency_per_request.png"),
                 decomposition_bars(e1, "E1: where the time goes, by last-mile technology (W1, edge, 1 request/s)", figs / "e1_decomposition.png")]
        lines = ["Shares are of the mean e2e of whole requests: those around the median (e2e P45-P55) and the slowest 1% (e2e >= P99).\n",
                 "| trace | requests | e2e median | e2e P99 | compute share around the median | network share of the slowest 1% | uplink share of network (around the median / slowest 1%) |",
                 "|---|---|---|---|---|---|---|"]
        for p in e1:
            m, q = share(p, Point.typical), share(p, Point.slowest)
            lines.append(f"| {LABELS[p.name]} | {len(p.df)} (+{p.timeouts} timeouts) | {ms(p.med('e2e_ms'))} | {ms(p.p99('e2e_ms'))} | "
                         f"{pct(m['compute'])} | {pct(q['network'])} | {pct(m['uplink_of_network'])} / {pct(q['uplink_of_network'])} |")
        sections.append("## E1: last-mile technology\n\n" + "\n".join(lines))
        comp5g = [share(p, Point.typical)["compute"] for p in e1 if p.name != "e1-lte"]
        comp_lte = [share(p, Point.typical)["compute"] for p in e1 if p.name == "e1-lte"]
        ours = "; ".join(x for x in (f"5G: {span(comp5g)}" if comp5g else "", f"LTE: {span(comp_lte)}" if comp_lte else "") if x)
        ok5, oklte = (max(comp5g) > 0.5 if comp5g else None), (comp_lte[0] > 0.5 if comp_lte else None)
        v = verdict(ok5 if oklte is None else (oklte if ok5 is None else ok5 and oklte))
        if ok5 and oklte is False:
            v = "agrees on 5G, differs on LTE"
        rows.append(("E1: median e2e is compute-dominated", "~80% compute", f"{ours} compute", v,
                     "MobileNetV2 (TensorFlow, 2 CPUs) takes ~20-30 ms on this machine. The 5G stand-ins carry a ~55 KB image in a few ms; "
                     "the T-Mobile LTE trace (13 Mbit/s mean uplink, below the thesis' KPN LTE at ~20) needs ~100 ms, so there the network dominates."))
        upl = [share(p, Point.slowest)["uplink_of_network"] for p in e1]
        netp99 = [share(p, Point.slowest)["network"] for p in e1]
        updown = {p.name: (share(p, Point.typical)["uplink_of_network"], share(p, Point.slowest)["uplink_of_network"]) for p in e1}
        why = ["Requests are 10-100 KB up, 203 B down: the uplink carries ~99.6% of the bytes, so wherever the network is slow the uplink dominates."]
        low_med = [p for p in e1 if updown[p.name][0] <= 0.9]
        low_p99 = [p for p in e1 if updown[p.name][1] <= 0.9]
        if low_med:
            why.append("Below 90% around the median: " + ", ".join(
                f"{LABELS[p.name]} ({pct(updown[p.name][0])}; mean uplink {ms(p.typical()['uplink_ms'])}, downlink {ms(p.typical()['downlink_ms'])})"
                for p in low_med)
                + ": the 203-byte reply still waits for downlink opportunities, 1-3 ms on the 5G traces and more on the LTE "
                "trace, whose downlink has gaps of its own; next to a fast uplink that is a larger share.")
        if low_p99:
            why.append("Below 90% in the slowest 1%: " + ", ".join(f"{LABELS[p.name]} ({pct(updown[p.name][1])}; downlink P99 {ms(p.p99('downlink_ms'))})" for p in low_p99)
                       + ": that downlink trace has outages of its own, which a reply sometimes waits out.")
        rows.append(("E1 (MF1): uplink is >90% of network latency", "> 90% (W1)",
                     f"around the median {span([m for m, _ in updown.values()])}, slowest 1% {span(upl)}",
                     mf1_verdict([x for pair in updown.values() for x in pair]), " ".join(why)))
        rows.append(("E1: P99 is network-dominated", "yes", f"network {span(netp99)} of the slowest 1%", verdict(min(netp99) > 0.5),
                     "The tail comes from the traces' capacity dips and outages (queueing on the uplink)."))

    e2 = have(["e2-image", "e2-text"])
    if e2:
        made.append(decomposition_bars(e2, "E2: image (W1) vs text (W2) on Verizon LTE, 0.4 requests/s", figs / "e2_decomposition.png"))
        lines = ["| workload | requests | request bytes (median) | TCP packets per request (1448 B each) | e2e median | compute share around the median |", "|---|---|---|---|---|---|"]
        slots = {}
        for p in e2:
            b = float(p.df["request_bytes"].median())
            slots[p.name] = math.ceil(b / TCP_PAYLOAD)
            lines.append(f"| {LABELS[p.name]} | {len(p.df)} | {b:.0f} | {slots[p.name]} | {ms(p.med('e2e_ms'))} | {pct(share(p, Point.typical)['compute'])} |")
        sections.append("## E2: workload type\n\n" + "\n".join(lines))
        if "e2-text" in points:
            c = share(points["e2-text"], Point.typical)["compute"]
            rows.append(("E2: text is compute-dominated", "> 99% compute", pct(c), verdict(c > 0.99),
                         "MarianMT runs with random weights here (no pretrained model can be downloaded), so it decodes to the length bound: ~2 s per request; with a pretrained model it would stop earlier, and compute would still dominate."))
        if "e2-image" in slots and "e2-text" in slots:
            rows.append(("E2: MTU slots per request", "text 1, image ~50", f"text {slots['e2-text']}, image {slots['e2-image']}",
                         verdict(slots["e2-text"] == 1 and 25 <= slots["e2-image"] <= 75),
                         "Our images are drawn uniformly from 10-100 KB (median ~55 KB, ~38 packets); the thesis' ~50 slots correspond to ~75 KB images."))

    e3 = have(["e3-edge", "e3-eu-central-1", "e3-eu-west-3", "e3-us-east-1"])
    if e3:
        made.append(e3_cdf(e3, figs / "e3_cdf.png"))
        lines = ["| location | one-way core delay | requests | uplink median | uplink P99 | e2e median | e2e P99 |", "|---|---|---|---|---|---|---|"]
        for p in e3:
            lines.append(f"| {LABELS[p.name]} | {CORE_ONE_WAY_MS[p.name]:g} ms | {len(p.df)} | {ms(p.med('uplink_ms'))} | {ms(p.p99('uplink_ms'))} | {ms(p.med('e2e_ms'))} | {ms(p.p99('e2e_ms'))} |")
        text = "## E3: offloading location\n\n" + "\n".join(lines)
        if len(e3) >= 2:
            made.append(e3_uplink_vs_core(e3, figs / "e3_uplink_vs_core.png"))
            slope, _ = e3_slope(e3)
            med = [p.med("e2e_ms") for p in e3]
            p99 = [p.p99("e2e_ms") for p in e3]
            text += (f"\n\nMedian uplink latency grows {slope:.2f} ms per ms of one-way core delay. Across locations the e2e median moves by "
                     f"{ms(max(med) - min(med))} and the P99 by {ms(max(p99) - min(p99))} (relative to the P99 itself: {pct((max(p99) - min(p99)) / max(p99))}).")
            rows.append(("E3: median shifts with core delay", "shifts (slope not given)", f"{slope:.2f} ms uplink per ms one-way",
                         verdict(slope >= 0.9),
                         "A slope above 1 is TCP at work: an image needs several round trips (slow start after each idle second), and each one pays the core delay."))
            rel = (max(p99) - min(p99)) / max(p99)
            rows.append(("E3: P99 barely changes", "barely changes", f"P99 moves {ms(max(p99) - min(p99))} ({pct(rel)} of the largest)",
                         verdict(rel < 0.5), "The P99 is set by the 5G trace's capacity dips, which every location shares; which requests meet a dip "
                         f"depends on timing, so with few requests it scatters (here {min(len(p.df) for p in e3)} per location; "
                         "it does not follow the core delay's order)."))
        sections.append(text)

    e4 = have(["e4-2rps", "e4-5rps", "e4-10rps"])
    e4cc = have(["e4-2rps-cc", "e4-5rps-cc", "e4-10rps-cc"])
    if e4:
        made += [e4_over_time(e4, figs / "e4_uplink_vs_time.png"),
                 e4_scatter(e4, "capacity_mbps", "uplink capacity in the second the request was sent (Mbit/s)",
                            "E4: uplink latency vs capacity", figs / "e4_uplink_vs_capacity.png"),
                 e4_scatter(e4, "backlog_bytes", "uplink backlog when the request was sent: KB published, not yet at the server",
                            "E4: uplink latency vs queue depth",
                            figs / "e4_uplink_vs_queue.png")]
        lines = ["| rate | offered uplink Mbit/s | requests | uplink median | uplink P99 | uplink max | share of requests sent while capacity < offered | max backlog ahead of a request | max queue in the emulated link |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for p in e4:
            q = queue_and_capacity(p)
            rate = float(p.df["send_rate"].median())
            offered = rate * float(p.df["request_bytes"].mean()) * 8 / 1e6
            lines.append(f"| {rate:g}/s | {offered:.2f} | {len(p.df)} (+{p.timeouts} timeouts) | {ms(p.med('uplink_ms'))} | {ms(p.p99('uplink_ms'))} | "
                         f"{ms(float(p.df['uplink_ms'].max()))} | {pct(float((q['capacity_mbps'] < offered).mean()))} | "
                         f"{q['backlog_bytes'].max() / 1e6:.2f} MB | {q['link_queue_bytes'].max() / 1e3:.0f} KB |")
        text = "## E4: network load\n\n" + "\n".join(lines) + (
            "\n\nThe backlog is what a request waits behind: bytes published earlier and not yet at the server. Most of it waits in the "
            "endpoint (MQTT client and TCP send buffer); the emulated link's own queue (from its log) stays far smaller.")
        low, high = e4[0], e4[-1]
        growth = float(high.df["uplink_ms"].max()) / low.med("uplink_ms")
        rows.append(("E4: uplink latency growth under a capacity drop", "up to ~20 s, ~200x",
                     f"up to {ms(float(high.df['uplink_ms'].max()))}, {growth:.0f}x ({high.name} max / {low.name} median)",
                     verdict(50 <= growth <= 800),
                     "Same trace (Verizon LTE) and infinite queue as the thesis; the growth depends on how much of the trace's long dip (~38-72 s into the trace) the measured window covers. Each repetition meets the trace from its first line at its warm-up's start, so the full run's window (trace seconds 5-125) covers all of it and the quick run's (3-48) its first 10 s; before the traces were restarted there, the phase followed the set-up time and e4-10rps' median ranged 0.47-14.6 s between runs."))
        if e4cc:
            pairs = [(f"{int(off.df['send_rate'].max())}/s", off, on) for off, on in zip(e4, e4cc) if on.name == off.name + "-cc"]
            made.append(e4_cc_bars(pairs, figs / "e4_congestion_control.png"))
            text += "\n\n| rate | median off | median on | median gain | P99 off | P99 on | P99 gain |\n|---|---|---|---|---|---|---|\n"
            for label, off, on in pairs:
                text += (f"| {label} | {ms(off.med('e2e_ms'))} | {ms(on.med('e2e_ms'))} | {off.med('e2e_ms') / on.med('e2e_ms'):.1f}x | "
                         f"{ms(off.p99('e2e_ms'))} | {ms(on.p99('e2e_ms'))} | {off.p99('e2e_ms') / on.p99('e2e_ms'):.1f}x |\n")
            top = pairs[-1]
            gm, gp = top[1].med("e2e_ms") / top[2].med("e2e_ms"), top[1].p99("e2e_ms") / top[2].p99("e2e_ms")
            rows.append((f"E4: congestion control gain at {top[0]}", "~9x median (1 s -> 0.12 s), ~3.5x P99 (20 s -> 5.5 s)",
                         f"{gm:.1f}x median ({ms(top[1].med('e2e_ms'))} -> {ms(top[2].med('e2e_ms'))}), {gp:.1f}x P99 ({ms(top[1].p99('e2e_ms'))} -> {ms(top[2].p99('e2e_ms'))})",
                         "agrees" if 4.5 <= gm <= 18 and 1.75 <= gp <= 7 else (
                             "same direction, different size" if gm > 1.5 and gp > 1.2 else "differs"),
                         "The rule is the thesis' (x0.5 while e2e > 500 ms, at most once per second); ours restores the configured rate once latency recovers and keeps at least 0.5 requests/s, so it sends more than a rule that never restores. How large the median gain is depends on how far the median without it sits inside the backlog: the thesis saw 1 s, a full 120 s window over the Verizon trace's long dip gives ours several seconds."))
        sections.append(text)

    if "e1-5g" in points:
        srows = sixg_rows(points["e1-5g"], points.get("6g-emulated"))
        made.append(sixg_bars(srows, figs / "6g.png"))
        lines = ["| case | pre-processing | uplink | server | downlink | total (their mean e2e) | network share |", "|---|---|---|---|---|---|---|"]
        for name, r in srows:
            tot = sum(r.values())
            lines.append(f"| {name} | {ms(r['preprocessing_ms'])} | {ms(r['uplink_ms'])} | {ms(r['server_ms'])} | {ms(r['downlink_ms'])} | {ms(tot)} | "
                         f"{pct((r['uplink_ms'] + r['downlink_ms']) / tot)} |")
        sections.append("## 6G projection\n\n" + "\n".join(lines))
        f = srows[1][1]
        fshare = (f["uplink_ms"] + f["downlink_ms"]) / sum(f.values())
        ours = "not run"
        ok = None
        if len(srows) > 2:
            e = srows[2][1]
            eshare = (e["uplink_ms"] + e["downlink_ms"]) / sum(e.values())
            ours = f"formula: network {pct(fshare)}; emulated: uplink {ms(e['uplink_ms'])}, network {pct(eshare)} around the median"
            ok = eshare < 0.2
        rows.append(("6G: compute becomes the limit", "network ~0.2 ms per direction", ours, verdict(ok),
                     "The emulated link adds TCP and MQTT round trips (0.2 ms RTT each) and the stacks' per-packet cost, which the formula leaves out."))

    versions = meta.get("versions", {})
    cmds = meta.get("commands", [])
    header = [
        "# Reproducing the thesis' experiments with continuum",
        "",
        f"Generated by `experiments/thesis/analyze.py` from `{out.name}/points.json` ({meta.get('mode', '?')} mode). "
        "Figures are in `figures/`; each point's full result folder (requests.csv, summary, plots, link logs, manifest) is under `runs/`.",
        "",
        "Commands: " + "; ".join(f"`{c['command']}`" for c in cmds) if cmds else "",
        "",
        f"Versions: continuum {versions.get('continuum_commit', '?')}{' (uncommitted changes)' if versions.get('continuum_dirty') else ''}, "
        f"Python {versions.get('python', '?')}, kernel {versions.get('kernel', '?')}, {versions.get('cpus', '?')} CPUs "
        "(each point's manifest.json has the rest: Mosquitto, TensorFlow, torch, mahimahi-link, trace SHA-256s).",
        "",
        "Stand-ins (the thesis' KPN traces were never published): LTE = Mahimahi's T-Mobile LTE (E1) and Verizon LTE (E2, E4, as in the thesis' E4); "
        "5G = Irish 5G static, 5G behind an obstacle = Irish 5G driving (degraded 5G at the thesis' 10-25 Mbit/s uplink level), plus Lumos5G mmWave. "
        "No public 5G dataset records uplink capacity: the 5G uplinks are the downlink rates x 0.375 (the thesis' KPN ratio), see trace-archive/README.md. "
        "Models run with random weights (nothing can be downloaded here): MobileNetV2's compute does not depend on its weights; MarianMT's does (see E2).",
        "",
    ]
    failed = [r for r in meta["points"] if r["status"] != "complete"]
    if failed:
        header += ["Points that did not complete: " + ", ".join(f"{r['point']} ({r['status']})" for r in failed), ""]
    table = ["## Our numbers next to the thesis'", "", "| finding | thesis | ours | verdict | why they differ or agree |", "|---|---|---|---|---|"]
    table += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows]
    body = "\n".join(header + table) + "\n\n" + "\n\n".join(sections) + "\n\n## Figures\n\n" + "\n".join(
        f"![{p.stem}](figures/{p.name})" for p in made) + "\n"
    (out / "report.md").write_text(body)
    print(f"report: {out / 'report.md'} ({len(rows)} findings, {len(made)} figures in {figs})")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "results"))
