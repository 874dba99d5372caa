#!/usr/bin/env python3
"""The soak (issue #63): one long run at scale, sampled from outside every
10 s, so that what grows shows: each process of the run (its resident
memory, open files and CPU time), the run folder's size against `--dry-run`'s
estimate, and the emulator's queues. A 64-UE shared cell with SMEC's uplink
scheduler and edge manager, half the UEs sending AR frames and half W1's
images to one edge node, in repetitions of `--segment-minutes`: the
emulator, the brokers and SMEC's manager live for the whole run (what a
study of hours leans on), the servers and endpoints for a repetition each.

    experiments/reliability/soak.py --out DIR [--minutes 60] [--segment-minutes 10] [--ues 64]

Writes DIR/soak.toml (the file run), DIR/samples.csv (one row per process
per sample), DIR/folder.csv (the run folder's bytes per sample), DIR/table.md
(per long-lived process: its value 5 minutes in and at the end, the growth
in between; the folder's size against the estimate) and DIR/soak.png; the
run's own folder is under DIR/runs/. As root (namespaces, cgroups)."""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = [str(REPO / ".venv" / "bin" / "python"), "-m", "continuum"]
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
SETTLE_S = 300  # growth is counted from 5 minutes in: caches, pools and the first repetition's starts settle by then

EXPERIMENT = """# experiments/reliability/soak.py: the soak's run (issue #63)
[experiment]
name = "soak"
seed = 1
duration_s = {segment_s}
warmup_s = 5
repetitions = {reps}
output = "{out}"

[nodes.endpoint]
count = {ues}
cpus = 0.1
memory = "256M"

[nodes.edge]
cpus = 1.0
memory = "3G"

[mobile]
uplink = "const-12mbps"     # each UE's channel; the link logs are a line per opportunity (12 Mbit/s: 1000 a
downlink = "const-12mbps"   # second each way per UE): at 48 Mbit/s, 64 UEs for 40 min were estimated at 23 GB

[cell]
uplink = "smec"
downlink = "pf"
uplink_signalling = true
class = "lc"
slo_ms = 300

[workload]
timeout_s = 5

[workload.apps.ar]
app = "augmented_reality"
endpoints = {half}
utilisation = 0.3
slo_ms = 300

[workload.apps.w1]
app = "image_classification"
endpoints = {half}
utilisation = 0.3
slo_ms = 600

[workload.apps.w1.params]
bank_size = 8

[edge.manager]
kind = "smec"
"""


def descendants(root: int) -> set[int]:
    """The processes started from root, at any depth (the edge systems' daemons in the host's namespace)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    found, todo = set(), [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def processes_of(run_id: str, cli_pid: int) -> dict[int, str]:
    """pid -> short name: every process in the run's namespaces, the `continuum run` process and what
    it started in the host's own namespace (SMEC's manager: its role there is "host")."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    pids = {cli_pid: "continuum", **{p: f"host:{_name(p)}" for p in descendants(cli_pid)}}
    for ns in (line.split()[0] for line in out.splitlines() if line.startswith(f"ctm-{run_id}-")):
        role = ns[len(f"ctm-{run_id}-"):]
        got = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for p in map(int, got):
            pids[p] = f"{role}:{_name(p)}"
    return pids


def _name(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [a.decode(errors="replace") for a in argv if a]
    for i in range(len(words) - 3):
        if words[i:i + 2] == ["-m", "workloads"]:
            return f"{words[i + 3]}-{words[i + 2]}"  # e.g. augmented_reality-server
    for w in words:
        base = Path(w).name
        if base not in ("python", "python3", "sh", "env", "setpriv", "ip", "nsenter", "-m") and not base.startswith("-"):
            return base
    return Path(words[0]).name if words else "?"


def sample(pid: int) -> tuple[int, int, float] | None:
    """(resident bytes, open files, CPU seconds) of pid, or None if it is gone."""
    try:
        statm = Path(f"/proc/{pid}/statm").read_text().split()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    if stat[0] == "Z":
        return None  # ended, not yet reaped: nothing left to measure
    return int(statm[1]) * PAGE, fds, (int(stat[11]) + int(stat[12])) / TICK


def folder_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--segment-minutes", type=float, default=10.0)
    ap.add_argument("--ues", type=int, default=64)
    ap.add_argument("--sample-s", type=float, default=10.0)
    ap.add_argument("--settle-s", type=float, default=SETTLE_S, help="growth counted from this far in (default 300)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        ap.error("run it as root (the run makes namespaces and cgroups)")
    if a.ues < 2 or a.ues % 2:
        ap.error("--ues: an even number, at least 2 (half AR, half W1)")
    a.out.mkdir(parents=True, exist_ok=True)
    segment_s = max(10.0, a.segment_minutes * 60 - 5)
    reps = max(1, round(a.minutes / a.segment_minutes))
    cfg = a.out / "soak.toml"
    cfg.write_text(EXPERIMENT.format(segment_s=f"{segment_s:g}", reps=reps, out=a.out / "runs", ues=a.ues, half=a.ues // 2))
    dry = subprocess.run([*CLI, "run", "--dry-run", str(cfg)], capture_output=True, text=True, cwd=a.out)
    if dry.returncode != 0:
        print(dry.stdout[-3000:] + dry.stderr[-3000:], file=sys.stderr)
        return 1
    m = re.search(r"disk: about ([\d.]+) (MB|GB)", dry.stdout)
    estimate = float(m.group(1)) * (1e9 if m.group(2) == "GB" else 1e6) if m else float("nan")
    print(f"soak: {a.ues} UEs, {reps} x {segment_s:g} s; run folder estimated at {estimate / 1e6:.0f} MB", flush=True)

    log = open(a.out / "run.log", "w")
    proc = subprocess.Popen([*CLI, "run", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=a.out)
    found: dict[str, str] = {}

    def read_output() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            log.flush()
            if "run_id" not in found and (g := re.search(r"run ([0-9a-f]{8}) -> (\S+)", line)):
                found["run_id"], found["run_dir"] = g.group(1), g.group(2)

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    t0 = time.monotonic()
    with open(a.out / "samples.csv", "w", newline="") as fs, open(a.out / "folder.csv", "w", newline="") as ff:
        ws, wf = csv.writer(fs), csv.writer(ff)
        ws.writerow(["t_s", "pid", "name", "rss_bytes", "open_files", "cpu_s"])
        wf.writerow(["t_s", "folder_bytes", "estimate_bytes"])
        while proc.poll() is None:
            time.sleep(a.sample_s)  # a sampling period, not a wait on readiness
            if "run_id" not in found:
                continue
            t = round(time.monotonic() - t0, 1)
            for pid, name in processes_of(found["run_id"], proc.pid).items():
                if (s := sample(pid)) is not None:
                    ws.writerow([t, pid, name, *s])
            wf.writerow([t, folder_bytes(Path(found["run_dir"])), estimate])
            fs.flush()
            ff.flush()
    reader.join(timeout=10)
    log.close()
    print(f"soak: the run ended ({proc.returncode}); {a.out / 'run.log'}", flush=True)
    write_table(a.out, estimate, Path(found.get("run_dir", a.out)), a.settle_s)
    return proc.returncode


def write_table(out: Path, estimate: float, run_dir: Path, settle_s: float = SETTLE_S) -> None:
    import pandas as pd
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = pd.read_csv(out / "samples.csv")
    f = pd.read_csv(out / "folder.csv")
    at = f"{settle_s / 60:g} min"
    rows = [f"| process | pid | lived (min) | RSS at {at} / end (MB) | growth | open files at {at} / end | CPU (s) |",
            "|---|---|---|---|---|---|---|"]
    long = []
    # Up to the emulator's last sample: after it the `continuum` process builds the results (reading every
    # link log), which is not the run's own growth; that phase's peak is said below the table.
    emu = s[s["name"].str.endswith("mahimahi-link")]
    t_end = emu["t_s"].max() if not emu.empty else s["t_s"].max()
    kinds: dict[str, list[float]] = {}
    for (pid, name), g in s[s["t_s"] <= t_end].groupby(["pid", "name"]):
        g = g.sort_values("t_s")
        lived = g["t_s"].iloc[-1] - g["t_s"].iloc[0]
        settled = g[g["t_s"] >= g["t_s"].iloc[0] + settle_s]
        if lived < 2 * settle_s or settled.empty:
            continue  # a repetition's process: its growth shows in the next one's start, not over an hour
        first, last = settled.iloc[0], g.iloc[-1]
        growth = last["rss_bytes"] / first["rss_bytes"] - 1
        kind = name.split(":", 1)[-1]
        if kind.endswith("-endpoint"):  # one row for the endpoints of a kind: dozens of them
            kinds.setdefault(kind, []).append(growth)
            continue
        long.append((name, pid))
        rows.append(f"| {name} | {pid} | {lived / 60:.0f} | {first['rss_bytes'] / 1e6:.1f} / {last['rss_bytes'] / 1e6:.1f} "
                    f"| {growth:+.1%} | {int(first['open_files'])} / {int(last['open_files'])} | {last['cpu_s']:.0f} |")
    for kind, growths in kinds.items():
        rows.append(f"| {len(growths)} x {kind} | | | | {min(growths):+.1%} to {max(growths):+.1%} | | |")
    after = s[(s["t_s"] > t_end) & (s["name"] == "continuum")]
    if not after.empty:
        rows += ["", f"After the run (results built from its folder): the `continuum` process peaked at "
                     f"{after['rss_bytes'].max() / 1e6:.0f} MB resident, for {(after['t_s'].max() - t_end) / 60:.1f} min."]
    final = folder_bytes(run_dir) if run_dir.is_dir() else float("nan")
    rows += ["", f"The run folder: {final / 1e6:.0f} MB at the end, `--dry-run` estimated {estimate / 1e6:.0f} MB "
                 f"({final / estimate - 1:+.0%})."]
    (out / "table.md").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))

    fig, (ax_rss, ax_fd, ax_dir) = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    span = s["t_s"].max() - s["t_s"].min()
    for (pid, name), g in s.groupby(["pid", "name"]):
        if g["t_s"].iloc[-1] - g["t_s"].iloc[0] >= span / 2:  # the run's own: one line each
            ax_rss.plot(g["t_s"] / 60, g["rss_bytes"] / 1e6, label=f"{name} ({pid})")
            ax_fd.plot(g["t_s"] / 60, g["open_files"], label=f"{name} ({pid})")
    for kind, style in (("endpoint", "-"), ("server", "--")):  # a repetition's: the kind's median and largest
        k = s[s["name"].str.contains(f"-{kind}", regex=False)]
        if k.empty:
            continue
        by_t = k.groupby("t_s")
        for stat, lw in (("median", 1.0), ("max", 2.0)):
            ax_rss.plot(by_t["rss_bytes"].agg(stat).index / 60, by_t["rss_bytes"].agg(stat) / 1e6, ls=style, lw=lw, color="grey",
                        label=f"{kind}s, {stat} of those alive")
            ax_fd.plot(by_t["open_files"].agg(stat).index / 60, by_t["open_files"].agg(stat), ls=style, lw=lw, color="grey",
                       label=f"{kind}s, {stat} of those alive")
    ax_rss.set_ylabel("resident memory (MB)")
    ax_fd.set_ylabel("open files")
    for ax in (ax_rss, ax_fd):
        ax.axvline(settle_s / 60, color="black", lw=0.8, ls=":")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax_dir.plot(f["t_s"] / 60, f["folder_bytes"] / 1e6, label="run folder (measured)")
    ax_dir.axhline(estimate / 1e6, color="grey", ls="--", label="--dry-run's estimate (the whole run)")
    ax_dir.set_ylabel("MB")
    ax_dir.set_xlabel(f"minutes since the run started (a sample every 10 s; dotted: {settle_s / 60:g} min, where growth is counted from)")
    ax_dir.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("The soak, measured: each long-lived process of the run, the repetitions' endpoints and servers, the run folder",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "soak.png", dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
