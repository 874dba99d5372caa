"""The flows' figure (plots/flows.png): the distribution of flow completion
times by flow size, of slowdowns by the UE's channel, and, with pDCell's CU,
its buffer's occupancy on the run's time axis against its bound."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from continuum.edge.pdcell import results  # noqa: E402
from continuum.results.plots import TIME_LABEL, Plot, shade  # noqa: E402


def _cdf(ax, values, label: str) -> None:
    """Over every flow of the group: one never complete keeps the curve below 1."""
    v = np.asarray(values, dtype=float)
    done = np.sort(v[~np.isnan(v)])
    if len(done):
        ax.step(done, np.arange(1, len(done) + 1) / len(v), where="post", label=f"{label} ({len(done)} of {len(v)} complete)")


def figures(p: Plot, part: dict) -> list[Path]:
    run_dir, tl, xlim, folder = p.run_dir, p.tl, p.xlim, p.folder
    import pandas as pd

    df = pd.read_csv(run_dir / "requests.csv")
    f = results.flows(run_dir, df)
    if f.empty:
        return []
    cu = results.cu_log(run_dir)
    panels = 3 if cu is not None else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.2))
    fct, slow = axes[0], axes[1]
    for name, lo, hi in results.SIZE_CLASSES:
        g = f[(f["bytes"] > lo) & (f["bytes"] <= hi)]
        _cdf(fct, g["fct_ms"], name)
    fct.set(xscale="log", xlabel="flow completion time (ms, log)", ylabel="share of the flows (incomplete ones: never)", ylim=(0, 1.02),
            title="FCT by flow size")
    for (name, mbit), g in f.groupby(["channel", "channel_mbit"], dropna=False):
        _cdf(slow, g["slowdown"], f"{name}" + (f" ({mbit:.0f} Mbit/s)" if pd.notna(mbit) else ""))
    slow.axvline(1, color="0.6", lw=0.8, ls=":")
    slow.set(xscale="log", xlabel="slowdown: FCT / the flow alone at its channel (log)", ylim=(0, 1.02), title="slowdown by the UE's channel")
    for ax in (fct, slow):
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="lower right")
    if cu is not None:
        head, occ, counters = cu
        ax = axes[2]
        t = tl.seconds(occ["t_ns"])
        ax.plot(t, occ["bytes"] / 1000, lw=0.8, color="C0", label="CU buffer in use (per slot with flows)")
        bound = head.get("buffer_bytes", "inf")
        peak_kb = counters["peak_bytes"] / 1000
        top = max(peak_kb * 1.3, 1.0)
        title = f"CU buffer: peak {peak_kb:g} KB"
        if bound == "inf":
            title += " (unbounded)"
        elif int(bound) / 1000 <= top * 1.5:  # the bound in view: drawn
            ax.axhline(int(bound) / 1000, color="C3", ls="--", lw=1, label=f"its bound, {int(bound) / 1000:g} KB")
            top = max(top, int(bound) / 1000 * 1.05)
        else:  # far above what was used: said, not drawn (it would flatten the curve)
            title += f"\n(its bound, {int(bound) / 1000:g} KB, is off this scale)"
        shade(ax, tl, xlim)
        ax.set(xlim=xlim, xlabel=TIME_LABEL, ylabel="KB", title=title)
        ax.set_ylim(0, top)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(f"flows over transport {part['kind']}, downlink scheduler {part['downlink_scheduler']} (measured)", fontsize=10)
    fig.tight_layout()
    out = folder / "flows.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return [out]
