"""The run's PNG plots: end-to-end latency per request over time, the median
and P99 decomposition, each cellular link's capacity vs delivered throughput
vs queueing delay (from the mm-link logs), and node CPU/memory."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

PARTS = [("preprocessing_ms", "pre-processing (M3)"), ("uplink_ms", "uplink (M1)"),
         ("server_ms", "server (M4)"), ("downlink_ms", "downlink (M2)")]


def latency_over_time(df: pd.DataFrame, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(9, 4))
    t0 = df["t_drawn"].min()
    for ep, g in df.groupby("endpoint"):
        ok = g[g["status"] == "ok"]
        ax.plot((ok["t_drawn"] - t0) / 1e9, ok["e2e_ms"], ".-", ms=3, lw=0.6, label=f"{ep}")
        lost = g[g["status"] != "ok"]
        if len(lost):
            ax.plot((lost["t_drawn"] - t0) / 1e9, [ok["e2e_ms"].max() if len(ok) else 1] * len(lost), "rx", label=f"{ep} timeout")
    warm = df[df["phase"] == "warmup"]
    if len(warm):
        ax.axvspan(0, (warm["t_drawn"].max() - t0) / 1e9, color="0.9", label="warm-up")
    ax.set_xlabel("request sent at (s since first request)")
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def decomposition(summary: dict, out: Path) -> None:
    m = summary["metrics"]
    if not m["e2e_ms"].get("count"):
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for x, stat in enumerate(("median", "p99")):
        bottom = 0.0
        for i, (col, label) in enumerate(PARTS):
            v = m[col][stat]
            ax.bar(x, v, bottom=bottom, color=f"C{i}", label=label if x == 0 else None, width=0.5)
            bottom += v
        ax.plot([x - 0.3, x + 0.3], [m["e2e_ms"][stat]] * 2, "k-", lw=2, label="end-to-end" if x == 0 else None)
    ax.set_xticks([0, 1], ["median of each part", "P99 of each part"])
    ax.set_ylabel("latency (ms)")
    ax.set_title("Where the time goes")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def read_link_log(path: Path, bin_s: float) -> pd.DataFrame | None:
    """Bin an mm-link log (times in ms since the link started): capacity,
    delivered Mbit/s, mean queueing delay and drops per bin."""
    if not path.exists():
        return None
    ev = pd.read_csv(path, sep=" ", comment=None, skiprows=5, names=["t", "ev", "a", "b"], dtype={"ev": str})
    ev["bin"] = (ev["t"] // (bin_s * 1000)).astype(int)
    scale = 8 / bin_s / 1e6
    cap = ev[ev["ev"] == "#"].groupby("bin")["a"].sum() * scale
    dep = ev[ev["ev"] == "-"]
    delivered = dep.groupby("bin")["a"].sum() * scale
    qdelay = dep.groupby("bin")["b"].mean()
    drops = ev[ev["ev"] == "d"].groupby("bin")["a"].sum()
    out = pd.DataFrame({"capacity_mbps": cap, "delivered_mbps": delivered, "queue_delay_ms": qdelay, "drops": drops}).fillna(0)
    out.index = out.index * bin_s
    return out


def link(run_dir: Path, endpoint: str, out: Path, bin_s: float = 0.5) -> None:
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for ax, d in zip(axes, ("uplink", "downlink")):
        b = read_link_log(run_dir / "links" / f"{endpoint}.{d}.log", bin_s)
        if b is None:
            continue
        ax.plot(b.index, b["capacity_mbps"], color="0.6", lw=1, label="trace capacity")
        ax.plot(b.index, b["delivered_mbps"], color="C0", lw=1, label="delivered")
        ax.set_ylabel(f"{d} Mbit/s")
        ax2 = ax.twinx()
        ax2.plot(b.index, b["queue_delay_ms"], color="C3", lw=1, label="queueing delay")
        ax2.set_ylabel("queueing delay (ms)", color="C3")
        lines = ax.get_lines() + ax2.get_lines()
        ax.legend(lines, [l.get_label() for l in lines], fontsize=8, loc="upper right")
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time since link start (s)")
    fig.suptitle(f"{endpoint}: cellular link, {bin_s:g} s bins")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def sending_rate(df: pd.DataFrame, rate_logs: list[Path], out: Path) -> bool:
    """Congestion control at work: each endpoint's sending rate (from its rate
    log) over its end-to-end latency. False when no rate was ever changed."""
    logs = [pd.read_csv(p) for p in rate_logs if p.stat().st_size > 0]
    if not logs or not len(df):
        return False
    t0 = df["t_drawn"].min()
    fig, ax = plt.subplots(figsize=(9, 4))
    ax2 = ax.twinx()
    for i, (ep, g) in enumerate(df.groupby("endpoint")):
        ok = g[g["status"] == "ok"]
        ax2.plot((ok["t_drawn"] - t0) / 1e9, ok["e2e_ms"], ".", ms=3, color=f"C{i}", alpha=0.4, label=f"{ep} e2e")
        changes = pd.concat(logs)
        changes = changes[changes["endpoint"] == ep].sort_values("t")
        t = [0.0, *((changes["t"] - t0) / 1e9), (g["t_drawn"].max() - t0) / 1e9]
        r = [g["send_rate"].iloc[0], *changes["rate"], changes["rate"].iloc[-1] if len(changes) else g["send_rate"].iloc[0]]
        ax.step(t, r, where="post", color=f"C{i}", lw=1.5, label=f"{ep} sending rate")
    ax.set_xlabel("time (s since first request)")
    ax.set_ylabel("sending rate (requests/s)")
    ax2.set_ylabel("end-to-end latency (ms)")
    ax2.set_yscale("log")
    lines = ax.get_lines() + ax2.get_lines()
    ax.legend(lines, [l.get_label() for l in lines], fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    ax.set_title("Application-level congestion control")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def nodes(samples: Path, out: Path) -> None:
    if not samples.exists():
        return
    s = pd.read_csv(samples)
    if s.empty:
        return
    t0 = s["time_ns"].min()
    fig, (a, b) = plt.subplots(2, 1, figsize=(9, 5), sharex=True)
    for name, g in s.groupby("node"):
        a.plot((g["time_ns"] - t0) / 1e9, g["cpu_cores"], label=name)
        b.plot((g["time_ns"] - t0) / 1e9, g["memory_bytes"] / 2**20, label=name)
    a.set_ylabel("CPU (cores)")
    b.set_ylabel("memory (MiB)")
    b.set_xlabel("time (s)")
    a.legend(fontsize=8)
    a.grid(alpha=0.3)
    b.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def all_plots(run_dir: Path, df: pd.DataFrame, summary: dict) -> list[Path]:
    plots = run_dir / "plots"
    plots.mkdir(exist_ok=True)
    made = []
    if len(df):
        latency_over_time(df, plots / "latency_over_time.png")
        made.append(plots / "latency_over_time.png")
    decomposition(summary, plots / "decomposition.png")
    made.append(plots / "decomposition.png")
    for ep in sorted(df["endpoint"].unique()) if len(df) else []:
        link(run_dir, ep, plots / f"link_{ep}.png")
        made.append(plots / f"link_{ep}.png")
    if sending_rate(df, sorted((run_dir / "raw").glob("rate-*.csv")), plots / "sending_rate.png"):
        made.append(plots / "sending_rate.png")
    nodes(run_dir / "nodes.csv", plots / "nodes.png")
    made.append(plots / "nodes.png")
    return [p for p in made if p.exists()]
