"""The link itself under both emulators, in the namespace labs the tests use
(mahimahi-link/lab/netlab.py: mahimahi-link forwarding between two veths;
mahimahi-patches/lab/mmlab.py: the patched mm-link in pass-through), each
emulator pinned to CPU 0 and the end hosts' receive work on CPU 1:

- delivered: iperf3 UDP (1472-byte datagrams) at 1.3x the trace's peak second
  for 8 s, each direction, through a 1000-packet droptail queue; the receiver's
  Mbit/s per second, against what the trace offers in the same seconds;
- CPU: the emulator's own processes' CPU time (utime + stime, all its threads
  and children) during those 8 s, per Gbit delivered;
- one-way delay: a 100-packet/s probe (its send time in each datagram, one
  clock for all namespaces) on the uplink for 5 s, alone, then beside iperf3
  at half the trace's mean rate; its percentiles.

    linklab.py OUT.csv [--reps N] [--scenarios quickstart,lte,g1200] [--emulators mahimahi-link,mahimahi,mahimahi-link-ms]

mahimahi-link-ms is mahimahi-link with --ms-bursts (a millisecond's opportunities all at
its start, as mm-link serves them): what of a difference is that timing, and what is
the rest (user space, TUN devices).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO / "mahimahi-link" / "lab"), str(REPO / "mahimahi-patches" / "lab")]

from mmlab import SRV_IP, MmLab  # noqa: E402
from netlab import CORE_IP, FLOW_RECV, FLOW_SEND, Lab, wait_listening  # noqa: E402

from continuum.network import mahimahi  # noqa: E402
from continuum.tracearchive.mahimahi import OPPORTUNITY_BYTES  # noqa: E402
from continuum.traces import mahimahi_link_binary  # noqa: E402

SHARED = REPO.parent / "shared" / "traces" / "mahimahi"
SCENARIOS = {  # name -> (uplink trace, downlink trace, what it is)
    "quickstart": ("const-12mbps", "const-48mbps", "the quickstart's constant 12 / 48 Mbit/s"),
    "lte": (SHARED / "Verizon-LTE-short.up", SHARED / "Verizon-LTE-short.down", "Verizon LTE (Mahimahi's own trace)"),
    "g1200": ("const-1200mbps", "const-1200mbps", "a constant 1.2 Gbit/s both ways"),
}
QUEUE = ("droptail", "packets=1000")
SECONDS = 8


def trace_path(t) -> Path:
    if isinstance(t, Path):
        return t
    from continuum.traces import resolve  # the archive's generated traces, made on use

    ref, problem = resolve(t, REPO)
    if ref is None:
        sys.exit(f"linklab.py: trace {t}: {problem}")
    return Path(ref.path)


def per_second_capacity(path: Path) -> list[float]:
    """Mbit/s the trace offers in each of its seconds (1504-byte opportunities, as both emulators count them)."""
    times = [int(x) for x in path.read_text().split()]
    period = max(times[-1], 1)
    seconds = max(1, (period + 999) // 1000)
    counts = [0] * seconds
    for t in times:
        counts[min((t - 1) // 1000 if t > 0 else 0, seconds - 1)] += 1
    scale = 1000 / min(period, 1000)  # a trace shorter than a second loops within it
    return [c * scale * OPPORTUNITY_BYTES * 8 / 1e6 for c in counts]


def offered(cap: list[float], start_s: float, seconds: int) -> float:
    """The trace's mean Mbit/s over [start_s, start_s + seconds) of its (looping) time."""
    vals = [cap[int(start_s + i) % len(cap)] for i in range(seconds)]
    return sum(vals) / len(vals)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, its threads and its (live) descendants."""
    hz = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / hz
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


class Side:
    """One emulator's lab, behind one interface: its namespaces, its process, the server's address."""

    def __init__(self, emulator: str, work: Path):
        self.emulator, self.work = emulator, work
        self.mml = emulator.startswith("mahimahi-link")  # "mahimahi-link-ms": with --ms-bursts (mm-link's timing)
        self.lab = Lab(mahimahi_link_binary(), work) if self.mml else MmLab(mahimahi.binary(), work)

    def __enter__(self):
        self.lab.__enter__()
        if self.emulator == "mahimahi":  # the end hosts' receive work off CPU 0, as netlab does for mahimahi-link
            mask = format(((1 << os.cpu_count()) - 1) & ~1, "x")
            for ns, dev in ((self.lab.ue, "ue0"), (self.lab.srv, "srv0")):
                subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", f"echo {mask} > /sys/class/net/{dev}/queues/rx-0/rps_cpus"])
        return self

    def __exit__(self, *exc):
        self.lab.__exit__(*exc)

    @property
    def ue(self) -> str:
        return self.lab.ue

    @property
    def server(self) -> str:
        return self.lab.core if self.mml else self.lab.srv

    @property
    def server_ip(self) -> str:
        return CORE_IP if self.mml else SRV_IP

    def start(self, up: Path, down: Path) -> float:
        q = [f"--uplink-queue={QUEUE[0]}", f"--uplink-queue-args={QUEUE[1]}",
             f"--downlink-queue={QUEUE[0]}", f"--downlink-queue-args={QUEUE[1]}"]
        t0 = time.monotonic()
        if self.mml:
            self.lab.start_emulator(up, down, *q, *(["--ms-bursts"] if self.emulator == "mahimahi-link-ms" else []))  # (--cpu=0: the lab's)
        else:
            self.lab.start(up, down, *q, cpu=0)
        return t0

    def pid(self) -> int:
        return (self.lab.emulator if self.mml else self.lab.proc).pid

    def stop(self) -> None:
        if self.mml:
            self.lab.stop_emulator()
        else:
            self.lab.stop()

    def popen(self, ns, *argv, **kw):
        return self.lab.popen(ns, *argv, **kw)

    def run(self, ns, *argv, **kw):
        return self.lab.run(ns, *argv, **kw)


def iperf(side: Side, mbit: float, seconds: int, reverse: bool, port: int = 5201) -> list[float]:
    """UDP at `mbit` for `seconds`, the UE as client; the receiver's Mbit/s in each second."""
    server = side.popen(side.server, "iperf3", "-s", "-1", "-p", str(port), "-J", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wait_listening(side.server, port, server)
    args = ["iperf3", "-c", side.server_ip, "-p", str(port), "-u", "-b", f"{mbit}M", "-l", "1472", "-t", str(seconds), "-J"]
    if reverse:
        args.append("-R")
    out = json.loads(side.run(side.ue, *args, timeout=seconds + 60).stdout)
    srv = json.loads(server.communicate(timeout=30)[0])
    doc = out if reverse else srv  # the receiver's own intervals
    # whole seconds of the sender's time: the receiver's last interval is the queue draining after it stopped
    return [i["sum"]["bits_per_second"] / 1e6 for i in doc["intervals"] if i["sum"]["seconds"] >= 0.95][:seconds]


def probe(side: Side, seconds: float, background_mbit: float) -> list[float]:
    """One-way delays (ms) of a 100-packet/s uplink probe, beside iperf3 at background_mbit (0: alone)."""
    out = side.work / "probe.txt"
    rx = side.popen(side.server, sys.executable, "-c", FLOW_RECV, "9100", "2", str(out), "-", stdout=subprocess.PIPE)
    assert rx.stdout.readline().strip() == "ready"
    bg = None
    if background_mbit:
        srv = side.popen(side.server, "iperf3", "-s", "-1", "-p", "5202", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(side.server, 5202, srv)
        bg = side.popen(side.ue, "iperf3", "-c", side.server_ip, "-p", "5202", "-u", "-b", f"{background_mbit}M", "-l", "1472",
                        "-t", str(int(seconds) + 2), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)  # the background flow's queue settles before the probe starts (pacing, not a readiness wait)
    side.run(side.ue, sys.executable, "-c", FLOW_SEND, side.server_ip, "9100", f"0:{seconds}:100", "1472", "0", "-")
    rx.wait(timeout=60)
    if bg is not None:
        bg.wait(timeout=60)
        srv.wait(timeout=30)
    rows = [tuple(map(int, line.split()[:3])) for line in out.read_text().splitlines()]
    return [(recv - sent) / 1e6 for recv, _, sent in rows]


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def measure(scenario: str, emulator: str, rep: int) -> list[dict]:
    """One repetition's four measurements, each in a lab of its own (mm-link's pass-through takes
    the UE's gateway device into its shell, and it goes when the shell ends)."""
    up_ref, down_ref, _ = SCENARIOS[scenario]
    up, down = trace_path(up_ref), trace_path(down_ref)
    rows = []
    for direction, trace in (("uplink", up), ("downlink", down)):
        cap = per_second_capacity(trace)
        with tempfile.TemporaryDirectory() as d, Side(emulator, Path(d)) as side:
            t0 = side.start(up, down)
            c0, w0 = cpu_seconds(side.pid()), time.monotonic()
            got = iperf(side, 1.3 * max(cap), SECONDS, reverse=direction == "downlink")
            cpu = cpu_seconds(side.pid()) - c0
            wall = time.monotonic() - w0
            side.stop()
        delivered = statistics.mean(got) if got else 0.0
        trace_mbit = offered(cap, w0 - t0, SECONDS)
        rows.append({"scenario": scenario, "emulator": emulator, "rep": rep, "measure": f"{direction} delivered",
                     "mbit_per_s": round(delivered, 3), "trace_mbit_per_s": round(trace_mbit, 3),
                     "per_second": " ".join(f"{x:.2f}" for x in got), "cpu_s": round(cpu, 3), "wall_s": round(wall, 2),
                     "cpu_s_per_gbit": round(cpu / max(delivered * wall / 1000, 1e-9), 3)})
    cap_up = per_second_capacity(up)
    for label, bg in (("idle", 0.0), ("half load", 0.5 * statistics.mean(cap_up))):
        with tempfile.TemporaryDirectory() as d, Side(emulator, Path(d)) as side:
            side.start(up, down)
            owd = probe(side, 5, bg)
            side.stop()
        rows.append({"scenario": scenario, "emulator": emulator, "rep": rep, "measure": f"uplink delay, {label}",
                     "packets": len(owd), "p50_ms": round(pct(owd, 0.5), 3), "p90_ms": round(pct(owd, 0.9), 3),
                     "p99_ms": round(pct(owd, 0.99), 3), "max_ms": round(max(owd), 3) if owd else None,
                     "background_mbit": round(bg, 2)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--emulators", default="mahimahi-link,mahimahi,mahimahi-link-ms",
                    help="mahimahi-link-ms: mahimahi-link --ms-bursts, all of a millisecond's opportunities at its start as in mm-link")
    a = ap.parse_args()
    problems = mahimahi.problems()
    if problems:
        sys.exit("linklab.py: " + "; ".join(problems))
    if not SHARED.is_dir() and "lte" in a.scenarios:
        sys.exit(f"linklab.py: the LTE scenario replays {SHARED}/Verizon-LTE-short.*: clone beside ../shared")
    rows: list[dict] = []
    for scenario in a.scenarios.split(","):
        for rep in range(1, a.reps + 1):
            for emulator in a.emulators.split(","):  # alternating, so a slow phase of the machine hits each
                got = measure(scenario, emulator, rep)
                rows += got
                for r in got:
                    print(scenario, emulator, rep, r["measure"], {k: v for k, v in r.items() if k in
                          ("mbit_per_s", "trace_mbit_per_s", "cpu_s_per_gbit", "p50_ms", "p99_ms")}, flush=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
