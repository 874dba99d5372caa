"""Flows from the core to UEs through a shared downlink cell (issue 41), over
TCP or pDCell's transport with the emulator's CU: one definition for the live
test (tests/mahimahi_link/test_pdcell_live.py) and the experiment
(experiments/pdcell/). The server side is ue_lab's core namespace (one source
process for every flow), each UE runs a sink; pdcell.flows is both."""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from netlab import constant_trace, wait_stats

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "edge-systems"))
from pdcell.wire import PORT, SHIM_PORT  # noqa: E402
ENV = {"PYTHONPATH": str(ROOT / "edge-systems")}


@dataclass(frozen=True)
class Arm:
    """One way to carry the flows: the transport, the cell's downlink scheduler, and the CU's buffer."""

    name: str
    transport: str  # "pdcell", "phost" (wireless-unaware credits) or "tcp"
    scheduler: str  # "pf" or "mrfs"
    buffer_bytes: int | None = 3_000_000  # the CU's (None: unbounded); tcp: the UE's RLC-like queue
    cc: str = "cubic"  # tcp only
    unscheduled: int = 2  # packets a source sends with its RTS (the CU is told the same)
    shims: bool = False  # pdcell/phost: the apps use TCP, the shims carry it (edge-systems/pdcell/shim.py)
    cu_options: tuple[str, ...] = ()


@dataclass
class FlowResult:
    flow: int
    ue: int
    size: int
    start_ns: int
    last_ns: int  # the UE's last byte (0: never whole)

    @property
    def fct_s(self) -> float | None:
        return (self.last_ns - self.start_ns) / 1e9 if self.last_ns else None


@dataclass
class Run:
    arm: Arm
    flows: list[FlowResult]
    cu_log: Path | None
    stats: dict = field(default_factory=dict)


def poisson_schedule(seed: int, ues: int, duration_s: float, mean_gap_s: float, sizes: list[int]) -> list[tuple[float, int, int]]:
    """(start_s, ue, size): arrivals Poisson at one per `mean_gap_s`, to UEs in turn at random, sizes drawn from `sizes`."""
    rng = random.Random(seed)
    t, out = 0.0, []
    while True:
        t += rng.expovariate(1 / mean_gap_s)
        if t >= duration_s:
            return out
        out.append((round(t, 6), rng.randrange(ues), rng.choice(sizes)))


def _emulator_args(arm: Arm, folder: Path, traces: list[Path], up: Path, delay_ms: float, rtt_us: int) -> list[str]:
    links = [f"--link=name=u{i},ue=ue{i},core=c{i},up={up},down={t}" for i, t in enumerate(traces)]
    args = [*links, f"--downlink-cell={arm.scheduler}", "--cell-slot-us=1000", f"--delay=100.100.0.0/16={delay_ms:g}",
            f"--stats={folder}/stats.json", f"--cell-log={folder}/cell.log"]
    if arm.transport == "tcp":
        if arm.buffer_bytes is not None:
            args += ["--downlink-queue=droptail", f"--downlink-queue-args=bytes={arm.buffer_bytes}"]
    else:
        buffer = "inf" if arm.buffer_bytes is None else str(arm.buffer_bytes)
        cu = f"--cu=port={PORT},buffer-bytes={buffer},rtt-us={rtt_us},unscheduled={arm.unscheduled}" + ("" if arm.transport == "pdcell" else ",phost")
        args += [cu + "".join("," + o for o in arm.cu_options), f"--cu-log={folder}/cu.log"]
    return args


def run_flows(mml: Path, lab: tuple, folder: Path, arm: Arm, schedule: list[tuple[float, int, int]], channels_mbit: list[int],
              delay_ms: float = 2.0, deadline_s: float = 30.0) -> Run:
    """Every flow of `schedule` from the core to its UE (`lab`: ue_lab's ran, core and UEs; UE i's channel a constant
    trace of channels_mbit[i]). The emulator's files stay in `folder`."""
    ran, core, ues = lab
    folder.mkdir(parents=True, exist_ok=True)
    traces = [constant_trace(folder / f"c{m}.trace", m) for m in channels_mbit]
    up = constant_trace(folder / "up.trace", 48)
    rtt_us = int(2 * delay_ms * 1000 + 2000)
    (folder / "stats.json").unlink(missing_ok=True)  # a run before in this folder: wait for this one's
    # Each run starts cold: no TCP metrics (ssthresh, RTT) kept from an earlier run's connections to the UEs.
    subprocess.run(["ip", "-n", core, "tcp_metrics", "flush", "all"], check=False, capture_output=True)
    subprocess.run(["ip", "netns", "exec", core, "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1"], check=True)
    emu = subprocess.Popen(["ip", "netns", "exec", ran, str(mml), "forward", *_emulator_args(arm, folder, traces, up, delay_ms, rtt_us)],
                           stderr=subprocess.PIPE, text=True)
    transport = "tcp" if arm.transport == "tcp" or arm.shims else "pdcell"
    port = 5300 if transport == "tcp" else PORT
    procs: list[subprocess.Popen] = []
    try:
        wait_stats(folder / "stats.json", lambda links: len(links) == len(ues), emu)
        if arm.shims and arm.transport != "tcp":
            procs += _shims(core, ues, arm, folder, port)
        sinks = []
        for i, ue in enumerate(ues):
            p = subprocess.Popen(["ip", "netns", "exec", ue, "env", *(f"{k}={v}" for k, v in ENV.items()), sys.executable, "-m", "pdcell.flows",
                                  "sink", f"--transport={transport}", f"--port={port}", f"--out={folder}/sink{i}.rows"],
                                 stdout=subprocess.PIPE, text=True)
            procs.append(p)
            sinks.append(p)
        for p in sinks:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready", "a sink did not start"
        (folder / "schedule").write_text("".join(f"{t} 100.100.{ue}.1 {size}\n" for t, ue, size in schedule))
        src = subprocess.Popen(["ip", "netns", "exec", core, "env", *(f"{k}={v}" for k, v in ENV.items()), sys.executable, "-m", "pdcell.flows",
                                "source", f"--transport={transport}", f"--port={port}", f"--schedule={folder}/schedule",
                                f"--out={folder}/source.rows", f"--deadline-s={deadline_s}", f"--cc={arm.cc if transport == 'tcp' else ''}",
                                f"--unscheduled={arm.unscheduled}"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        procs.append(src)
        assert src.stdout is not None and src.stdout.readline().strip() == "ready", "the source did not start"
        assert src.stdin is not None
        src.stdin.write("go\n")
        src.stdin.flush()
        assert src.wait(timeout=deadline_s + 30) == 0
        for p in sinks:
            p.terminate()
            assert p.wait(timeout=10) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if arm.shims and arm.transport != "tcp":
            subprocess.run(["ip", "netns", "exec", core, "iptables", "-w", "-t", "nat", "-D", *_redirect(port)], check=False)
        emu.terminate()
        try:
            rc = emu.wait(timeout=10)
        except subprocess.TimeoutExpired:
            emu.kill()
            emu.wait()
            raise
    assert rc == 0, emu.stderr.read() if emu.stderr else rc
    last: dict[int, int] = {}
    for i in range(len(ues)):
        for line in (folder / f"sink{i}.rows").read_text().splitlines():
            flow, _, _, t = map(int, line.split())
            last[flow] = t
    flows = []
    for line in (folder / "source.rows").read_text().splitlines():
        flow, dst, size, start, _ = line.split()
        flows.append(FlowResult(int(flow), int(dst.split(".")[2]), int(size), int(start), last.get(int(flow), 0)))
    return Run(arm, flows, folder / "cu.log" if transport == "pdcell" else None)


def _redirect(app_port: int) -> list[str]:
    return ["OUTPUT", "-p", "tcp", "-d", "100.100.0.0/16", "--dport", str(app_port), "-j", "REDIRECT", "--to-ports", str(SHIM_PORT)]


def _shims(core: str, ues: list[str], arm: Arm, folder: Path, app_port: int) -> list[subprocess.Popen]:
    """The server side's shim in the core namespace (its TCP connections to the UEs' app port redirected to it) and
    one on each UE; they run until killed, the nat rule goes with the namespace."""
    for ns in (core, *ues):  # the redirected connections, and the UE shim's to its app, are local ones
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "netns", "exec", core, "iptables", "-w", "-t", "nat", "-A", *_redirect(app_port)], check=True)
    env = [f"{k}={v}" for k, v in ENV.items()]
    out = [subprocess.Popen(["ip", "netns", "exec", core, "env", *env, sys.executable, "-m", "pdcell.shim", "source", f"--listen={SHIM_PORT}",
                             f"--unscheduled={arm.unscheduled}"], stdout=subprocess.PIPE, stderr=open(folder / "shim-source.log", "w"), text=True)]
    out += [subprocess.Popen(["ip", "netns", "exec", ue, "env", *env, sys.executable, "-m", "pdcell.shim", "sink"], stdout=subprocess.PIPE,
                             stderr=open(folder / f"shim-sink{i}.log", "w"), text=True) for i, ue in enumerate(ues)]
    for p in out:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready", "a shim did not start"
    return out


def cu_counters(log: Path) -> dict:
    """The CU's counters from its log's end: per UE (peak, credits, expired, admitted, not admitted, duplicates),
    the peak of the whole buffer, and the most any slot's line showed."""
    ues, peak, most = [], 0, 0
    for line in log.read_text().splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "u":
            ues.append(dict(zip(("peak", "credits", "expired", "admitted", "not_admitted", "duplicates"), map(int, f[2:8]))))
        elif f[0] == "P":
            peak = int(f[1])
        elif f[0] == "o":
            most = max(most, int(f[2]))
    return {"ues": ues, "peak_total": peak, "most_in_a_slot": most}
