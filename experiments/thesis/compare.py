"""Two runs of the thesis' points side by side: per point, the medians and
P99s of the uplink, downlink and end-to-end latency in each run, and their
ratio. Made to check that a change of the path that should not change what
is measured (e.g. `--segmentation kernel` vs `emulator`) does not:

    experiments/thesis/run --quick --segmentation kernel --out runs/thesis-kernel
    experiments/thesis/run --quick --segmentation emulator --out runs/thesis-emulator
    .venv/bin/python experiments/thesis/compare.py runs/thesis-kernel runs/thesis-emulator

Prints a markdown table; a point missing or failed in either run is named.
Short (--quick) runs carry a few dozen requests per point, so their P99s
are the few slowest requests and move by tens of percent between any two
runs; the medians are the comparison."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

METRICS = (("uplink_ms", "uplink"), ("downlink_ms", "downlink"), ("e2e_ms", "end-to-end"))


def points(folder: Path) -> dict[str, dict]:
    """Each completed point's summary and segmentation, by name."""
    index = folder / "points.json"
    if not index.exists():
        sys.exit(f"{index} not found: is {folder} a folder written by experiments/thesis/run?")
    out = {}
    for r in json.loads(index.read_text())["points"]:
        if r["status"] != "complete" or not r.get("run_dir"):
            continue
        run = folder / r["run_dir"]
        mobile = json.loads((run / "manifest.json").read_text()).get("mobile", {})
        out[r["point"]] = {"summary": json.loads((run / "summary.json").read_text()), "segmentation": mobile.get("segmentation", "?")}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path, help="a results folder of experiments/thesis/run")
    ap.add_argument("b", type=Path, help="the other")
    args = ap.parse_args(argv)
    a, b = points(args.a), points(args.b)
    header = "| point | segmentation A / B | requests A / B |"
    rule = "|---|---|---|"
    for _, name in METRICS:
        header += f" {name} P50 A / B ms (B/A) | {name} P99 A / B ms |"
        rule += "---|---|"
    print(f"A = {args.a}, B = {args.b}\n")
    print(header)
    print(rule)
    ratios: dict[str, list[float]] = {m: [] for m, _ in METRICS}
    for p in [p for p in a if p in b]:
        sa, sb = a[p]["summary"], b[p]["summary"]
        row = f"| {p} | {a[p]['segmentation']} / {b[p]['segmentation']} | {sa['answered']} / {sb['answered']} |"
        for m, _ in METRICS:
            ma, mb = sa["metrics"][m], sb["metrics"][m]
            if not ma.get("count") or not mb.get("count"):
                row += " - | - |"
                continue
            ratio = mb["median"] / ma["median"] if ma["median"] else float("nan")
            ratios[m].append(ratio)
            row += f" {ma['median']:.1f} / {mb['median']:.1f} ({ratio:.2f}) | {ma['p99']:.1f} / {mb['p99']:.1f} |"
        print(row)
    missing = sorted(set(a) ^ set(b))
    if missing:
        print(f"\nnot complete in both: {', '.join(missing)}")
    print()
    for m, name in METRICS:
        r = sorted(ratios[m])
        if r:
            print(f"{name} median, B/A over {len(r)} points: from {r[0]:.2f} to {r[-1]:.2f} (middle {r[len(r) // 2]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
