"""The A/B's figures and table from what results/ holds: link.csv (linklab.py) and
the runs' comparisons (compare-SCENARIO/compare.json, `continuum compare`).

    analyze.py RESULTS

Writes RESULTS/summary.md (every number side by side, the mean over the
repetitions and their range), RESULTS/link.png (delivered rate against the
trace, CPU per Gbit/s) and RESULTS/delay.png (a probe's one-way delay
percentiles). Percentiles are compared, never summed or averaged across
metrics; a repetition's P99 is its own, the table gives their range."""

from __future__ import annotations

import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from continuum.tracearchive.mahimahi import OPPORTUNITY_BYTES  # noqa: E402

SCENARIOS = {"quickstart": "quickstart (12 / 48 Mbit/s)", "lte": "Verizon LTE trace", "g1200": "1.2 Gbit/s"}
SHORT = {"quickstart": "quickstart\n12 / 48 Mbit/s", "lte": "Verizon LTE\n(trace)", "g1200": "constant\n1.2 Gbit/s"}
EMULATORS = ("mahimahi-link", "mahimahi", "mahimahi-link-ms")
LABEL = {"mahimahi-link": "mahimahi-link", "mahimahi": "upstream mm-link + patches",
         "mahimahi-link-ms": "mahimahi-link --ms-bursts (mm-link's timing)"}
COLOUR = {"mahimahi-link": "tab:blue", "mahimahi": "tab:orange", "mahimahi-link-ms": "tab:green"}
WIDTH = 0.27
GOODPUT = 1472 / OPPORTUNITY_BYTES  # iperf3 counts UDP payload; an opportunity carries 1504 bytes (IP packet + 4-byte TUN header)


def _load(results: Path) -> list[dict]:
    with open(results / "link.csv") as f:
        return list(csv.DictReader(f))


def _group(rows: list[dict], measure: str, key: str) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r["measure"] == measure and r.get(key) not in (None, ""):
            out[(r["scenario"], r["emulator"])].append(float(r[key]))
    return out


def _share(rows: list[dict], direction: str) -> dict[tuple[str, str], list[float]]:
    """Delivered payload as a share of what the trace offered in the same seconds."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r["measure"] == f"{direction} delivered":
            out[(r["scenario"], r["emulator"])].append(float(r["mbit_per_s"]) / (float(r["trace_mbit_per_s"]) * GOODPUT))
    return out


def _cell(xs: list[float], fmt: str = "{:.3g}") -> str:
    if not xs:
        return "-"
    mean = statistics.mean(xs)
    return fmt.format(mean) + (f" ({fmt.format(min(xs))}-{fmt.format(max(xs))})" if len(xs) > 1 else "")


def link_figure(rows: list[dict], out: Path) -> Path:
    scen = [s for s in SCENARIOS if any(r["scenario"] == s for r in rows)]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    width = WIDTH
    for ax, (what, title, ylabel) in zip(axes, (
            ("uplink", "uplink: delivered / trace", "share of the trace's rate"),
            ("downlink", "downlink: delivered / trace", "share of the trace's rate"),
            ("cpu", "emulator CPU per Gbit delivered (uplink and downlink\nruns; at 12-48 Mbit/s mostly its idle ticks)",
             "CPU seconds per Gbit (log)"))):
        for k, e in enumerate(EMULATORS):
            vals = []
            for s in scen:
                if what == "cpu":
                    xs = _group(rows, "uplink delivered", "cpu_s_per_gbit")[(s, e)] + _group(rows, "downlink delivered", "cpu_s_per_gbit")[(s, e)]
                else:
                    xs = _share(rows, what)[(s, e)]
                vals.append(xs)
            x = [i + (k - 1) * width for i in range(len(scen))]
            ax.bar(x, [statistics.mean(v) if v else 0 for v in vals], width, color=COLOUR[e], label=LABEL[e])
            for xi, v in zip(x, vals):  # every repetition, not only the mean
                ax.plot([xi] * len(v), v, "k.", ms=4)
        ax.set_xticks(range(len(scen)), [SHORT[s] for s in scen], fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
        if what == "cpu":
            ax.set_yscale("log")
            ticks = [0.1, 0.2, 0.5, 1, 2, 5, 10]
            ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
            ax.set_ylim(0.1, 10)
        else:
            ax.set_ylim(0, 1.1)
            ax.axhline(1, color="grey", lw=0.8)
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle("The link alone (namespace lab, UDP at 1.3x the trace's peak, 8 s; bars: mean of the repetitions, dots: each)",
                 fontsize=10)
    fig.tight_layout()
    path = out / "link.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def delay_figure(rows: list[dict], out: Path) -> Path:
    scen = [s for s in SCENARIOS if any(r["scenario"] == s for r in rows)]
    fig, axes = plt.subplots(1, len(scen), figsize=(4.4 * len(scen), 3.8), squeeze=False)
    for ax, s in zip(axes[0], scen):
        labels = []
        for i, (load, q) in enumerate((("idle", "p50_ms"), ("idle", "p99_ms"), ("half load", "p50_ms"), ("half load", "p99_ms"))):
            labels.append(f"{load}\n{q[:3].upper()}")
            for k, e in enumerate(EMULATORS):
                xs = _group(rows, f"uplink delay, {load}", q)[(s, e)]
                xpos = i + (k - 1) * WIDTH
                ax.bar(xpos, statistics.mean(xs) if xs else 0, WIDTH, color=COLOUR[e], label=LABEL[e] if i == 0 else None)
                ax.plot([xpos] * len(xs), xs, "k.", ms=4)
        ax.set_xticks(range(4), labels, fontsize=8)
        ax.set_yscale("log")
        ticks = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50]
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_ylim(0.1, 100)
        ax.set_ylabel("one-way delay, ms (log)")
        ax.set_title(SCENARIOS[s], fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("A probe's uplink one-way delay (100 packets/s for 5 s; alone, and beside UDP at half the trace's mean rate); "
                 "each repetition's own percentile", fontsize=9)
    fig.tight_layout()
    path = out / "delay.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def summary(rows: list[dict], results: Path) -> str:
    scen = [s for s in SCENARIOS if any(r["scenario"] == s for r in rows)]
    reps = max((int(r["rep"]) for r in rows), default=0)
    lines = ["# mahimahi-link against upstream mm-link (with mahimahi-patches/): the figures", "",
             f"Made by analyze.py from link.csv ({reps} repetitions per scenario and emulator) and compare-*/. "
             "Each cell: the mean over the repetitions, their range in brackets. Delivered rates are UDP payload "
             f"(1472 of each 1504-byte opportunity: a full share is {GOODPUT:.3f} of the trace's rate, shown here as 1.00).", "",
             "## The link alone", "",
             "| scenario | emulator | uplink delivered / trace | downlink delivered / trace | uplink Mbit/s (trace) | "
             "downlink Mbit/s (trace) | CPU s per Gbit, uplink | CPU s per Gbit, downlink |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for s in scen:
        for e in EMULATORS:
            if not any(r["scenario"] == s and r["emulator"] == e for r in rows):
                continue
            g = lambda m, k, s=s, e=e: _group(rows, m, k)[(s, e)]  # noqa: E731
            lines.append(f"| {SCENARIOS[s]} | {LABEL[e]} | {_cell(_share(rows, 'uplink')[(s, e)], '{:.3f}')} | "
                         f"{_cell(_share(rows, 'downlink')[(s, e)], '{:.3f}')} | "
                         f"{_cell(g('uplink delivered', 'mbit_per_s'))} ({_cell(g('uplink delivered', 'trace_mbit_per_s'))}) | "
                         f"{_cell(g('downlink delivered', 'mbit_per_s'))} ({_cell(g('downlink delivered', 'trace_mbit_per_s'))}) | "
                         f"{_cell(g('uplink delivered', 'cpu_s_per_gbit'))} | {_cell(g('downlink delivered', 'cpu_s_per_gbit'))} |")
    lines += ["", "| scenario | emulator | idle P50 ms | idle P90 | idle P99 | half load P50 ms | half load P90 | half load P99 |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    for s in scen:
        for e in EMULATORS:
            if not any(r["scenario"] == s and r["emulator"] == e for r in rows):
                continue
            g = lambda m, k, s=s, e=e: _group(rows, m, k)[(s, e)]  # noqa: E731
            lines.append(f"| {SCENARIOS[s]} | {LABEL[e]} | " + " | ".join(
                _cell(g(f"uplink delay, {load}", q), "{:.2f}") for load in ("idle", "half load") for q in ("p50_ms", "p90_ms", "p99_ms")) + " |")
    lines += ["", "## Requests (continuum run, W1 at 2 requests/s, 3 x 20 s; `continuum compare`, A = mahimahi-link, "
                  "B = upstream mm-link)", ""]
    for s in SCENARIOS:
        path = results / f"compare-{s}" / "compare.json"
        if not path.exists():
            continue
        c = json.loads(path.read_text())
        lines += [f"### {SCENARIOS[s]}", "",
                  "| metric | n A | n B | median A ms | median B ms | ratio | P99 A ms | P99 B ms | ratio | KS | verdict |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in c["metrics"]:
            if r["group"] != "all":
                continue
            f = lambda v, fmt="{:.2f}": "-" if v is None else fmt.format(v)  # noqa: E731
            lines.append(f"| {r['label']} | {r['n_a']} | {r['n_b']} | {f(r['median_a'])} | {f(r['median_b'])} | "
                         f"{f(r['median_ratio'])} | {f(r['p99_a'])} | {f(r['p99_b'])} | {f(r['p99_ratio'])} | "
                         f"{f(r['ks'], '{:.3f}')} | {r['verdict']} |")
        lines += ["", f"(compare-{s}/compare.md, compare.png)", ""]
    return "\n".join(lines) + "\n"


def main() -> None:
    results = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "results"
    rows = _load(results)
    made = [link_figure(rows, results), delay_figure(rows, results)]
    (results / "summary.md").write_text(summary(rows, results))
    print("wrote", ", ".join(str(p) for p in [*made, results / "summary.md"]))


if __name__ == "__main__":
    main()
