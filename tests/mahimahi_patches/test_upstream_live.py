"""The patched upstream mm-link, live, wired as the testbed wires an endpoint: bytes per
trace opportunity and delay as the trace says (as tests/mahimahi_link checks for
mahimahi-link), each direction crossed once by the forwarded traffic (counted, and
the addresses kept), and the filtered addresses past the queues."""

from __future__ import annotations

import collections
import re
import signal
import statistics
import subprocess
import sys
import time

import pytest
from mmlab import PROBE_IP, SRV_IP, UE_IP, MmLab
from netlab import FLOW_RECV, FLOW_SEND, parse_log, write_trace

pytestmark = pytest.mark.usefixtures("root_netns")


@pytest.fixture
def lab(mm_link, tmp_path):
    with MmLab(mm_link, tmp_path) as lab:
        yield lab
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert lab.ue[:-1] not in left, "the lab left namespaces behind"
    assert subprocess.run(["pgrep", "-f", f"{lab.dir}/"], capture_output=True).returncode == 1, "an mm-link is still running"


def _flow(lab: MmLab, src: str, dst: str, dst_ip: str, phases: str, port: int = 9100) -> list[tuple[int, int, int]]:
    """A FLOW_SEND flow; the receiver's (recv_ns, seq, sent_ns) rows."""
    out = lab.dir / f"flow-{port}.txt"
    rx = lab.popen(dst, sys.executable, "-c", FLOW_RECV, str(port), "2", str(out), "-", stdout=subprocess.PIPE)
    assert rx.stdout.readline().strip() == "ready"
    lab.run(src, sys.executable, "-c", FLOW_SEND, dst_ip, str(port), phases, "1472", "0", "-")
    rx.wait(timeout=120)
    return [tuple(map(int, line.split()[:3])) for line in out.read_text().splitlines()]


def test_each_second_delivers_what_the_trace_allows_and_a_gap_delivers_nothing(lab, tmp_path):
    """A 4 s trace: 1, 2, 0 and 4 opportunities per ms in its seconds (12, 24, 0, 48 Mbit/s),
    looping; 30 Mbit/s of 1472-byte datagrams (1504 bytes in mm-link: one opportunity each)
    for 6 s. Each full second at the receiver carries the trace's opportunities (±3%)."""
    per_ms = [1, 2, 0, 4]
    trace = write_trace(tmp_path / "steps", [t for s, k in enumerate(per_ms) for t in range(s * 1000 + 1, s * 1000 + 1001) for _ in range(k)])
    log = lab.dir / "up.log"
    lab.start(trace, trace, f"--uplink-log={log}", "--uplink-queue=droptail", "--uplink-queue-args=packets=3000")
    rows = _flow(lab, lab.ue, lab.srv, SRV_IP, "0:6:2550")
    assert lab.stop() == 0, lab.stderr
    header, opp, arr, dep, drop = parse_log(log)
    assert header["queue"].startswith("droptail")
    assert {size for _, size in opp} == {1504}, "an opportunity is one 1504-byte TUN packet"
    ours = [d for d in dep if d[1] == 1504]
    assert len(ours) == len(rows), "the receiver and mm-link's log agree on deliveries"
    # the log's clock is the trace's plus its base: second s of the trace is its times s*1000+1 .. s*1000+1000
    base = int(header["base timestamp"])
    got = collections.Counter((t - base - 1) // 1000 for t, *_ in ours)
    seconds = sorted(got)[1:-1]  # whole seconds only
    assert len(seconds) >= 4
    for s in seconds:
        want = per_ms[s % 4] * 1000
        assert abs(got[s] - want) <= max(0.03 * want, 2), f"second {s}: {got[s]} delivered, the trace allows {want}"
    gap_ms = [t for t, *_ in ours if (t - base - 1) // 1000 % 4 == 2]
    assert gap_ms == [], f"{len(gap_ms)} deliveries inside the gap"
    assert all(delay >= 0 for *_, delay in dep)


def test_an_idle_link_delays_each_packet_until_the_next_opportunity(lab, tmp_path):
    """Opportunities every 20 ms, 100 datagrams at 7 per second (never two waiting): each
    waits for the next opportunity, so its delay (mm-link's log, and the receiver's clock)
    spreads over 0-20 ms with a mean near 10 ms, never above 20 ms (+1 ms of host time)."""
    trace = write_trace(tmp_path / "every20", range(20, 1001, 20))
    log = lab.dir / "up.log"
    lab.start(trace, trace, f"--uplink-log={log}")
    rows = _flow(lab, lab.ue, lab.srv, SRV_IP, "0:14.3:7")
    assert lab.stop() == 0, lab.stderr
    _, _, _, dep, _ = parse_log(log)
    logged = [d for _, size, d in dep if size == 1504]
    measured = [(recv - sent) / 1e6 for recv, _, sent in rows]
    assert len(rows) == 100 and len(logged) == 100
    assert max(logged) <= 20 and max(measured) <= 21.5, (max(logged), max(measured))
    assert 6 <= statistics.mean(logged) <= 14 and 6 <= statistics.mean(measured) <= 15
    # the receiver sees what the log says, within the 1-ms tick and host time
    assert abs(statistics.median(measured) - statistics.median(logged)) <= 1.5


def test_forwarded_traffic_crosses_each_direction_once_with_its_addresses(lab, tmp_path):
    """40 pings from the UE's namespace: 40 arrivals in the uplink's log, 40 in the
    downlink's, of the ICMP packets' size (84 + 4), nothing else; and datagrams from
    the UE reach the server from the UE's own address (nothing NATed on the way)."""
    trace = write_trace(tmp_path / "c12", [1])
    ulog, dlog = lab.dir / "up.log", lab.dir / "down.log"
    lab.start(trace, trace, f"--uplink-log={ulog}", f"--downlink-log={dlog}")
    out = lab.run(lab.ue, "ping", "-n", "-c", "40", "-i", "0.02", SRV_IP).stdout
    counted = (collections.Counter(s for _, s in parse_log(ulog)[2]), collections.Counter(s for _, s in parse_log(dlog)[2]))
    rx = lab.popen(lab.srv, sys.executable, "-c", PEERS, "9200", "5", stdout=subprocess.PIPE)
    assert rx.stdout.readline().strip() == "ready"
    lab.run(lab.ue, sys.executable, "-c", "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"for i in range(5): s.sendto(b'x', ('{SRV_IP}', 9200))")
    peers = set(rx.communicate(timeout=30)[0].split())
    assert lab.stop() == 0, lab.stderr
    assert "40 received" in out, out
    up, down = counted
    assert up[88] == 40 and down[88] == 40, counted
    assert sum(up.values()) == 40 and sum(down.values()) == 40, f"something else (a second pass?) crossed the queues: {counted}"
    assert peers == {UE_IP}, peers


# receives N datagrams on a port and prints each sender's address
PEERS = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
print("ready", flush=True)
s.settimeout(10)
for _ in range(int(sys.argv[2])):
    print(s.recvfrom(2048)[1][0], flush=True)
"""


def test_filtered_addresses_pass_the_queues(lab, tmp_path):
    """Opportunities every 50 ms: a shaped ping waits ~25 ms each way on average; the
    UE's probe address, listed with --bypass, crosses at once and enters no log."""
    trace = write_trace(tmp_path / "every50", range(50, 1001, 50))
    ulog, dlog = lab.dir / "up.log", lab.dir / "down.log"
    lab.start(trace, trace, f"--uplink-log={ulog}", f"--downlink-log={dlog}", "--bypass=10.212.0.0/16")
    shaped = _rtts(lab.run(lab.ue, "ping", "-n", "-c", "20", "-i", "0.05", SRV_IP).stdout)
    before = (len(parse_log(ulog)[2]), len(parse_log(dlog)[2]))
    bypassed = _rtts(lab.run(lab.ue, "ping", "-n", "-c", "20", "-i", "0.05", "-I", PROBE_IP, SRV_IP).stdout)
    after = (len(parse_log(ulog)[2]), len(parse_log(dlog)[2]))
    assert lab.stop() == 0, lab.stderr
    assert len(shaped) == len(bypassed) == 20
    assert statistics.median(shaped) >= 20, f"shaped pings: median {statistics.median(shaped):.2f} ms"
    assert statistics.median(bypassed) < 0.1 * statistics.median(shaped), \
        f"probe pings: median {statistics.median(bypassed):.2f} ms, shaped {statistics.median(shaped):.2f} ms"
    assert after == before, "a filtered packet entered a queue"


def test_a_bad_prefix_and_a_device_without_an_address_are_named(lab, tmp_path):
    trace = write_trace(tmp_path / "c12", [1])
    with pytest.raises(RuntimeError, match="--bypass: not an IPv4 prefix"):
        lab.start(trace, trace, "--bypass=10.212.0.0/33")
    lab.run(lab.mm, "ip", "addr", "flush", "dev", "ue")
    with pytest.raises(RuntimeError, match="--pass-through: ue has no IPv4 address"):
        lab.start(trace, trace)


def _rtts(out: str) -> list[float]:
    return [float(x) for x in re.findall(r"time=([0-9.]+) ms", out)]


def _opportunities(log) -> list[int]:
    text = log.read_text() if log.exists() else ""
    lines = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
    return [int(f[0]) for f in (line.split() for line in lines if not line.startswith("#")) if len(f) > 1 and f[1] == "#"]


def test_sigusr2_starts_both_traces_over_at_its_instant(lab, tmp_path):
    """A run restarts the traces when each repetition's workload starts (as it does mahimahi-link's).
    A 10 s loop with opportunities only in its first 30 ms: after the signal they come again
    1-30 ms after it (on mm-link's clock), where the unrestarted trace has none until 10 s;
    the downlink too, and the shell keeps forwarding."""
    trace = write_trace(tmp_path / "burst", [*range(1, 31), 10_000])
    ulog, dlog = lab.dir / "up.log", lab.dir / "down.log"
    lab.start(trace, trace, f"--uplink-log={ulog}", f"--downlink-log={dlog}")
    _wait(lambda: len(_opportunities(ulog)) >= 30 and len(_opportunities(dlog)) >= 30, "the first bursts logged")
    init_ms = int(parse_log(ulog)[0]["init timestamp"])
    at = time.time() * 1000 - init_ms  # the signal's instant on mm-link's clock (ms since its start)
    lab.proc.send_signal(signal.SIGUSR2)
    _wait(lambda: len(_opportunities(ulog)) >= 60 and len(_opportunities(dlog)) >= 60, "the second bursts logged")
    assert lab.proc.poll() is None, "SIGUSR2 ended mm-link"
    assert lab.stop() == 0, lab.stderr
    for log in (ulog, dlog):
        opps = _opportunities(log)
        before, after = opps[:30], opps[30:]
        assert before[-1] < at < after[0], (at, before[-1], after[:3])
        assert len(after) == 30 and after == list(range(after[0], after[0] + 30)), after
        assert 0 <= after[0] - at <= 3, f"{log.name}: the first opportunity {after[0] - at:.1f} ms after the signal"


def _wait(probe, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
