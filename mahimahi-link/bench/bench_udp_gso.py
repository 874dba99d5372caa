"""UDP through `--gso`: a sender using UDP GSO (UDP_SEGMENT, 44 datagrams of
1472 bytes per send, as QUIC stacks batch them) and a receiver using UDP
GRO, on the raw veth path and through constant traces. Prints a markdown
table (a measurement, not a pass/fail test). Run as root:

    .venv/bin/python mahimahi-link/bench/bench_udp_gso.py

Why a sender of our own: iperf3 sends one datagram per system call, which
no offload changes; on 2 cores that per-datagram cost caps MTU-sized UDP
near 1.6 Gbit/s even on the raw veth path (bench.py's UDP column)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "lab"))
import bench  # noqa: E402
from netlab import CORE_IP, Lab, constant_trace, sh  # noqa: E402

SEGMENTS, SIZE, PORT = 44, 1472, 9000
SEND = r'''
import socket, sys, time
dst, port, secs, segs, size = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 23)
s.setsockopt(socket.IPPROTO_UDP, 103, size)  # UDP_SEGMENT
buf = bytes(size * segs)
end = time.monotonic() + secs
while time.monotonic() < end:
    try:
        s.sendto(buf, (dst, port))
    except OSError:  # a full socket buffer: try again
        pass
'''
RECV = r'''
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 25)
s.setsockopt(socket.IPPROTO_UDP, 104, 1)  # UDP_GRO: coalesced datagrams per read
s.bind(("0.0.0.0", int(sys.argv[1])))
print("ready", flush=True)
s.settimeout(5)
total, first, last = 0, None, None
try:
    while True:
        n = len(s.recv(1 << 17))
        now = time.monotonic()
        first, last = first or now, now
        total += n
        s.settimeout(1)
except socket.timeout:
    pass
print(total, (last or 0) - (first or 0))
'''


def udp_gso(lab: Lab, seconds: float = 3) -> float:
    """Payload bit/s at the receiver."""
    rx = lab.popen(lab.core, sys.executable, "-c", RECV, str(PORT), stdout=subprocess.PIPE)
    assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
    lab.run(lab.ue, sys.executable, "-c", SEND, CORE_IP, str(PORT), str(seconds), str(SEGMENTS), str(SIZE), timeout=seconds + 60)
    total, span = rx.communicate(timeout=30)[0].split()
    return int(total) * 8 / max(float(span), 1e-3)


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as d, Lab(bench.MML, Path(d), host_offloads=True) as lab:
        bench.raw_lab(lab)
        time.sleep(1)
        bps, _, busy = bench.measure(lab, lambda: udp_gso(lab))
        rows.append(("raw veth, host offloads on (no emulator)", None, bps, None, busy, None))
        sh("ip", "-n", lab.ran, "link", "del", "br0")
        for r in (1200, 2400, 4800, 9600):
            t = constant_trace(Path(d) / f"c{r}", r)
            lab.start_emulator(t, t, "--gso")
            bps, cpu, busy = bench.measure(lab, lambda: udp_gso(lab))
            st = lab.read_stats()["uplink"]
            lab.stop_emulator()
            rows.append((f"mahimahi-link --gso {r} Mbit/s", r, bps, cpu, busy, st["unsplittable_frames"]))
    print(f"UDP GSO ({SEGMENTS} x {SIZE}-byte datagrams per send, UDP GRO at the receiver), payload at the receiver:\n")
    print("| path | trace Mbit/s | UDP payload Mbit/s (% of 1472/1500 of trace) | emulator CPU, cores | machine busy, cores | unsplittable frames |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r, bps, cpu, busy, bad in rows:
        pct = f" ({100 * bps / (r * 1e6 * SIZE / 1500):.0f}%)" if r else ""
        print(f"| {name} | {r or '-'} | {bps / 1e6:.0f}{pct} | {'-' if cpu is None else f'{cpu:.2f}'} | {busy:.2f} | {'-' if bad is None else bad} |")


if __name__ == "__main__":
    main()
