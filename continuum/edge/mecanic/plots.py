"""The ingress stage's figure (plots/nic-NODE.png), on the run's time axis:
per class, the time through the stage (median and max per bin, measured per
packet), the packets waiting in it, and what it carried and dropped per bin."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from continuum.edge.mecanic import results  # noqa: E402
from continuum.results.plots import TIME_LABEL, Plot, shade  # noqa: E402
from continuum.results.timeline import Timeline  # noqa: E402

BIN_S = 0.25


def figures(p: Plot, part: dict) -> list[Path]:
    run_dir, tl, xlim, folder = p.run_dir, p.tl, p.xlim, p.folder
    out = []
    for s in results.logs(run_dir):
        if s.node in part["nodes"] and not s.packets.empty:
            path = folder / f"nic-{s.node}.png"
            stage(s, part["nodes"][s.node], tl, xlim, path)
            out.append(path)
    return out


def stage(s: results.StageLog, summary: dict, tl: Timeline, xlim: tuple[float, float], out: Path) -> None:
    p = s.packets.assign(t=lambda d: tl.seconds(d["arrival_ns"]))
    p = p[(p["t"] >= xlim[0]) & (p["t"] <= xlim[1])]
    occ = results.occupancy(s.packets).assign(t=lambda d: tl.seconds(d["t_ns"]))
    colours = {c: f"C{i}" for i, c in enumerate(s.classes)}
    fig, (lat, held, rate) = plt.subplots(3, 1, figsize=(9, 8.5), sharex=True)
    edges = np.arange(xlim[0], xlim[1] + BIN_S, BIN_S)
    mids = edges[:-1] + BIN_S / 2
    top = 0.0
    for c in s.classes:
        mine = p[p["class"] == c]
        if mine.empty:
            continue
        kept = mine[mine["dropped"] == ""]
        ms = (kept["done_ns"] - kept["arrival_ns"]) / 1e6
        b = pd.cut(kept["t"], edges, labels=False)
        med, peak = ms.groupby(b).median(), ms.groupby(b).max()
        lat.plot(mids[med.index.astype(int)], med.to_numpy(), "-", color=colours[c], lw=1.4, label=f"{c}: median per {BIN_S:g} s")
        lat.plot(mids[peak.index.astype(int)], peak.to_numpy(), ":", color=colours[c], lw=1, label=f"{c}: max")
        top = max(top, float(peak.max()) if len(peak) else 0.0)
        o = occ[occ["class"] == c]
        held.step(o["t"], o["packets"], where="post", color=colours[c], lw=1, label=c)
        carried = kept.groupby(b)["size"].sum() * 8 / BIN_S / 1e6
        rate.plot(mids[carried.index.astype(int)], carried.to_numpy(), "-", color=colours[c], lw=1.4, label=f"{c}: carried")
        dropped = mine[mine["dropped"] != ""]
        if len(dropped):
            d = dropped.groupby(pd.cut(dropped["t"], edges, labels=False))["size"].sum() * 8 / BIN_S / 1e6
            rate.plot(mids[d.index.astype(int)], d.to_numpy(), "x", ms=4, color=colours[c], label=f"{c}: dropped")
    how = ("one FIFO" if summary["kind"] == "plain" else
           f"MECaNIC, {summary['queues']} queues" + (f" capped at {summary['queue_rate_mbit']:g} Mbit/s each" if summary["queue_rate_mbit"] else ""))
    lat.set_title(f"ingress stage in front of {s.node}: {how}, {summary['rate_mbit']:g} Mbit/s to the host\n"
                  "(measured per packet: from reaching the stage to leaving it for the host)", fontsize=10)
    lat.set_ylabel("time through the stage (ms)")
    if top > 0:
        lat.set_yscale("log")
    lat.legend(fontsize=7, loc="upper left", ncol=2)
    held.set_ylabel("packets in the stage\n(waiting or leaving)")
    held.set_ylim(bottom=0)
    held.legend(fontsize=7, loc="upper left", ncol=4)
    rate.axhline(summary["rate_mbit"], color="k", ls="--", lw=0.8, label="the path to the host")
    rate.set_ylabel(f"Mbit/s per {BIN_S:g} s")
    rate.set_ylim(bottom=0)
    rate.legend(fontsize=7, loc="upper left", ncol=3)
    rate.set_xlabel(TIME_LABEL)
    for ax in (lat, held, rate):
        shade(ax, tl, xlim, legend=False)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
