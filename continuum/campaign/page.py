"""The campaign's figures and its report.html: for each metric, each group's
(arm and swept values) measured requests as a CDF, and each run's own median
against every swept parameter, the line through the median over the seeds
with a band from the lowest run's to the highest's. One page, the figures in
it, beside table.md's numbers, so a campaign folder can be sent as one file."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from continuum.campaign.aggregate import METRICS  # noqa: E402
from continuum.results.plots import latency_axis  # noqa: E402

LABELS = {"uplink_ms": "M1 uplink", "downlink_ms": "M2 downlink", "preprocessing_ms": "M3 pre-processing",
          "server_ms": "M4 server", "e2e_ms": "end-to-end"}


def write(folder: Path, points: list[dict[str, Any]], keys: list[str]) -> list[Path]:
    """plots/ (the CDFs, the medians against each swept key) and report.html in the campaign folder;
    only complete points count."""
    done = [p for p in points if p.get("status") == "complete" and p.get("run")]
    if not done:
        return []
    out = folder / "plots"
    out.mkdir(exist_ok=True)
    made = [_cdfs(folder, done, keys, out / "cdf.png")]
    made += [f for k in keys if (f := _against(folder, done, keys, k, out / f"median_vs_{_safe(k)}.png"))]
    page = folder / "report.html"
    table = (folder / "table.md").read_text() if (folder / "table.md").exists() else ""
    imgs = "".join(f"<figure><img src='data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}' alt='{html.escape(p.name)}'>"
                   f"<figcaption>{html.escape(p.name)} (measured)</figcaption></figure>" for p in made)
    page.write_text("<!doctype html><meta charset='utf-8'><title>campaign</title><style>body{font-family:sans-serif;max-width:1200px;"
                    "margin:auto}img{max-width:100%}pre{white-space:pre-wrap;font-size:12px}</style>"
                    f"<h1>campaign {html.escape(folder.name)}: {len(done)} of {len(points)} points complete</h1>"
                    f"<h2>Table (table.md)</h2><pre>{html.escape(table)}</pre><h2>Figures</h2>{imgs}")
    return [*made, page]


def _group(p: dict[str, Any], keys: list[str], leave: str | None = None) -> str:
    bits = ([p["arm"]] if p.get("arm") else []) + [f"{k}={p['values'].get(k)}" for k in keys if k != leave]
    return ", ".join(bits) or "all"


def _requests(folder: Path, p: dict[str, Any]) -> pd.DataFrame:
    f = folder / p["run"] / "requests.csv"
    if not f.exists():
        return pd.DataFrame()
    df = pd.read_csv(f)
    return df[(df["phase"] == "measure") & (df["status"] == "ok")] if "phase" in df else df


def _cdfs(folder: Path, done: list[dict[str, Any]], keys: list[str], path: Path) -> Path:
    """Per metric, each group's answered requests (its seeds' runs together) as a CDF."""
    groups: dict[str, list[pd.DataFrame]] = {}
    for p in done:
        groups.setdefault(_group(p, keys), []).append(_requests(folder, p))
    metrics = [m for m in METRICS if any(m in d for ds in groups.values() for d in ds)]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.6), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        drawn = []
        for i, (name, ds) in enumerate(groups.items()):
            x = np.sort(pd.concat([d[m] for d in ds if m in d]).dropna().to_numpy(dtype=float))
            if len(x):
                drawn.append(x)
                ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", color=f"C{i}",
                        label=f"{name} ({len(ds)} run{'s' if len(ds) != 1 else ''})")
        ax.set_title(LABELS[m], fontsize=9)
        if drawn:
            latency_axis(ax, min(x[0] for x in drawn), max(x[-1] for x in drawn))
        else:
            ax.set_xlabel("ms")
        ax.set_ylabel("share of requests")
        ax.set_ylim(0, 1.01)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=1 if max(map(len, labels), default=0) > 40 else 2, fontsize=8)
    fig.suptitle("answered requests per group (arm and swept values; its seeds' runs together), measured", fontsize=10)
    fig.tight_layout(rect=(0, 0.08 + 0.035 * len(labels), 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _against(folder: Path, done: list[dict[str, Any]], keys: list[str], key: str, path: Path) -> Path | None:
    """Each run's own median of each metric against one swept key, a line per group of the other keys:
    through the median over its runs, with a band from their lowest to their highest."""
    import json

    rows = []
    for p in done:
        s = json.loads((folder / p["run"] / "summary.json").read_text())
        for m in METRICS:
            v = ((s.get("metrics") or {}).get(m) or {}).get("median")
            if v is not None:
                rows.append({"x": str(p["values"].get(key)), "group": _group(p, keys, leave=key), "metric": m, "median": v})
    if not rows:
        return None
    df = pd.DataFrame(rows)
    order = list(dict.fromkeys(str(p["values"].get(key)) for p in done))
    metrics = [m for m in METRICS if m in set(df["metric"])]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.6), squeeze=False)
    for ax, m in zip(axes[0], metrics):
        for i, (g, d) in enumerate(df[df["metric"] == m].groupby("group", sort=False)):
            agg = d.groupby("x")["median"].agg(["median", "min", "max"]).reindex(order)
            xs = np.arange(len(order))
            ax.plot(xs, agg["median"], "o-", color=f"C{i}", label=g)
            ax.fill_between(xs, agg["min"], agg["max"], color=f"C{i}", alpha=0.2)
        ax.set_xticks(range(len(order)), order, fontsize=8)
        ax.set_title(LABELS[m], fontsize=9)
        ax.set_xlabel(key)
        ax.set_ylabel("the runs' medians (ms)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=1, fontsize=8)
    fig.suptitle(f"each run's median against {key}, a line per group of the other keys: through the median over its runs, "
                 "band their min-max (measured)", fontsize=10)
    fig.tight_layout(rect=(0, 0.06 + 0.035 * len(labels), 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _safe(key: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in key)
