"""The mobility experiment's analysis: for each arm's run (the campaign's
points, results/runs/campaign-mobility-drive: campaign.py),
end-to-end latency and the share of requests answered within the SLO, over
the whole measured window and around the recorded handovers (requests drawn
in the first NEAR_S seconds after a handover, against all the others), the
interruption each handover caused (timeline.csv), and two figures: latency
over time per arm on one time axis with the handovers marked, and latency
against the time from the nearest handover, pooled over them.

    analyze.py RESULTS_FOLDER   (writes summary.csv and the figures there, prints the table)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import campaign  # noqa: E402
from campaign import ARMS, SLO_MS  # noqa: E402

FOLDER = "campaign-mobility-drive"  # the campaign's folder under results/runs
NEAR_S = 1.0  # "around a handover": drawn within this long after it
COLOURS = {"edge": "tab:blue", "edge-no-outage": "tab:gray", "cloud": "tab:orange", "edge-smec": "tab:green",
           "stay": "tab:brown", "follow": "tab:cyan", "stay-smec": "tab:olive", "follow-smec": "tab:pink"}


def load(results: Path) -> dict[str, dict]:
    out = {}
    done = campaign.runs(results / "runs" / FOLDER)
    for arm in ARMS:
        if arm not in done:
            continue
        d = done[arm]
        man = json.loads((d / "manifest.json").read_text())
        df = pd.read_csv(d / "requests.csv")
        start = man["trace_restarts_unix_ns"][0]
        t = pd.read_csv(d / "timeline.csv") if (d / "timeline.csv").exists() else None
        out[arm] = {"run": d, "df": df, "start": start,
                    "offsets": [e["t_s"] for e in man["timeline"] if e["kind"] == "outage"],  # the handovers
                    "timeline": None if t is None else t[t["change"].str.startswith("handover")],
                    "moves": None if t is None else t[t["change"].str.startswith("to ")]}
    # the control arm has no timeline: its handovers are the drive's, at the same offsets as the others'
    offsets = next((a["offsets"] for a in out.values() if a["offsets"]), [])
    for a in out.values():
        a["handovers"] = sorted({a["start"] + t * 1e9 for t in (a["offsets"] or offsets)})
    return out


def in_first_cell(t_drawn: pd.Series, handovers: list[float]) -> pd.Series:
    """Whether each request was drawn while the UE was in the drive's first cell: the drive's window
    hands over between two cells (campaign.sites()), so every other period is the first cell's."""
    i = np.searchsorted(np.asarray(handovers), t_drawn.to_numpy(), side="right")
    return pd.Series(i % 2 == 0, index=t_drawn.index)


def to_nearest(t_drawn: pd.Series, handovers: list[float]) -> pd.Series:
    """Seconds from the nearest handover to each request's drawing (negative: before it)."""
    h = np.asarray(handovers)
    d = (t_drawn.to_numpy()[:, None] - h[None, :]) / 1e9
    return pd.Series(d[np.arange(len(d)), np.abs(d).argmin(axis=1)], index=t_drawn.index)


def since_handover(t_drawn: pd.Series, handovers: list[float]) -> pd.Series:
    """Seconds from the latest handover at or before each request was drawn (NaN before the first)."""
    h = np.asarray(handovers)
    i = np.searchsorted(h, t_drawn.to_numpy(), side="right") - 1
    out = np.where(i >= 0, (t_drawn.to_numpy() - h[np.clip(i, 0, None)]) / 1e9, np.nan)
    return pd.Series(out, index=t_drawn.index)


def figures(arms: dict[str, dict], results: Path) -> None:
    fig, axes = plt.subplots(len(arms), 1, figsize=(10, 2.6 * len(arms)), sharex=True, sharey=True, squeeze=False)
    for ax, (arm, a) in zip(axes[:, 0], arms.items()):
        df = a["df"][a["df"]["phase"] == "measure"]
        ok = df[df["status"] == "ok"]
        x = (ok["t_drawn"] - a["start"]) / 1e9
        ax.plot(x, ok["e2e_ms"], ".", ms=3, color=COLOURS[arm], label=f"{arm}: answered ({len(ok)} of {len(df)})")
        lost = df[df["status"] != "ok"]
        if len(lost):
            ax.plot((lost["t_drawn"] - a["start"]) / 1e9, np.full(len(lost), 2e4), "x", color="tab:red", ms=4,
                    label=f"not answered ({len(lost)}), drawn at the top")
        out = "50 ms out" if a["offsets"] else "no outage: the control"
        for k, h in enumerate(a["handovers"]):
            ax.axvline((h - a["start"]) / 1e9, color="tab:purple", ls="--", lw=1, label=f"handover (recorded, {out})" if k == 0 else None)
        ax.axhline(SLO_MS, color="0.3", ls=":", lw=1, label=f"SLO {SLO_MS} ms")
        ax.set_yscale("log")
        ax.set_ylabel("end-to-end (ms)")
        ax.legend(loc="upper left", fontsize=7, ncol=2)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time since the repetition's start (s; the drive's clock; warm-up: the first 5 s, left out)")
    fig.suptitle("W1 on a recorded 5G drive: every request's end-to-end latency (measured)")
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    fig.savefig(results / "latency_over_time.png", dpi=110)
    plt.close(fig)

    # one panel per comparison (eight arms on one axis hide each other): where the service runs, and
    # whether it follows the UE (the edge arm in both, as the reference)
    groups = [[a for a in ("edge", "edge-no-outage", "cloud", "edge-smec") if a in arms],
              [a for a in ("edge", "stay", "follow", "stay-smec", "follow-smec") if a in arms]]
    groups = [g for g in groups if g]
    fig, axes = plt.subplots(len(groups), 1, figsize=(9, 4.0 * len(groups)), sharex=True, sharey=True, squeeze=False)
    for ax, group in zip(axes[:, 0], groups):
        for arm in group:
            a = arms[arm]
            df = a["df"][(a["df"]["phase"] == "measure") & (a["df"]["status"] == "ok")]
            s = to_nearest(df["t_drawn"], a["handovers"])
            near = df[(s > -2) & (s < 4)]
            what = " (answered only: its early drops count in summary.csv)" if "smec" in arm else ""
            ax.plot(s[near.index], near["e2e_ms"], ".", ms=4, alpha=0.5, color=COLOURS[arm], label=arm + what)
            bins = np.floor(s[near.index] / 0.5) * 0.5
            med = near["e2e_ms"].groupby(bins).median()
            ax.step(med.index, med.values, where="post", color=COLOURS[arm], lw=1.5)
        ax.axvspan(0, 0.05, color="tab:purple", alpha=0.3, label="the handover's 50-ms outage")
        ax.axhline(SLO_MS, color="0.3", ls=":", lw=1, label=f"SLO {SLO_MS} ms")
        ax.set_yscale("log")
        ax.set_ylabel("end-to-end (ms)")
        ax.legend(fontsize=7, loc="upper right")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time from the nearest handover to the request's drawing (s), pooled over the handovers")
    axes[0, 0].set_title("Around the handovers (measured): requests (dots), 0.5-s bin medians (steps)", fontsize=10)
    fig.tight_layout()
    fig.savefig(results / "around_handovers.png", dpi=110)
    plt.close(fig)


def geography_figure(arms: dict[str, dict], results: Path) -> None:
    """stay and follow (with edge, whose core never changes): each request's downlink time, which a
    small answer makes the core's one-way delay plus the drive's downlink, over the run."""
    shown = [arm for arm in ("edge", "stay", "follow", "stay-smec", "follow-smec") if arm in arms]
    if "stay" not in shown and "follow" not in shown:
        return
    fig, axes = plt.subplots(len(shown), 1, figsize=(10, 2.3 * len(shown)), sharex=True, sharey=True, squeeze=False)
    for ax, arm in zip(axes[:, 0], shown):
        a = arms[arm]
        df = a["df"][(a["df"]["phase"] == "measure") & (a["df"]["status"] == "ok")]
        x = (df["t_drawn"] - a["start"]) / 1e9
        ax.plot(x, df["downlink_ms"], ".", ms=3, color=COLOURS[arm], label=f"{arm}: downlink per request")
        h = [(t - a["start"]) / 1e9 for t in a["handovers"]]
        edges = [0.0, *h, float(x.max()) if len(x) else 0.0]
        for k in range(1, len(edges) - 1, 2):  # the other cell's periods
            ax.axvspan(edges[k], edges[k + 1], color="tab:purple", alpha=0.12, lw=0,
                       label="UE in the other cell (11)" if k == 1 else None)
        for b in range(0, int(edges[-1]) + 10, 10):
            part = df[(x >= b) & (x < b + 10)]["downlink_ms"]
            if len(part):
                ax.hlines(part.median(), b, b + 10, color="k", lw=1.2, label="10-s median" if b == 0 else None)
        ax.set_yscale("log")
        ax.set_ylabel("downlink (ms)")
        ax.legend(loc="upper left", fontsize=7, ncol=3)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time since the repetition's start (s; warm-up, the first 5 s, left out)")
    fig.suptitle("Two edge sites, one per cell (modelled core: 0.5 ms to the serving cell's site, 3 ms to the other; "
                 "latency measured)", fontsize=9)
    fig.tight_layout()
    fig.savefig(results / "edge_sites.png", dpi=110)
    plt.close(fig)


def summary(arms: dict[str, dict]) -> pd.DataFrame:
    rows = []
    for arm, a in arms.items():
        df = a["df"][a["df"]["phase"] == "measure"]
        s = since_handover(df["t_drawn"], a["handovers"])
        near = s.notna() & (s < NEAR_S)
        row = {"arm": arm, "requests": len(df), "answered": int((df["status"] == "ok").sum())}
        for label, part in (("all", df), ("near", df[near]), ("away", df[~near])):
            ok = part[part["status"] == "ok"]["e2e_ms"]
            row[f"{label}_n"] = len(part)
            row[f"{label}_median_ms"] = round(float(ok.median()), 1) if len(ok) else None
            row[f"{label}_p99_ms"] = round(float(ok.quantile(0.99)), 1) if len(ok) else None
            row[f"{label}_slo_share"] = round(float(((part["status"] == "ok") & (part["e2e_ms"] <= SLO_MS)).mean()), 3) if len(part) else None
        # the downlink (a 200-byte answer) shows the core's one-way delay: stay's edge0 is far from the other cell
        first = in_first_cell(df["t_drawn"], a["handovers"])
        ok = df["status"] == "ok"
        for label, part in (("first_cell", df[ok & first]), ("other_cell", df[ok & ~first])):
            row[f"downlink_median_{label}_ms"] = round(float(part["downlink_ms"].median()), 2) if len(part) else None
        t = a["timeline"]
        row["handovers"] = len(a["handovers"])
        row["outages"] = len(t) if t is not None else 0
        row["interruption_median_ms"] = round(float(t["interruption_ms"].median()), 1) if t is not None else None
        row["interruption_max_ms"] = round(float(t["interruption_ms"].max()), 1) if t is not None else None
        m = a["moves"]
        row["moves"] = len(m) if m is not None else 0
        row["requests_across_moves"] = int(m["across"].sum()) if m is not None and len(m) else 0
        rows.append(row)
    return pd.DataFrame(rows)


def main(results: Path) -> int:
    arms = load(results)
    if not arms:
        print(f"no complete point under {results}/runs/{FOLDER}: run experiments/mobility/run first", file=sys.stderr)
        return 2
    figures(arms, results)
    geography_figure(arms, results)
    s = summary(arms)
    s.to_csv(results / "summary.csv", index=False)
    print(s.T.to_string(header=False))
    print(f"figures: {results / 'latency_over_time.png'}, {results / 'around_handovers.png'}, {results / 'edge_sites.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
