"""Diagnostic for an open mahimahi-link problem (issue 2): a ping reply sometimes
sticks in the forwarder until the next packet, so the last pings of a burst are
lost. Usage (root): .venv/bin/python tests/mahimahi_link/repro_ping_stall.py RUNS"""
import sys, re
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from netlab import Lab, constant_trace, CORE_IP
import tempfile
d = Path(tempfile.mkdtemp())
mml = Path(__file__).resolve().parents[2] / "mahimahi-link/target/release/mahimahi-link"
lost = 0; total = 0; slow = []
with Lab(mml, d) as lab:
    up = constant_trace(d / "c12", 12); down = constant_trace(d / "c48", 48)
    for trial in range(int(sys.argv[1])):
        lab.start_emulator(up, down)
        out = lab.run(lab.ue, "ping", "-n", "-c", "10", "-i", "0.05", "-W", "5", CORE_IP).stdout
        lab.stop_emulator()
        got = {int(a): float(b) for a, b in re.findall(r"icmp_seq=(\d+) ttl=\d+ time=([0-9.]+) ms", out)}
        rtts = list(got.values())
        total += 10; lost += 10 - len(rtts)
        slow += [(trial, k, v) for k, v in got.items() if v > 20]
        if len(rtts) < 10: print("trial", trial, "missing", sorted(set(range(1, 11)) - set(got)))
print("lost", lost, "of", total, "slow", slow)
