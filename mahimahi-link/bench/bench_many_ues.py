"""mahimahi-link benchmark: 100 UE links in ONE emulator process, each a
10 Mbit/s constant trace, all saturated at once (downlink UDP from the core
side, ~105% of each link's rate, to a UDP socket in each UE that reads them).
The deployment is the recommended one, as in bench.py: the emulator pinned to
CPU 0, the end hosts' receive stacks steered to the other CPUs (RPS). Prints the emulator's CPU, the total and
per-link delivered rate (the emulator's own departure counters), and idle CPU
with 100 links. A measurement, not a pass/fail test. Run as root:

    .venv/bin/python mahimahi-link/bench/bench_many_ues.py [N_UES] [--cell=rr|pf|smec] [--threads=K]

With --threads=K the emulator serves the links with K forwarding threads
(pinned to CPUs 0..K-1); on a machine with many cores, the scaling figure.

With --cell the downlinks share one cell (issue #18) instead: each UE's
channel is the whole cell, N x 10 Mbit/s, and the scheduler splits it slot by
slot, so each UE again gets about 10 Mbit/s, now through the scheduler (the
cell's per-slot log written too, as a run writes it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "mahimahi-link" / "lab"))
from netlab import sh  # noqa: E402

MML = ROOT / "mahimahi-link" / "target" / "release" / "mahimahi-link"
TICK = os.sysconf("SC_CLK_TCK")
RATE_MBPS = 10
RPS_MASK = format(((1 << os.cpu_count()) - 1) & ~1, "x")  # every CPU but the emulator's


def proc_cpu_s(pid: int) -> float:
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def build(n: int, tag: str) -> tuple[str, str, list[str]]:
    ran, core = f"{tag}r", f"{tag}c"
    ues = [f"{tag}u{i}" for i in range(n)]
    for ns in (ran, core, *ues):
        sh("ip", "netns", "add", ns)
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    for i, ue in enumerate(ues):
        sh("ip", "link", "add", "eth0", "netns", ue, "type", "veth", "peer", "name", f"u{i}", "netns", ran)
        sh("ip", "link", "add", f"c{i}", "netns", ran, "type", "veth", "peer", "name", f"r{i}", "netns", core)
        for ns, dev, ip in ((ue, "eth0", f"10.50.{i}.2/24"), (core, f"r{i}", f"10.50.{i}.1/24")):
            sh("ip", "-n", ns, "addr", "add", ip, "dev", dev)
            sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off")
            sh("ip", "-n", ns, "link", "set", dev, "up")
        for dev in (f"u{i}", f"c{i}"):
            sh("ip", "-n", ran, "link", "set", dev, "up")
        if os.cpu_count() > 1:
            sh("ip", "netns", "exec", ue, "sh", "-c", f"echo {RPS_MASK} > /sys/class/net/eth0/queues/rx-0/rps_cpus")
    return ran, core, ues


def sink(ues: list[str]) -> subprocess.Popen:
    """One process with a UDP socket on port 9 in every UE namespace, reading
    what arrives: a closed port would make each UE's stack answer every
    datagram with an ICMP error, work a real receiver never causes."""
    code = f"""
import ctypes, os, selectors, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
sel = selectors.DefaultSelector()
for ns in {ues!r}:
    fd = os.open("/var/run/netns/" + ns, os.O_RDONLY)
    assert libc.setns(fd, 0x40000000) == 0, os.strerror(ctypes.get_errno())
    os.close(fd)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", 9))
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
print("ready", flush=True)
while True:
    for key, _ in sel.select():
        try:
            while True:
                key.fileobj.recv(2048)
        except BlockingIOError:
            pass
"""
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready", "UDP sinks did not start"
    return p


def blast(core: str, n: int, seconds: float) -> None:
    """One paced UDP sender in the core namespace: 1472-byte datagrams to every UE."""
    code = f"""
import socket, time
n, secs, rate = {n}, {seconds}, {RATE_MBPS} * 1e6 * 1.05
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
payload = bytes(1472)
per_ue_pps = rate / (1500 * 8)
t0 = time.monotonic(); sent = 0
while True:
    el = time.monotonic() - t0
    if el > secs: break
    due = int(el * per_ue_pps)
    while sent < due:
        for i in range(n):
            try: s.sendto(payload, (f"10.50.{{i}}.2", 9))
            except OSError: pass
        sent += 1
    time.sleep(0.0005)
"""
    subprocess.run(["ip", "netns", "exec", core, sys.executable, "-c", code], check=True)


def constant_trace(path: Path, mbps: float) -> None:
    """A one-second Mahimahi trace of `mbps` (1504-byte opportunities, spread over the milliseconds)."""
    per_ms = mbps * 1e6 / 8 / 1504 / 1000
    path.write_text("".join(f"{ms}\n" * (int(ms * per_ms) - int((ms - 1) * per_ms)) for ms in range(1, 1001)))


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith(("--cell=", "--threads="))]
    cell = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--cell=")), None)
    threads = int(next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--threads=")), "1"))
    n = int(args[0]) if args else 100
    tag = f"mmlb{os.getpid() % 10000}"
    ran = core = None
    ues: list[str] = []
    sinks = None
    with tempfile.TemporaryDirectory() as d:
        try:
            t = time.monotonic()
            ran, core, ues = build(n, tag)
            setup_s = time.monotonic() - t
            trace = Path(d) / "c10"
            trace.write_text("1\n2\n3\n4\n6\n")  # 5 opportunities per 6 ms = 10 Mbit/s
            down = trace
            stats = Path(d) / "stats.json"
            argv = [str(MML), "forward", f"--stats={stats}", "--stats-interval-ms=200", "--quiet", "--cpu=0", f"--threads={threads}"]
            if cell:
                down = Path(d) / "cell"
                constant_trace(down, RATE_MBPS * n)
                argv += [f"--downlink-cell={cell}", f"--cell-log={d}/cell-{{dir}}.log"]
            argv += [f"--link=name=ue{i},ue=u{i},core=c{i},up={trace},down={down}" for i in range(n)]
            emu = subprocess.Popen(["ip", "netns", "exec", ran, *argv])
            while not stats.exists():
                assert emu.poll() is None, "mahimahi-link exited"
                time.sleep(0.05)
            time.sleep(1)
            c0, w0 = proc_cpu_s(emu.pid), time.monotonic()
            time.sleep(5)
            idle = (proc_cpu_s(emu.pid) - c0) / (time.monotonic() - w0)

            sinks = sink(ues)
            seconds = 8
            sender = threading.Thread(target=blast, args=(core, n, seconds))
            sender.start()
            time.sleep(2)  # queues fill
            doc0 = json.loads(stats.read_text())
            c0, w0 = proc_cpu_s(emu.pid), time.monotonic()
            time.sleep(5)
            cores = (proc_cpu_s(emu.pid) - c0) / (time.monotonic() - w0)
            doc1 = json.loads(stats.read_text())
            sender.join()
            emu.terminate()
            emu.wait(10)
        finally:
            if sinks:
                sinks.kill()
                sinks.wait()
            for ns in (ran, core, *ues):
                if ns:
                    sh("ip", "netns", "del", ns, check=False)
    # delivered rate over the interval between the two statistics documents (their own clock)
    wall = doc1["time_s"] - doc0["time_s"]
    before = {link["name"]: link["downlink"]["departed_bytes"] for link in doc0["links"]}
    per_link = sorted((link["downlink"]["departed_bytes"] - before[link["name"]]) * 8 / wall / 1e6 for link in doc1["links"])
    total = sum(per_link)
    print(f"downlinks: {'one shared cell, scheduler ' + cell + f', channel {RATE_MBPS * n} Mbit/s per UE' if cell else 'private links'}; {threads} forwarding thread(s)")
    print("| UE links | trace per link | delivered total Mbit/s (mm-link bytes: IP + 4) | per link min / median / max (% of trace) | emulator CPU, cores | CPU per delivered Gbit/s | idle CPU (100 links) | namespace setup |")
    print("|---|---|---|---|---|---|---|---|")
    pct = [f"{100 * x / RATE_MBPS:.1f}%" for x in (per_link[0], per_link[len(per_link) // 2], per_link[-1])]
    print(f"| {n} | {RATE_MBPS} Mbit/s | {total:.0f} | {' / '.join(pct)} "
          f"| {cores:.2f} | {cores / (total / 1e3):.2f} | {100 * idle:.2f}% | {setup_s:.1f} s |")


if __name__ == "__main__":
    main()
