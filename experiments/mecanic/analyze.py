"""The experiment's figures and tables, from what lab.py and the cache arms
wrote (experiments/mecanic/results):

    analyze.py RESULTS

priority.png: High's latency through the stage's path over time (measured per
datagram, end to end), mecanic and plain on one time axis, with Low's offered
load; keyword.png: the latency of High, URGENT-marked Low and the rest of Low
(mecanic; CDF); matching.png: the UDP app's throughput against the number of
patterns, matching in the app or reading the NIC's result; cache.png: each
download's time per arm. summary.csv: every number report.md quotes."""

from __future__ import annotations

import csv
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
from campaign import ARMS  # noqa: E402
from lab import HIGH, LOW, PPS  # noqa: E402


def rx(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep=" ", names=["recv_ns", "seq", "sent_ns", "marked"])


def priority_figure(res: Path, out: Path) -> None:
    """Each arm on its own clock: 0 is its High's first datagram (both flows start together)."""
    fig, (lat, load) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    phase = 0.0
    for arm, colour in (("plain", "tab:red"), ("mecanic", "tab:blue")):
        folder = res / "runs" / "priority" / arm
        high, low = rx(folder / "high.rx"), rx(folder / "low.rx")
        t0 = int(high["sent_ns"].min())
        t = (high["sent_ns"] - t0) / 1e9
        lat.plot(t, (high["recv_ns"] - high["sent_ns"]) / 1e6, ".", ms=1.5, color=colour, label=f"High through {arm}")
        sent = (low["sent_ns"] - t0) / 1e9
        phase = float(sent.min())  # Low starts after one phase
        edges = np.arange(0, float(t.max()) + 0.25, 0.25)
        got = np.histogram(sent, edges)[0] * (1228 * 8) / 0.25 / 1e6
        load.step(edges[:-1], got, where="post", color=colour, lw=1, label=f"Low delivered ({arm})")
    lat.set_yscale("log")
    lat.set_ylabel("High's latency, end to end (ms)")
    lat.set_title(f"Priority under contention (measured): High at {HIGH:g}x of a 12 Mbit/s stage, Low stepping 0 -> "
                  f"{LOW[0]:g}x -> {LOW[1]:g}x", fontsize=10)
    lat.legend(fontsize=8, markerscale=6)
    rate = PPS * 1228 * 8 / 1e6
    load.step([0, phase, 2 * phase, 3 * phase], [0, LOW[0] * rate, LOW[1] * rate, LOW[1] * rate], where="post", color="k", ls="--", lw=1,
              label="Low offered")
    load.axhline(rate, color="0.5", lw=0.8, ls=":", label="the stage's rate")
    load.set_ylabel("Low (Mbit/s,\nby send time)")
    load.set_xlabel("time since High's first datagram, each arm its own run (s)")
    load.legend(fontsize=7, ncol=4, loc="upper left")
    for ax in (lat, load):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "priority.png", dpi=110)
    plt.close(fig)


def keyword_figure(res: Path, out: Path) -> None:
    folder = res / "runs" / "priority" / "mecanic"
    high, low = rx(folder / "high.rx"), rx(folder / "low.rx")
    busy = int(low["sent_ns"].min())  # from Low's start on: contention
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, d in (("High", high[high["sent_ns"] >= busy]), ("Low marked URGENT", low[low["marked"] == 1]),
                     ("Low, the rest", low[low["marked"] == 0])):
        ms = np.sort((d["recv_ns"] - d["sent_ns"]).to_numpy() / 1e6)
        ax.plot(ms, np.arange(1, len(ms) + 1) / len(ms), label=f"{label} ({len(ms)} datagrams)")
    ax.set_xscale("log")
    ax.set_xlabel("latency, end to end (ms; log scale)")
    ax.set_ylabel("fraction of datagrams")
    ax.set_title("L7 priority through MECaNIC (measured, while Low is on): Low's datagrams marked URGENT take\n"
                 "a class of their own (High's queues, latency priority 200 over High's 100) and leave with High's latency", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "keyword.png", dpi=110)
    plt.close(fig)


def matching_figure(res: Path, out: Path) -> pd.DataFrame:
    m = pd.read_csv(res / "matching.csv")
    fig, ax = plt.subplots(figsize=(7, 4))
    for mode, label in (("host", "the app matches (Python, each pattern in turn)"), ("nic", "the app reads the NIC's result")):
        d = m[m["mode"] == mode].sort_values("patterns")
        x = d["patterns"].clip(lower=0.5)
        ax.plot(x, d["processed_mbit"], "o-", label=label)
    ax.plot(m.groupby("patterns")["offered_mbit"].mean().index.to_series().clip(lower=0.5), m.groupby("patterns")["offered_mbit"].mean(),
            "k--", lw=0.8, label="offered")
    ax.set_xscale("log")
    ax.set_xticks([0.5, 1, 10, 100, 1000], ["0", "1", "10", "100", "1000"])
    ax.set_xlabel("patterns")
    ax.set_ylabel("datagrams processed (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.set_title("Payload pattern matching (measured): one UDP app (Python) on one core, 1400-byte datagrams;\n"
                 "~980 Mbit/s (87k datagrams/s) is what the app receives at most; 1000 patterns slow the emulator's stage", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "matching.png", dpi=110)
    plt.close(fig)
    return m


def cache_runs(res: Path) -> dict[str, Path]:
    """The cache campaign's complete points, by arm, in ARMS' order."""
    got = campaign.runs(res / "runs" / "campaign-mecanic-cache")
    return {arm: got[arm] for arm in ARMS if arm in got}


def cache_figure(runs: dict[str, Path], out: Path) -> list[dict]:
    rows = []
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (arm, d) in enumerate(runs.items()):
        df = pd.read_csv(d / "requests.csv", dtype={"request_id": str})
        m = df[(df["phase"] == "measure") & (df["status"] == "ok")]
        if "app" in m and (m["app"] == "dl").any():  # the stress arms' mix: the download app's own requests
            m = m[m["app"] == "dl"]
        ms = m["e2e_ms"].astype(float).to_numpy()
        ax.boxplot(ms, positions=[i], widths=0.5, showfliers=True)
        hits = int((m["nic_cache"] == "hit").sum()) if "nic_cache" in m else 0
        rows.append({"arm": arm, "downloads": len(ms), "answered_by_nic": hits, "p50_ms": round(float(np.median(ms)), 1),
                     "p99_ms": round(float(np.percentile(ms, 99)), 1), "mean_ms": round(float(ms.mean()), 1),
                     "downlink_p50_ms": round(float(m["downlink_ms"].median()), 1), "server_p50_ms": round(float(m["server_ms"].median()), 2)})
    ax.set_xticks(range(len(runs)), list(runs))
    ax.set_ylabel("download time, request to last byte (ms)")
    ax.set_title("Response caching (measured): 4 MB files through a 5G mmWave downlink (Lumos5G)", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(out / "cache.png", dpi=110)
    plt.close(fig)
    return rows


def main() -> int:
    res = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "results"
    summary: list[dict] = []
    if (res / "priority.csv").exists():
        if (res / "runs" / "priority").is_dir():
            priority_figure(res, res)
            keyword_figure(res, res)
        else:  # the lab's receive logs are not committed: its figures stay as drawn from them
            print(f"priority, keyword: no receive logs in {res / 'runs' / 'priority'} (`run priority` makes them); "
                  "their figures are left as they are")
        summary += [{"evaluation": "priority", **r} for r in csv.DictReader(open(res / "priority.csv"))]
    if (res / "matching.csv").exists():
        summary += [{"evaluation": "matching", **r} for r in matching_figure(res, res).to_dict("records")]
    runs = cache_runs(res)
    if runs:
        summary += [{"evaluation": "cache", **r} for r in cache_figure(runs, res)]
        (res / "cache_runs.json").write_text(json.dumps({a: d.name for a, d in runs.items()}, indent=1) + "\n")
    keys = list(dict.fromkeys(k for r in summary for k in r))
    with open(res / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows(summary)
    print(f"wrote {res}/summary.csv and the figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
