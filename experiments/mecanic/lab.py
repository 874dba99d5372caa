"""MECaNIC's network-level evaluations, on the emulator's ingress stage alone
(mahimahi-link --nic between namespaces: mahimahi-link/lab/netlab.py), scaled
to this 2-core machine (README.md says how and why):

    lab.py priority OUT   # Fig. 10 and Fig. 9: High at 0.3x of the stage's rate, Low 0 -> 1x -> 2x,
                          # mecanic against plain; every 25th Low datagram carries URGENT
    lab.py matching OUT   # Fig. 12: a UDP app's throughput as the number of patterns grows, matching
                          # in the app (host) or reading the stage's result (nic)

Each writes its raw files under OUT/runs/ and a CSV of what it measured under OUT/."""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "mahimahi-link" / "lab"))

from mecanic_lab import HIGH, LOW, PPS, priority_flows, read_rx  # noqa: E402,F401  (HIGH, LOW, PPS: analyze.py's)
from netlab import constant_trace, ue_lab, wait_stats  # noqa: E402

MML = REPO / "mahimahi-link" / "target" / "release" / "mahimahi-link"
STAGES = ("mecanic", "plain")


def emulator(ran: str, folder: Path, links: int, trace: Path, *options: str) -> subprocess.Popen:
    stats = folder / "stats.json"
    argv = [f"--link=name=u{i},ue=ue{i},core=c{i},up={trace},down={trace}" for i in range(links)]
    p = subprocess.Popen(["ip", "netns", "exec", ran, str(MML), "forward", *argv, *options, f"--nic-log={folder}/nic-{{name}}.log",
                          f"--stats={stats}"], stderr=subprocess.PIPE, text=True)
    wait_stats(stats, lambda s: len(s) == links, p)
    return p


def stop(p: subprocess.Popen) -> None:
    p.terminate()
    _, err = p.communicate(timeout=10)
    if p.returncode != 0:
        raise SystemExit(f"mahimahi-link failed: {err}")


def priority(out: Path, phase_s: float) -> None:
    """The test's run (mahimahi-link/lab/mecanic_lab.py) with phases of phase_s, each arm in a fresh lab."""
    rows = []
    for arm in STAGES:
        folder = out / "runs" / "priority" / arm
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.contextmanager(ue_lab)("mecp", 2) as lab:
            sent = priority_flows(MML, lab, folder, arm, phase_s, phase_s)
        (folder / "sent.txt").write_text(f"{sent['high']} {sent['low']}\n")
        rows += priority_rows(folder, arm, phase_s, sent)
        print(f"priority, {arm}: done", flush=True)
    write_csv(out / "priority.csv", rows)


def priority_rows(folder: Path, arm: str, phase_s: float, sent: dict) -> list[dict]:
    """Per phase (Low silent, at 1x, at 2x; its first 0.5 s left out) and flow: latency end to end (ms) and loss."""
    high, low = read_rx(folder / "high.rx"), read_rx(folder / "low.rx")
    start = min(r[2] for r in low)  # Low's first send: the end of the silent phase
    t0 = start - int(phase_s * 1e9)
    out = []
    for k, label in enumerate(("Low silent", "Low at 1x", "Low at 2x")):
        a, b = t0 + int((k * phase_s + 0.5) * 1e9), t0 + int((k + 1) * phase_s * 1e9)
        for flow, rows, marked in (("high", high, None), ("low", low, 0), ("urgent (marked low)", low, 1)):
            ms = [(t - s) / 1e6 for t, _, s, m in rows if a <= s < b and (marked is None or m == marked)]
            if not ms:
                continue
            out.append({"arm": arm, "phase": label, "flow": flow, "received": len(ms), "mean_ms": round(statistics.mean(ms), 3),
                        "p50_ms": round(statistics.median(ms), 3), "p99_ms": round(sorted(ms)[int(0.99 * (len(ms) - 1))], 3)})
    for flow, rows in (("high", high), ("low", low)):
        out.append({"arm": arm, "phase": "whole run", "flow": flow, "received": len(rows), "sent": sent[flow],
                    "loss": round(1 - len(rows) / sent[flow], 5)})
    return out


SCAN_APP = r"""
import socket, sys, time
sys.path.insert(0, sys.argv[4])
from mecanic import nicmeta
mode, port, patterns = sys.argv[1], int(sys.argv[2]), [bytes.fromhex(p) for p in sys.argv[3].split(",") if p]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind(("0.0.0.0", port))
nicmeta.enable(s)
print("ready", flush=True)
s.settimeout(30)
n = found = nbytes = 0
first = last = None
try:
    while True:
        data, _, result = nicmeta.recv(s)
        if first is None:
            first = time.monotonic()
            s.settimeout(1)
        if mode == "host":  # the app's own matching: the first pattern, by number, anywhere in the payload
            result = next((i + 1 for i, p in enumerate(patterns) if p in data), 0)
        found += result is not None and result > 0
        n += 1
        nbytes += len(data)
        last = time.monotonic()
except socket.timeout:
    pass
print(n, found, nbytes, (last or 0) - (first or 0), flush=True)
"""

BLAST = r"""
import socket, sys, time
dst, port, seconds, size = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
inserts = [bytes.fromhex(p) for p in sys.argv[5].split(",") if p]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
import random
rng = random.Random(1)
bank = []
for i in range(64):  # random payloads; every 8th carries one of the patterns (a hit to report)
    b = bytearray(rng.randbytes(size))
    if i % 8 == 0 and inserts:
        p = inserts[i // 8 % len(inserts)]
        b[100:100 + len(p)] = p
    bank.append(bytes(b))
n, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(64):
        try:
            s.sendto(bank[n % 64], (dst, port))
        except BlockingIOError:
            pass
        n += 1
    time.sleep(0.0002)
print(n, flush=True)
"""


def matching(out: Path, counts: list[int], seconds: float) -> None:
    rng = random.Random(7)
    rows = []
    for n_patterns in counts:
        patterns = [rng.randbytes(rng.randint(8, 16)).hex() for _ in range(n_patterns)]
        for mode in ("host", "nic"):
            folder = out / "runs" / "matching" / f"{mode}-{n_patterns}"
            folder.mkdir(parents=True, exist_ok=True)
            options = [f"--nic=host,prefix=100.100.0.0/16,rate-bps={10**9},queue-packets=4096,plain"]
            if mode == "nic" and n_patterns:
                (folder / "patterns.txt").write_text("".join(p + "\n" for p in patterns))
                options.append(f"--nic-patterns={folder}/patterns.txt")
            with contextlib.contextmanager(ue_lab)("mecm", 1) as (ran, core, ues):
                emu = emulator(ran, folder, 1, constant_trace(folder / "1200mbps.trace", 1200), *options)
                try:
                    app = subprocess.Popen(["ip", "netns", "exec", core, "taskset", "-c", "1", sys.executable, "-c", SCAN_APP, mode, "7000",
                                            ",".join(patterns) if mode == "host" else "", str(REPO / "edge-systems")],
                                           stdout=subprocess.PIPE, text=True)
                    assert app.stdout is not None and app.stdout.readline().strip() == "ready"
                    blast = subprocess.run(["ip", "netns", "exec", ues[0], "taskset", "-c", "0", sys.executable, "-c", BLAST, "100.100.0.2", "7000",
                                            str(seconds), "1400", ",".join(patterns[:8])], capture_output=True, text=True, timeout=seconds + 60)
                    got, _ = app.communicate(timeout=60)
                finally:
                    stop(emu)
            sent = int(blast.stdout.split()[0])
            n, found, nbytes, span = got.split()
            rate = int(nbytes) * 8 / max(float(span), 1e-9) / 1e6
            rows.append({"patterns": n_patterns, "mode": mode, "sent": sent, "processed": int(n), "found": int(found),
                         "offered_mbit": round(sent * 1400 * 8 / seconds / 1e6, 1), "processed_mbit": round(rate, 1),
                         "loss": round(1 - int(n) / sent, 4)})
            print(f"matching, {n_patterns} patterns, {mode}: {rows[-1]}", flush=True)
    write_csv(out / "matching.csv", rows)


def write_csv(path: Path, rows: list[dict]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("priority", "matching"))
    p.add_argument("out", type=Path)
    p.add_argument("--phase-s", type=float, default=5.0, help="priority: each phase's length")
    p.add_argument("--patterns", default="0,1,10,100,1000", help="matching: the pattern counts")
    p.add_argument("--seconds", type=float, default=4.0, help="matching: each blast's length")
    a = p.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("lab.py needs root (network namespaces)")
    a.out.mkdir(parents=True, exist_ok=True)
    if a.what == "priority":
        priority(a.out, a.phase_s)
    else:
        matching(a.out, [int(x) for x in a.patterns.split(",")], a.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
