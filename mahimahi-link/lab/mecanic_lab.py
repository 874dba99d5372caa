"""MECaNIC's priority-under-contention run on the emulator's ingress stage
(issue 40), one definition for the live test (tests/mahimahi_link/
test_mecanic_live.py) and the experiment (experiments/mecanic/lab.py): UE u0
sends High (UDP) at HIGH of a RATE stage, UE u1 Low stepping through LOW
after a silent phase, every MARK-th Low datagram carrying MARKER, both
through their own 120 Mbit/s links into one stage."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from netlab import FLOW_RECV, FLOW_SEND, constant_trace, wait_stats

RATE = 12_000_000  # the stage's path to the host (bit/s)
PAYLOAD = 1200
IP_BYTES = PAYLOAD + 28
PPS = RATE / (IP_BYTES * 8)  # the stage's rate in these packets per second
HIGH, LOW = 0.3, (1.0, 2.0)  # offered loads, in units of the stage's rate
MARK, MARKER = 25, "URGENT"
# High and URGENT on queues 0-9, Low on 10-19: a latency-critical class needs queues of its own (docs/mecanic.md)
CLASSES = [f"--nic-class=urgent:0:9:5:200,proto=udp,raw=16:{MARKER.encode().hex()}",
           "--nic-class=high:0:9:5:100,proto=udp,dport=5001",
           "--nic-class=low:10:19:1:10,proto=udp,dport=5002"]
STAGES = {
    "mecanic": f"--nic=host,prefix=100.100.0.0/16,rate-bps={RATE},queues=20,queue-packets=64,queue-rate-bps={RATE // 20}",
    "plain": f"--nic=host,prefix=100.100.0.0/16,rate-bps={RATE},queue-packets=256,plain",
}


def read_rx(path: Path) -> list[tuple[int, ...]]:
    """A FLOW_RECV file's rows: (RECV_NS, SEQ, SENT_NS, MARKED)."""
    return [tuple(map(int, line.split())) for line in path.read_text().splitlines()]


def priority_flows(mml: Path, lab: tuple, folder: Path, stage: str, idle_s: float, step_s: float) -> dict[str, int]:
    """Both flows through the stage (`lab`: ue_lab's ran, core and two UEs); what each sender sent. The receivers'
    rows are left in folder/high.rx and low.rx, the stage's log in folder/nic-host.log."""
    ran, core, ues = lab
    trace = constant_trace(folder / "120mbps.trace", 120)  # the cellular links: 10x the stage's rate
    stats = folder / "stats.json"
    links = [f"--link=name=u{i},ue=ue{i},core=c{i},up={trace},down={trace}" for i in range(2)]
    emu = subprocess.Popen(["ip", "netns", "exec", ran, str(mml), "forward", *links, STAGES[stage], *CLASSES,
                            f"--nic-log={folder}/nic-{{name}}.log", f"--stats={stats}"], stderr=subprocess.PIPE, text=True)
    procs: list[subprocess.Popen] = []
    try:
        wait_stats(stats, lambda links: len(links) == 2, emu)
        rx = []
        for name, port in (("high", 5001), ("low", 5002)):
            p = subprocess.Popen(["ip", "netns", "exec", core, sys.executable, "-c", FLOW_RECV, str(port), "2", str(folder / f"{name}.rx"), MARKER],
                                 stdout=subprocess.PIPE, text=True)
            procs.append(p)
            rx.append(p)
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        end = idle_s + len(LOW) * step_s
        phases = {"high": f"0:{end}:{HIGH * PPS:.1f}",
                  "low": ",".join(f"{idle_s + k * step_s}:{step_s}:{load * PPS:.1f}" for k, load in enumerate(LOW))}
        tx = {}
        for name, i, port in (("high", 0, 5001), ("low", 1, 5002)):
            tx[name] = subprocess.Popen(["ip", "netns", "exec", ues[i], sys.executable, "-c", FLOW_SEND, f"100.100.{i}.2", str(port), phases[name],
                                         str(PAYLOAD), str(MARK if name == "low" else 0), MARKER], stdout=subprocess.PIPE, text=True)
            procs.append(tx[name])
        sent = {name: int(p.communicate(timeout=end + 60)[0]) for name, p in tx.items()}
        for p in rx:
            p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        emu.terminate()
        _, err = emu.communicate(timeout=10)
    if emu.returncode != 0:
        raise RuntimeError(f"mahimahi-link failed: {err}")
    return sent
