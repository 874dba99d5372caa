"""Admission control's figures (MOSAIC or a baseline): per-class completion,
the queue and each task's response time on the run's time axis, decision times."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from continuum.results.plots import TIME_LABEL, Plot, shade  # noqa: E402
from continuum.results.timeline import Timeline  # noqa: E402
from mosaic.classes import CLASSES  # noqa: E402

CLASS_COLOURS = {c.name: f"C{i}" for i, c in enumerate(CLASSES)}


def figures(p: Plot, a: dict) -> list[Path]:
    """Per-class completion; queue depth and each task's response time over
    the run's time axis; decision times. All measured."""
    run_dir, tl, xlim, plots_dir = p.run_dir, p.tl, p.xlim, p.folder
    return [_classes(a, plots_dir), *_queue(run_dir, a, tl, xlim, plots_dir), *_decisions(run_dir, a, plots_dir)]


def _classes(a: dict, plots_dir: Path) -> Path:
    """Per class: met its deadline, finished late, never finished."""
    out = plots_dir / "admission_classes.png"
    fig, ax = plt.subplots(figsize=(9, 4.2))
    names = list(a["per_class"])[::-1]
    met = np.array([a["per_class"][c]["hit"] for c in names]) * 100
    fin = np.array([a["per_class"][c]["finished"] / a["per_class"][c]["arrived"] for c in names]) * 100
    ax.barh(names, met, color="C2", label="met its deadline")
    ax.barh(names, fin - met, left=met, color="C1", label="finished late")
    ax.barh(names, 100 - fin, left=fin, color="C3", label="never finished")
    for i, c in enumerate(names):
        pc = a["per_class"][c]
        ax.text(101, i, f"n={pc['arrived']}, P99 {pc['p99_ms']:.0f} ms" if pc["p99_ms"] is not None else f"n={pc['arrived']}",
                va="center", fontsize=8)
    ax.set_xlim(0, 135)
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("% of the class's measured tasks")
    ax.set_title(f"{a['policy']}: per-class completion (tier 1 at the top); hit {a['hit']:.1%} overall", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.4, -0.18), ncol=3)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _queue(run_dir: Path, a: dict, tl: Timeline, xlim: tuple[float, float], plots_dir: Path) -> list[Path]:
    """The queue and each task's response time, on the run's time axis."""
    made = []
    raw = run_dir / "raw"
    q = sorted(raw.glob("mosaic-queue*.csv"))
    tasks = pd.concat([pd.read_csv(p) for p in sorted(raw.glob("mosaic-tasks*.csv"))], ignore_index=True)
    if q and tl is not None:
        queue = pd.concat([pd.read_csv(p) for p in q], ignore_index=True)
        out = plots_dir / "admission_queue.png"
        fig, (qa, ra) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
        qa.step(tl.seconds(queue["t_ns"]), queue["queued"], where="post", color="k", lw=0.8)
        qa.set_ylabel("tasks queued\n(at each 100-ms tick)")
        qa.set_title(f"{a['policy']}: queue depth (max {a.get('queue', {}).get('max', '-')} in the measured window) "
                     "and each task's response time", fontsize=10)
        fin = tasks[tasks["ok"] == 1]
        for cls, g in fin.groupby("cls"):
            ra.plot(tl.seconds(g["t_arrival_ns"]), g["response_ms"] / 1000, ".", ms=3, color=CLASS_COLOURS.get(cls), label=str(cls))
        lost = tasks[tasks["ok"] != 1]
        if len(lost):
            top = float(fin["response_ms"].max() / 1000) if len(fin) else 1.0
            ra.plot(tl.seconds(lost["t_arrival_ns"]), [top * 1.3] * len(lost), "rx", ms=4, label="never finished (at the top)")
        ra.set_yscale("log")
        ra.set_ylabel("response time (s, log)\narrival at the edge to finish")
        ra.set_xlabel(TIME_LABEL)
        ra.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
        for ax in (qa, ra):
            shade(ax, tl, xlim, legend=False)
            ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(out, dpi=120)
        plt.close(fig)
        made.append(out)
    return made


def _decisions(run_dir: Path, a: dict, plots_dir: Path) -> list[Path]:
    """How long each admission decision took, against the paper's."""
    made = []
    d = sorted((run_dir / "raw").glob("mosaic-decisions*.csv"))
    dec = a.get("decisions")
    if d and dec:
        us = pd.concat([pd.read_csv(p) for p in d], ignore_index=True)
        us = us[us["rule"] != "starving"]["us"].astype(float)
        out = plots_dir / "admission_decisions.png"
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.hist(us, bins=np.logspace(np.log10(max(0.1, us.min())), np.log10(us.max() * 1.01), 50), color="C0")
        ax.set_xscale("log")
        ax.axvline(dec["us_p50"], color="k", ls="--", lw=1, label=f"median {dec['us_p50']:.1f} us")
        ax.axvline(dec["us_p99"], color="C3", ls="--", lw=1, label=f"P99 {dec['us_p99']:.1f} us")
        ax.axvline(280, color="0.5", ls=":", lw=1, label="MOSAIC's paper: ~280 us (its machine)")
        ax.set_xlabel("time of one admission decision (us, log; measured in the executor)")
        ax.set_ylabel("decisions")
        ax.set_title(f"{a['policy']}: {dec['count']} decisions", fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out, dpi=120)
        plt.close(fig)
        made.append(out)
    return made
