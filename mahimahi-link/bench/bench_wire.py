"""How close to the wire (issue #63): each kind of traffic through the raw
veth path (the two ran-side veths bridged in the kernel: no emulator) and
through mahimahi-link on its default path (`--gso`, the hosts' offloads on)
with a constant trace far above the offered rate, so the trace is never the
limit and what is lost is the emulator's cost. Raw and emulator runs
alternate, `--runs` times each (default 5): a slow phase of this VM hits
both. Prints a markdown table: each figure as the median [min-max] of its
runs, the emulator's as a ratio to raw veth's median, and the emulator's CPU
per delivered Gbit/s and per million packets. A measurement, not a
pass/fail test. Run as root:

    .venv/bin/python mahimahi-link/bench/bench_wire.py [--runs 5] [--seconds 4] [--only tcp,udp1472,udp256,udp64,quic,quic-nogso]

The cases:
- tcp: iperf3, CUBIC, the hosts' TSO/GSO on (super-frames reach the link whole).
- udp1472, udp256, udp64: iperf3 UDP of that payload, one datagram per
  system call (no UDP GSO: what a plain UDP app sends), offered at 3 Gbit/s:
  goodput and packets per second at the receiver.
- quic, quic-nogso: a bulk download over QUIC with ngtcp2's example server
  and client (Debian's ngtcp2-server and ngtcp2-client, a real QUIC stack
  from the registry: `gtlsserver`, `gtlsclient`), the sending server's UDP
  GSO on and off (`--max-gso-dgrams=1`).
  Skipped, saying how to install them, when they are missing.

The senders and receivers share the machine's cores with the emulator; the
raw figure is what they reach with no emulator, so a ratio below 1 is the
emulator's share, and the CPU columns say what it spent."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "lab"))
import bench  # noqa: E402
from netlab import CORE_IP, Lab, constant_trace, sh, wait_listening  # noqa: E402

TRACE_MBPS = 24000  # far above anything a sender here offers: the trace is never the limit
UDP_OFFERED = 3e9
QUIC_BYTES = 400 * 1024 * 1024
# ngtcp2's examples with the GnuTLS backend, as Debian's ngtcp2-server and ngtcp2-client install them (0.12)
QUIC_SERVER, QUIC_CLIENT = "gtlsserver", "gtlsclient"
CASES = ("tcp", "udp1472", "udp256", "udp64", "quic", "quic-nogso")


def iperf(lab: Lab, case: str, seconds: float) -> tuple[float, float]:
    """(payload bit/s, packets/s) at the receiver."""
    server = lab.popen(lab.core, "iperf3", "-s", "-1", "-p", "5201", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(lab.core, 5201, server)
    args = ["iperf3", "-c", CORE_IP, "-p", "5201", "-t", str(seconds), "-J"]
    if case == "tcp":
        args += ["-C", "cubic"]
        size = 1448
    else:
        size = int(case[len("udp"):])
        args += ["-u", "-b", str(int(UDP_OFFERED)), "-l", str(size)]
    out = json.loads(lab.run(lab.ue, *args, timeout=seconds + 30).stdout)
    server.wait(timeout=10)
    bps = out["end"]["sum_received"]["bits_per_second"]
    return bps, bps / 8 / size


def quic_tools() -> str | None:
    """Why the QUIC cases cannot run here, or None."""
    missing = [t for t in (QUIC_SERVER, QUIC_CLIENT) if shutil.which(t) is None]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install ngtcp2-server ngtcp2-client: Debian's packages install them)"
    return None


def quic(lab: Lab, gso: bool, workdir: Path) -> tuple[float, float]:
    """A QUIC_BYTES download from the core side to the UE with ngtcp2's examples: (payload bit/s, packets/s)."""
    docs = workdir / "htdocs"
    if not (docs / "blob").exists():
        docs.mkdir(exist_ok=True)
        with open(docs / "blob", "wb") as f:
            f.truncate(QUIC_BYTES)
        key, cert = workdir / "key.pem", workdir / "cert.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                        "-days", "1", "-subj", "/CN=bench"], check=True, capture_output=True)
    (workdir / "dl").mkdir(exist_ok=True)  # the client saves into it, and does not make it
    # The download's sender is the server: without GSO it hands the kernel one datagram per sendmsg
    gso_flag = [] if gso else ["--max-gso-dgrams=1"]
    server = lab.popen(lab.core, QUIC_SERVER, *gso_flag, "--htdocs", str(docs), "-q", CORE_IP, "4433",
                       str(workdir / "key.pem"), str(workdir / "cert.pem"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(lab.core, 4433, server, udp=True)
        t0 = time.monotonic()
        p = lab.run(lab.ue, QUIC_CLIENT, "-q", "--exit-on-all-streams-close", "--download", str(workdir / "dl"),
                    CORE_IP, "4433", f"https://{CORE_IP}:4433/blob", timeout=300, check=False)
        wall = time.monotonic() - t0
    finally:
        server.terminate()
        server.wait(timeout=10)
    got = (workdir / "dl" / "blob").stat().st_size if (workdir / "dl" / "blob").exists() else 0
    if p.returncode != 0 or got != QUIC_BYTES:
        raise RuntimeError(f"{QUIC_CLIENT} exited {p.returncode}, {got} of {QUIC_BYTES} bytes: {p.stderr[-500:]}")
    (workdir / "dl" / "blob").unlink()
    bps = QUIC_BYTES * 8 / wall
    return bps, bps / 8 / 1200  # ngtcp2's datagrams carry ~1200-byte payloads


def run_case(lab: Lab, case: str, seconds: float, workdir: Path) -> tuple[float, float]:
    if case.startswith("quic"):
        return quic(lab, case == "quic", workdir)
    return iperf(lab, case, seconds)


def med_range(values: list[float], scale: float, fmt: str = "{:.0f}") -> str:
    v = [x / scale for x in values]
    return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}-{fmt.format(max(v))}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--only", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}")
    a = ap.parse_args()
    cases = [c for c in a.only.split(",") if c]
    if bad := [c for c in cases if c not in CASES]:
        ap.error(f"--only: {', '.join(bad)} unknown; valid: {', '.join(CASES)}")
    why_not = quic_tools()
    if why_not and any(c.startswith("quic") for c in cases):
        print(f"QUIC cases skipped: {why_not}", file=sys.stderr)
        cases = [c for c in cases if not c.startswith("quic")]
    got: dict[str, dict[str, list]] = {c: {"raw": [], "emu": [], "cpu": []} for c in cases}
    with tempfile.TemporaryDirectory() as d, Lab(bench.MML, Path(d), host_offloads=True) as lab:
        trace = constant_trace(Path(d) / "fast", TRACE_MBPS)
        for run in range(1, a.runs + 1):
            for case in cases:
                bench.raw_lab(lab)
                time.sleep(0.5)
                got[case]["raw"].append(run_case(lab, case, a.seconds, Path(d)))
                sh("ip", "-n", lab.ran, "link", "del", "br0")
                lab.start_emulator(trace, trace, "--gso")
                r, cpu, _ = bench.measure(lab, lambda case=case: run_case(lab, case, a.seconds, Path(d)))
                lab.stop_emulator()
                got[case]["emu"].append(r)
                got[case]["cpu"].append(cpu)
                print(f"run {run}/{a.runs} {case}: raw {got[case]['raw'][-1][0] / 1e6:.0f} Mbit/s, "
                      f"emulator {r[0] / 1e6:.0f} Mbit/s ({cpu:.2f} cores)", file=sys.stderr, flush=True)
    print(f"{a.runs} runs of {a.seconds:g} s each, raw and emulator alternating; median [min-max]; emulator: "
          f"mahimahi-link --gso, {TRACE_MBPS} Mbit/s constant trace both ways; this machine: {bench.os.cpu_count()} cores")
    print()
    print("| case | raw veth Mbit/s | emulator Mbit/s | ratio (goodput) | raw veth kpps | emulator kpps | ratio (packets) "
          "| emulator CPU, cores | CPU s per Gbit | CPU s per Mpkt |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for case, g in got.items():
        raw_b, emu_b = [x[0] for x in g["raw"]], [x[0] for x in g["emu"]]
        raw_p, emu_p = [x[1] for x in g["raw"]], [x[1] for x in g["emu"]]
        ratio = [e / statistics.median(raw_b) for e in emu_b]
        ratio_p = [e / statistics.median(raw_p) for e in emu_p]
        per_gbit = [c / (b / 1e9) for c, b in zip(g["cpu"], emu_b)]
        per_mpkt = [c / (p / 1e6) for c, p in zip(g["cpu"], emu_p)]
        print(f"| {case} | {med_range(raw_b, 1e6)} | {med_range(emu_b, 1e6)} | {med_range(ratio, 1, '{:.2f}')} "
              f"| {med_range(raw_p, 1e3)} | {med_range(emu_p, 1e3)} | {med_range(ratio_p, 1, '{:.2f}')} "
              f"| {med_range(g['cpu'], 1, '{:.2f}')} | {med_range(per_gbit, 1, '{:.2f}')} | {med_range(per_mpkt, 1, '{:.2f}')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
