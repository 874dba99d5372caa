"""The pDCell experiment's figures and table, from the points of its two
campaigns in results/runs (experiments/pdcell/run, campaign.py).
    analyze.py RESULTS_FOLDER
Writes summary.csv (one row per run: the flows' FCT and slowdown by size and
channel, the CU's buffer and credits), fig9_fct.png (the FCT distributions at
load 0.6, the paper's Fig. 9 shape), by_channel.png, cu_buffer.png and
load.png. Every number is measured in these runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from continuum.edge.pdcell import results as flows_results  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import campaign  # noqa: E402

LABELS = {"mrfs": "pDCell, MRFS", "pfs": "pDCell, PF", "phost-inf": "pHost-like, unbounded CU buffer",
          "phost-3mb": "pHost-like, 3 MB CU buffer", "tcp": "TCP CUBIC, PF", "tcp-reno": "TCP NewReno, PF", "tcp-bbr": "TCP BBR, PF"}
COLOURS = {"mrfs": "C0", "pfs": "C1", "phost-inf": "C2", "phost-3mb": "C4", "tcp": "C3", "tcp-reno": "C5", "tcp-bbr": "C7"}
CLASSES = [(name, lo, hi) for name, lo, hi in flows_results.SIZE_CLASSES if lo < 1_000_000]  # the runs' flows are cut at 1 MB


def runs(folder: Path) -> list[dict]:
    """The complete points of the two campaigns (campaign.py) under FOLDER/runs."""
    return [p for part in campaign.PARTS for p in campaign.points(folder / "runs" / f"campaign-pdcell-{part}")]


def table(rs: list[dict]) -> pd.DataFrame:
    rows = []
    for r in rs:
        part = json.loads((r["dir"] / "summary.json").read_text()).get("transport") or {}
        row = {"arm": r["arm"], "load": r["load"], "offered_load": part.get("offered_load"), "run": r["dir"].name}
        for group in ("by_size", "by_channel"):
            for name, s in part.get(group, {}).items():
                key = name.split(" ")[0]
                for k in ("flows", "complete", "fct_p50_ms", "fct_p99_ms", "slowdown_p50", "slowdown_p99"):
                    row[f"{key}_{k}"] = s[k]
        for k, v in part.get("all", {}).items():
            row[f"all_{k}"] = v
        for k in ("buffer_bytes", "peak_bytes", "occupancy_p99_bytes", "credits", "expired", "not_admitted"):
            row[f"cu_{k}"] = (part.get("cu") or {}).get(k)
        rows.append(row)
    return pd.DataFrame(rows)


def _cdf(ax, v: np.ndarray, **kw) -> None:
    done = np.sort(v[~np.isnan(v)])
    if len(done):
        ax.step(done, np.arange(1, len(done) + 1) / len(v), where="post", **kw)


def fig9(rs: list[dict], out: Path) -> None:
    at = [r for r in rs if r["load"] == 0.6]
    fig, axes = plt.subplots(1, len(CLASSES), figsize=(6 * len(CLASSES), 4.4), sharey=True)
    for ax, (name, lo, hi) in zip(axes, CLASSES):
        for r in sorted(at, key=lambda r: list(LABELS).index(r["arm"])):
            f = flows_results.flows(r["dir"], pd.read_csv(r["dir"] / "requests.csv"))
            g = f[(f["bytes"] > lo) & (f["bytes"] <= hi)]
            v = g["fct_ms"].to_numpy(dtype=float)
            _cdf(ax, v, color=COLOURS[r["arm"]], label=f"{LABELS[r['arm']]} ({int((~np.isnan(v)).sum())} of {len(v)} complete)")
        ax.set(xscale="log", xlabel="flow completion time (ms, log)", title=f"{name} flows")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("share of the flows (incomplete ones never reach 1)")
    fig.suptitle("FCT at an offered load of ~0.6: six UEs of an LTE-like cell, web-search flows cut at 1 MB (measured, 60 s per arm)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def by_channel(t: pd.DataFrame, out: Path) -> None:
    at = t[t["load"] == 0.6].set_index("arm").reindex([a for a in LABELS if a in set(t["arm"])])
    chans = sorted({c.removesuffix("_fct_p50_ms") for c in t.columns if c.startswith("mahimahi") and c.endswith("_fct_p50_ms")})
    fig, ax = plt.subplots(figsize=(9, 4.4))
    w = 0.8 / len(at)
    for i, (arm, row) in enumerate(at.iterrows()):
        x = np.arange(len(chans)) + i * w
        p50 = [row.get(f"{c}_fct_p50_ms") for c in chans]
        p99 = [row.get(f"{c}_fct_p99_ms") for c in chans]
        ax.bar(x, p50, w, color=COLOURS[arm], label=f"{LABELS[arm]}: median")
        ax.scatter(x, p99, marker="_", s=200, color=COLOURS[arm], zorder=3)
    ax.scatter([], [], marker="_", s=200, color="k", label="P99 (each arm's colour)")
    ax.set_xticks(np.arange(len(chans)) + 0.4 - w / 2, [c.replace("mahimahi-", "").replace("-short", "") + " channel" for c in chans])
    ax.set(yscale="log", ylabel="flow completion time (ms, log)", title="FCT by the UE's channel at load ~0.6 (medians as bars, P99 as ticks; measured)")
    ax.grid(alpha=0.3, axis="y", which="both")
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def cu_buffer(rs: list[dict], out: Path) -> None:
    at = [r for r in rs if r["load"] == 0.6 and (r["dir"] / "links" / "cu.log").exists()]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for r in sorted(at, key=lambda r: list(LABELS).index(r["arm"])):
        got = flows_results.cu_log(r["dir"])
        assert got is not None
        _, occ, counters = got
        t = (occ["t_ns"] - occ["t_ns"].min()) / 1e9
        ax.plot(t, occ["bytes"].clip(lower=1) / 1000, lw=0.7, color=COLOURS[r["arm"]],
                label=f"{LABELS[r['arm']]}: peak {counters['peak_bytes'] / 1000:.0f} KB, {counters['not_admitted']} packets not admitted")
    ax.axhline(3000, color="0.4", ls="--", lw=1, label="the 3 MB bound of the bounded arms")
    ax.set(yscale="log", xlabel="time since the CU's first flow (s)", ylabel="CU buffer in use (KB, log)",
           title="The CU's buffer at load ~0.6, every slot with flows (measured)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def load(t: pd.DataFrame, out: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for arm in ("mrfs", "tcp", "tcp-bbr"):
        s = t[t["arm"] == arm].sort_values("offered_load")
        if len(s) < 2:
            continue
        for ax, key, what in ((axes[0], "small", "small flows (<= 100 KB)"), (axes[1], "medium", "medium flows (100 KB - 1 MB)")):
            ax.plot(s["offered_load"], s[f"{key}_fct_p50_ms"], "o-", color=COLOURS[arm], label=f"{LABELS[arm]}: median")
            ax.plot(s["offered_load"], s[f"{key}_fct_p99_ms"], "s--", color=COLOURS[arm], label=f"{LABELS[arm]}: P99")
            ax.set(yscale="log", xlabel="offered load (share of the cell, measured)", ylabel="FCT (ms, log)", title=what)
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
        # a log axis spanning less than a decade: label its minor ticks too
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}" if str(int(v))[0] in "1235" else ""))
        ax.tick_params(axis="y", which="minor", labelsize=7)
    fig.suptitle("Load sweep: pDCell-MRFS against TCP (CUBIC, BBR) with PF (one 60 s run per point, measured)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(folder: Path) -> None:
    rs = runs(folder)
    if not rs:
        raise SystemExit(f"no runs in {folder}/runs: run experiments/pdcell/run first")
    t = table(rs)
    t.to_csv(folder / "summary.csv", index=False)
    fig9(rs, folder / "fig9_fct.png")
    by_channel(t, folder / "by_channel.png")
    cu_buffer(rs, folder / "cu_buffer.png")
    if len(set(t["load"])) > 1:
        load(t, folder / "load.png")
    cols = ["arm", "offered_load", "small_fct_p50_ms", "small_fct_p99_ms", "medium_fct_p50_ms", "medium_complete", "medium_flows",
            "cu_peak_bytes", "cu_not_admitted"]
    print(t[[c for c in cols if c in t]].to_string(index=False))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "results")
