#!/usr/bin/env python3
"""Kill soak: start short experiments and kill each at a random moment with
SIGINT, SIGTERM or SIGKILL (then `continuum destroy RUN_ID`, as a user
would after a kill -9), and count what is left on the host: namespaces,
cgroups, processes, veths, containers, temporary files in the trace cache.
SIGINT and SIGTERM runs must also keep their partial results and a
manifest that says they were interrupted. Prints a table and writes
soak.json; the figures go into docs/reliability.md.

    experiments/reliability/kill_soak.py --runs 100 [--seed 1] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = [str(REPO / ".venv" / "bin" / "python"), "-m", "continuum"]
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}


def config(dir: Path) -> Path:
    text = (REPO / "configs" / "quickstart.toml").read_text()
    text = re.sub(r"(?m)^duration_s = .*$", "duration_s = 6", text)
    text = re.sub(r"(?m)^warmup_s = .*$", "warmup_s = 1", text)
    text = re.sub(r"(?m)^output = .*$", f'output = "{dir / "runs"}"', text)
    text = re.sub(r"(?m)^bank_size = .*$", "bank_size = 4", text)
    f = dir / "soak.toml"
    f.write_text(text)
    return f


def leftovers(run_id: str, run_dir: Path | None, cache: Path) -> dict[str, list[str]]:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    cgroups = [str(p) for root in Path("/sys/fs/cgroup").glob("*/continuum") for p in root.glob(f"{run_id}*")]
    v2 = Path("/sys/fs/cgroup/continuum")
    if v2.is_dir():
        cgroups += [str(p) for p in v2.glob(f"{run_id}*")]
    procs = []
    if run_dir is not None:
        for p in Path("/proc").iterdir():
            if p.name.isdigit():
                try:
                    if str(run_dir).encode() in (p / "cmdline").read_bytes():
                        procs.append(p.name)
                except OSError:
                    pass
    containers = []
    if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        containers = subprocess.run(["docker", "ps", "-aq", "--filter", f"name=ctm-{run_id}"], capture_output=True, text=True).stdout.split()
    return {
        "namespaces": [line.split()[0] for line in ns.splitlines() if line.startswith(f"ctm-{run_id}")],
        "cgroups": cgroups,
        "processes": procs,
        "veths": [line.split(":")[1].strip() for line in links.splitlines() if f"ctm{run_id}" in line or f"ctm-{run_id}" in line],
        "containers": containers,
        "cache_temp_files": [str(p) for p in cache.rglob(".*") if p.is_file()],
    }


def one(i: int, rng: random.Random, work: Path, cache: Path) -> dict:
    d = work / f"run{i}"
    d.mkdir()
    cfg = config(d)
    sig_name = rng.choice(list(SIGNALS))
    delay = rng.uniform(0, 22)  # provisioning, verification, warm-up, measuring, teardown and results
    env = {**os.environ, "CONTINUUM_TRACE_CACHE": str(cache)}
    p = subprocess.Popen([*CLI, "run", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        p.wait(timeout=delay)
        finished_first = True
    except subprocess.TimeoutExpired:
        finished_first = False
        p.send_signal(SIGNALS[sig_name])
        try:
            p.wait(timeout=90)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    reader.join(5)
    out = "".join(lines)
    m = re.search(r"run ([0-9a-f]{8}) -> (\S+)", out)
    run_id, run_dir = (m.group(1), Path(m.group(2))) if m else ("", None)
    destroyed = None
    if sig_name == "SIGKILL" and run_id and not finished_first:
        destroyed = subprocess.run([*CLI, "destroy", run_id], capture_output=True, text=True, env=env).returncode
    left = leftovers(run_id, run_dir, cache) if run_id else leftovers("unknown-run", None, cache)
    status = None
    partial = None
    if run_dir is not None and (run_dir / "manifest.json").exists():
        status = json.loads((run_dir / "manifest.json").read_text()).get("status")
        partial = (run_dir / "requests.csv").exists()
    return {"i": i, "signal": sig_name, "delay_s": round(delay, 2), "finished_before_signal": finished_first, "exit": p.returncode,
            "run_id": run_id, "destroy_exit": destroyed, "manifest_status": status, "requests_csv": partial,
            "left": {k: v for k, v in left.items() if v}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=REPO / "runs" / "kill-soak")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("kill_soak.py: needs root (it runs experiments)", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(a.seed)
    rows = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        work, cache = Path(tmp), Path(tmp) / "cache"
        cache.mkdir()
        for i in range(a.runs):
            r = one(i, rng, work, cache)
            rows.append(r)
            print(f"{i + 1:>4}/{a.runs} {r['signal']:<7} at {r['delay_s']:>5.1f} s  exit {r['exit']}  "
                  f"{r['manifest_status'] or '(no run folder yet)'}  left: {r['left'] or 'nothing'}", flush=True)
    (a.out / "soak.json").write_text(json.dumps(rows, indent=1) + "\n")
    killed = [r for r in rows if not r["finished_before_signal"]]
    soft = [r for r in killed if r["signal"] != "SIGKILL" and r["manifest_status"] is not None]
    print(f"\n{len(rows)} runs in {time.monotonic() - t0:.0f} s; {len(killed)} killed while running "
          f"({sum(r['signal'] == 'SIGINT' for r in killed)} SIGINT, {sum(r['signal'] == 'SIGTERM' for r in killed)} SIGTERM, "
          f"{sum(r['signal'] == 'SIGKILL' for r in killed)} SIGKILL + destroy)")
    print(f"runs with anything left: {sum(bool(r['left']) for r in rows)}")
    print(f"SIGINT/SIGTERM runs with a run folder: {len(soft)}; manifest says interrupted: "
          f"{sum(str(r['manifest_status']).startswith('interrupted') for r in soft)}; requests.csv kept: {sum(bool(r['requests_csv']) for r in soft)}")
    print(f"written: {a.out / 'soak.json'}")
    return 1 if any(r["left"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
