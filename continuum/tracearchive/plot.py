"""PNG pictures of a trace: capacity per second over time per direction with
outages shaded, and the CDF of per-second capacity."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from continuum.tracearchive import mahimahi, stats  # noqa: E402


def plot(traces: dict[str, Path], out: Path, title: str) -> Path:
    """`traces`: direction label -> Mahimahi file."""
    fig, (ax_t, ax_c) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [2.2, 1]})
    colors = {"up": "tab:blue", "down": "tab:orange"}
    for row, (label, path) in enumerate(traces.items()):
        ts = mahimahi.read(path)
        st = stats.compute(ts)
        rates = np.array(st.per_second_mbps)
        c = colors.get(label)
        x = np.arange(len(rates))
        ax_t.step(x, rates, where="post", color=c, label=f"{label}link (mean {st.mean_mbps:.1f} Mbit/s)", lw=1)
        for s, e in st.outages:
            ax_t.axvspan(s / 1000, e / 1000, color=c, alpha=0.3, lw=0)
        # Outages are often a fraction of a second: a strip along the bottom,
        # each at least 0.4% of the axis wide, keeps every one of them visible.
        if st.outages:
            min_w = 0.004 * max(1, len(rates))
            bars = [(s / 1000, max((e - s) / 1000, min_w)) for s, e in st.outages]
            ax_t.broken_barh(bars, (0.005 + 0.045 * row, 0.035), transform=ax_t.get_xaxis_transform(), color=c,
                             label=f"{label}link outages ({len(st.outages)})")
        srt = np.sort(rates)
        ax_c.plot(srt, np.arange(1, len(srt) + 1) / len(srt), color=c, label=f"{label}link")
    ax_t.set_xlabel("time in trace (s)")
    ax_t.set_ylabel("capacity per second (Mbit/s)")
    ax_t.set_title(f"{title}: capacity over one period (shaded: outages > {stats.OUTAGE_MS} ms)", fontsize=9)
    ax_t.legend(fontsize=8)
    ax_t.grid(alpha=0.3)
    ax_c.set_xlabel("capacity per second (Mbit/s)")
    ax_c.set_ylabel("fraction of seconds")
    ax_c.set_title("CDF of per-second capacity", fontsize=9)
    ax_c.grid(alpha=0.3)
    ax_c.legend(fontsize=8)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
