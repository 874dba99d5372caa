"""SMEC's figure: its edge manager's decisions, the requests' budgets and,
with several apps, each app's SLO satisfaction, on the run's time axis."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from continuum.results.plots import TIME_LABEL, Plot, shade  # noqa: E402
from continuum.results.timeline import Timeline  # noqa: E402


def figures(p: Plot, part: dict) -> list[Path]:
    out = p.folder / "smec_manager.png"
    return [out] if manager(p.run_dir, p.df, p.tl, p.xlim, out) else []


def manager(run_dir: Path, df: pd.DataFrame, tl: Timeline, xlim: tuple[float, float], out: Path) -> bool:
    """SMEC's edge manager: what each app held over time (its decisions),
    each request's budget when its processing started, and, with several
    apps, each app's SLO satisfaction per second (all measured)."""
    path = run_dir / "raw" / "smec-decisions.csv"
    if not path.exists() or "budget_ms" not in df:
        return False
    dec = pd.read_csv(path).dropna(subset=["cpus"])  # rows without cpus: a server adopted
    if dec.empty:
        return False
    man = json.loads((run_dir / "manifest.json").read_text()) if (run_dir / "manifest.json").exists() else {}
    em, apps = man.get("edge_manager") or {}, man.get("apps") or {}
    mode = em.get("mode", "quota")
    several = dec["app"].nunique() > 1
    fig, axes = plt.subplots(3 if several else 2, 1, figsize=(9, 8 if several else 5.5), sharex=True)
    q, b = axes[0], axes[1]
    colours = {a: f"C{i}" for i, a in enumerate(dict.fromkeys(dec["app"]))}
    top = float((dec["units"] if several and mode == "quota" else dec["cpus"]).max())
    for i, (app, d) in enumerate(dec.groupby("app", sort=False)):
        t = tl.seconds(d["t_ns"])
        y = d["units"] if several and mode == "quota" else d["cpus"]
        lift = (i - (len(colours) - 1) / 2) * 0.02 * top  # apps holding the same do not hide each other
        q.step(list(t) + [xlim[1]], list(y + lift) + [y.iloc[-1] + lift], where="post", color=colours[app], label=str(app))
    q.set_ylabel({"cores": "cores held\n(affinity)", "quota": "CPU weight (steps)\nof the node's CPUs" if several
                  else "server's CPU quota\n(CPUs)"}.get(mode, "held"))
    q.set_ylim(0, max(top * 1.2, 0.5))
    q.set_title(f"SMEC's edge manager ({mode} mode, its decisions): {int((dec['why'].str.startswith('urgent')).sum())} raises "
                f"on urgency, {int((dec['why'].str.startswith('idle')).sum())} returns when under 60% used", fontsize=10)
    if several:
        q.legend(fontsize=8, loc="upper left", ncol=len(colours), title="(lines lifted by 2% apart where they overlap)",
                 title_fontsize=7)
    r = df.dropna(subset=["budget_ms"])
    for app, d in (r.groupby("app", sort=False) if several and "app" in r else [("", r)]):
        kept, dropped = d[d["status"] != "early_drop"], d[d["status"] == "early_drop"]
        c = colours.get(app, "C0")
        b.plot(tl.seconds(kept["t_server_start"]), kept["budget_ms"], ".", ms=3, color=c,
               label=f"{app + ': ' if app else ''}budget at processing start")
        if len(dropped):
            b.plot(tl.seconds(dropped["t_server_start"]), dropped["budget_ms"], "x", ms=4, color=c if app else "r",
                   label=f"{app + ': ' if app else ''}spent: dropped early")
    b.axhline(0, color="k", lw=0.8)
    quota = em.get("quota")
    if quota and not several:
        b.axhline(quota["urgency_ms"], color="C1", ls="--", lw=1, label=f"urgent below {quota['urgency_ms']:g} ms")
    b.set_ylabel("request budget (ms)")
    b.legend(fontsize=7, loc="lower left", ncol=2 if several else 1)
    if several:
        s_ax = axes[2]
        m = df[(df["phase"] == "measure") & df["app"].notna()]
        for app, d in m.groupby("app", sort=False):
            slo = (apps.get(app) or {}).get("slo_ms")
            if not slo:
                continue
            sec = np.floor(tl.seconds(d["t_drawn"]))
            met = ((d["status"] == "ok") & (d["e2e_ms"].astype(float) <= slo)).groupby(sec).mean()
            bins = np.arange(met.index.min(), met.index.max() + 1)
            s_ax.stairs(met.reindex(bins).to_numpy() * 100, np.append(bins, bins[-1] + 1), baseline=None, color=colours.get(app, "k"),
                        label=f"{app} (SLO {slo:g} ms)")
        s_ax.set_ylabel("SLO met, per second\n(% of requests drawn)")
        s_ax.set_ylim(-3, 103)
        s_ax.legend(fontsize=8, loc="lower left", ncol=4)
    axes[-1].set_xlabel(TIME_LABEL)
    for ax in axes:
        shade(ax, tl, xlim, legend=False)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True
