"""How a big run's report stays light (issue #43): a run folder of N endpoints
over M minutes, tiled from a real run's files (its requests, link logs and
node samples repeated in time and across endpoints: the sizes of such a run,
not its measurements), then report.build on it, the size of report.html, and
the time headless Chromium takes to draw every figure of it.

    .venv/bin/python bench/report_scale.py [RUN_DIR] [--endpoints 100] [--minutes 10]

RUN_DIR: a finished run (default: the newest runs/*-quickstart). Prints the
numbers and their targets (under 20 MB, under 3 s to open)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from continuum.results import report  # noqa: E402


def tile_requests(src: Path, out: Path, endpoints: int, seconds: float) -> int:
    """raw/requests-* and raw/server-* of `endpoints` endpoints, each repeating the source's
    requests (warm-up once, then the measured ones again and again) for `seconds`."""
    raw = src / "raw"
    req = pd.concat([pd.read_csv(p) for p in sorted(raw.glob("requests-*.csv"))], ignore_index=True)
    srv = pd.concat([pd.read_csv(p) for p in sorted(raw.glob("server-*.csv"))], ignore_index=True)
    measured = req[req["phase"] == "measure"]
    span = int(measured["t_drawn"].max() - measured["t_drawn"].min()) + 1_000_000_000
    times = [c for c in req.columns if c.startswith("t_") and c != "t_drawn"] + ["t_drawn"]
    stimes = [c for c in srv.columns if c.startswith("t_")]
    (out / "raw").mkdir(parents=True)
    n = 0
    copies = max(1, int(seconds * 1e9 // span))
    warm = req[req["phase"] == "warmup"]
    for k in range(endpoints):
        ep = f"endpoint{k}"
        parts, sparts = [], []
        for c, rows in [(-1, warm)] + [(c, measured) for c in range(copies)]:
            m = rows.copy()
            s = srv[srv["request_id"].isin(m["request_id"])].copy()
            shift = max(c, 0) * span
            for col in times:
                m[col] = m[col] + shift
            for col in stimes:
                s[col] = s[col] + shift
            for f in (m, s):  # each copy's ids its own, a request and its server row still matching
                f["request_id"] = f"{ep}-{c}-" + f["request_id"].astype(str)
            parts.append(m)
            sparts.append(s)
        r, s = pd.concat(parts, ignore_index=True), pd.concat(sparts, ignore_index=True)
        r["endpoint"] = ep
        if "endpoint" in s:
            s["endpoint"] = ep
        r.to_csv(out / "raw" / f"requests-{ep}-1.csv", index=False)
        s.to_csv(out / "raw" / f"server-edge0-{ep}.csv", index=False)
        n += len(r)
    return n


def tile_log(src: Path, dst: Path, seconds: float) -> None:
    """An mm-link log repeated in time until it covers `seconds`."""
    header, rows = [], []
    for line in src.read_text().splitlines():
        (header if line.startswith("#") else rows).append(line)
    last = int(rows[-1].split(" ", 1)[0])
    with open(dst, "w") as f:
        f.write("\n".join(header) + "\n")
        shift = 0
        while shift < seconds * 1000:
            for line in rows:
                t, rest = line.split(" ", 1)
                f.write(f"{int(t) + shift} {rest}\n")
            shift += last + 1


def build(src: Path, out: Path, endpoints: int, minutes: float) -> int:
    seconds = minutes * 60
    n = tile_requests(src, out, endpoints, seconds)
    (out / "links").mkdir()
    for d in ("uplink", "downlink"):
        tile_log(src / "links" / f"endpoint0.{d}.log", out / "links" / f"long.{d}.log", seconds)
        for k in range(endpoints):
            (out / "links" / f"endpoint{k}.{d}.log").symlink_to(f"long.{d}.log")
    nodes = pd.read_csv(src / "nodes.csv")
    span = int(nodes["time_ns"].max() - nodes["time_ns"].min()) + 500_000_000
    frames = []
    for c in range(int(seconds * 1e9 // span) + 2):
        t = nodes.copy()
        t["time_ns"] += c * span
        frames.append(t[t["node"] != "endpoint0"])
        for k in range(endpoints):
            frames.append(t[t["node"] == "endpoint0"].assign(node=f"endpoint{k}"))
    pd.concat(frames).to_csv(out / "nodes.csv", index=False)
    man = json.loads((src / "manifest.json").read_text())
    man["nodes"] = {**{k: v for k, v in man["nodes"].items() if k != "endpoint0"},
                    **{f"endpoint{k}": man["nodes"]["endpoint0"] for k in range(endpoints)}}
    man["experiment"] = f"{man.get('experiment', 'run')} tiled to {endpoints} endpoints x {minutes:g} min (bench/report_scale.py)"
    (out / "manifest.json").write_text(json.dumps(man))
    for f in ("experiment.toml", "verification.json"):
        if (src / f).exists():
            shutil.copy(src / f, out / f)
    return n


def _chromium(page: Path) -> tuple[str, float]:
    exe = shutil.which("chromium")
    if exe is None:
        sys.exit("chromium is not installed: ./setup.sh --test-builds installs Debian's package")
    t = time.monotonic()
    p = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=60000", "--dump-dom",
                        page.resolve().as_uri()], capture_output=True, text=True, timeout=300)
    return p.stdout, time.monotonic() - t


def open_time(page: Path) -> tuple[float, float]:
    """Headless Chromium's wall time to open the page and draw every figure, less its own start-up
    (a blank page's, measured right before): an upper bound of what a reader waits (the page's own
    clock runs on the browser's virtual time there). Returns (that, the blank page's)."""
    blank = page.parent / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body><p>blank</p></body></html>")
    base = min(_chromium(blank)[1] for _ in range(3))
    dom, wall = min((_chromium(page) for _ in range(2)), key=lambda r: r[1])
    if 'data-figures="drawn"' not in dom:
        sys.exit("the page did not finish drawing its figures")
    return wall - base, base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", type=Path, nargs="?")
    ap.add_argument("--endpoints", type=int, default=100)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--keep", type=Path, help="build the tiled folder here and keep it")
    a = ap.parse_args()
    src = a.run_dir or max((REPO / "runs").glob("*-quickstart"), default=None)
    if src is None:
        sys.exit("no run to tile: give RUN_DIR, or run `continuum run configs/quickstart.toml` first")
    with tempfile.TemporaryDirectory(prefix="report-scale-") as tmp:
        out = a.keep or Path(tmp) / "run"
        t = time.monotonic()
        n = build(src, out, a.endpoints, a.minutes)
        made_s = time.monotonic() - t
        t = time.monotonic()
        summary, made = report.build(out)
        build_s = time.monotonic() - t
        page = out / "report.html"
        size = page.stat().st_size / 2**20
        opened, base = open_time(page)
        print(f"source {src.name}: {a.endpoints} endpoints x {a.minutes:g} min, {n} requests tiled in {made_s:.1f} s")
        print(f"report.build (requests.csv, summary, {len(made) - 1} plots, report.html): {build_s:.1f} s")
        print(f"report.html: {size:.1f} MB (target < 20 MB: {'ok' if size < 20 else 'OVER'})")
        print(f"headless Chromium: opened and every figure drawn in {opened:.2f} s (its start-up, {base:.2f} s, left out; "
              f"target < 3 s: {'ok' if opened < 3 else 'OVER'})")


if __name__ == "__main__":
    main()
