"""Several UE links in one emulator process: each shaped by its own trace,
with its own queue, logs named per link and statistics per link."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from netlab import constant_trace, parse_log, ue_lab, undisturbed, wait_listening, wait_stats

pytestmark = pytest.mark.usefixtures("root_netns")


def _two_uploads(core: str, ues: list[str]) -> list[float]:
    """Both UEs upload over TCP at once for 4 s; the rate each server received."""
    servers = [subprocess.Popen(["ip", "netns", "exec", core, "iperf3", "-s", "-1", "-B", f"100.100.{i}.2", "-p", "5201"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(2)]
    for server in servers:
        wait_listening(core, 5201, server)
    clients = [subprocess.Popen(["ip", "netns", "exec", ue, "iperf3", "-c", f"100.100.{i}.2", "-p", "5201", "-t", "4", "-O", "1", "-J"],
                                stdout=subprocess.PIPE, text=True) for i, ue in enumerate(ues)]
    rates = [json.loads(c.communicate(timeout=60)[0])["end"]["sum_received"]["bits_per_second"] for c in clients]
    for s in servers:
        s.wait(timeout=10)
    return rates


@pytest.fixture
def two_ue_lab(mml, tmp_path):
    yield from ue_lab("mmlm", 2)


@pytest.mark.parametrize("threads", [2])  # one thread: every other test here and in test_live.py
def test_two_links_in_one_process_are_shaped_independently(mml, tmp_path, two_ue_lab, threads):
    """With --threads=2 each link has a forwarding thread of its own: shaped
    apart as with one thread, one statistics file with both links, and
    SIGTERM stops both."""
    ran, core, ues = two_ue_lab
    slow, fast = constant_trace(tmp_path / "c12", 12), constant_trace(tmp_path / "c48", 48)
    stats = tmp_path / "stats.json"
    emu = subprocess.Popen(["ip", "netns", "exec", ran, str(mml), "forward",
                            f"--link=name=slow,ue=ue0,core=c0,up={slow},down={slow}",
                            f"--link=name=fast,ue=ue1,core=c1,up={fast},down={fast}",
                            f"--uplink-log={tmp_path}/{{name}}.up.log", f"--stats={stats}", f"--threads={threads}"],
                           stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while not stats.exists():
            assert emu.poll() is None, emu.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        # ip netns exec execs the emulator in place: the Popen pid is the emulator's
        names = sorted(p.read_text().strip() for p in Path(f"/proc/{emu.pid}/task").glob("*/comm"))
        forwarding = [n for n in names if n.startswith("mml-fwd-")]
        assert forwarding == ([] if threads == 1 else ["mml-fwd-0", "mml-fwd-1"]), names
        rates, steal = undisturbed(lambda: _two_uploads(core, ues))
        doc = json.loads(stats.read_text())
        assert [link["name"] for link in doc["links"]] == ["slow", "fast"]
        links = {link["name"]: link for link in doc["links"]}
    finally:
        stopped = time.monotonic()
        emu.send_signal(signal.SIGTERM)
        try:
            rc = emu.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a thread that missed the stop: leave nothing running
            emu.kill()
            emu.wait()
            raise
        assert rc == 0
        assert time.monotonic() - stopped < 2, "every forwarding thread stops at once"
    goodput = 1448 / 1500
    assert 0.95 * 12e6 * goodput <= rates[0] <= 1.02 * 12e6 * goodput, (rates, f"CPU steal {steal:.0%}")
    assert 0.95 * 48e6 * goodput <= rates[1] <= 1.02 * 48e6 * goodput, (rates, f"CPU steal {steal:.0%}")
    assert links["slow"]["uplink"]["departed_packets"] < links["fast"]["uplink"]["departed_packets"]
    for name in ("slow", "fast"):
        log = tmp_path / f"{name}.up.log"
        trace = slow if name == "slow" else fast
        assert log.read_text().splitlines()[0] == f"# mahimahi mm-link (Uplink) [{trace}] > {log}"
        _, _, _, dep, _ = parse_log(log)
        assert len(dep) > 1000


def _uploads_through_a_cell(mml, tmp_path, lab, scheduler: str, channels: dict) -> tuple[list[float], float]:
    """Two TCP uploads at once through an uplink cell under `scheduler`,
    one link per (name, channel trace); the cell's log in tmp_path/cell-{dir}.log."""
    ran, core, ues = lab
    stats = tmp_path / "stats.json"
    links = [f"--link=name={name},ue=ue{i},core=c{i},up={t},down={t}" for i, (name, t) in enumerate(channels.items())]
    emu = subprocess.Popen(["ip", "netns", "exec", ran, str(mml), "forward", *links,
                            f"--uplink-cell={scheduler}", "--uplink-queue=droptail", "--uplink-queue-args=packets=300",
                            f"--cell-log={tmp_path}/cell-{{dir}}.log", f"--stats={stats}"], stderr=subprocess.PIPE, text=True)
    try:
        wait_stats(stats, lambda links: True, emu)
        return undisturbed(lambda: _two_uploads(core, ues))
    finally:
        emu.send_signal(signal.SIGTERM)
        assert emu.wait(timeout=10) == 0


def test_two_links_in_a_shared_cell_split_it_round_robin(mml, tmp_path, two_ue_lab):
    """--uplink-cell=rr: the two UEs' uplinks share one 48 Mbit/s cell (each
    channel is the whole cell's); two TCP uploads at once each get about
    half, where private links would each get all 48."""
    c48 = constant_trace(tmp_path / "c48", 48)
    rates, steal = _uploads_through_a_cell(mml, tmp_path, two_ue_lab, "rr", {"a": c48, "b": c48})
    goodput = 48e6 * 1448 / 1500
    assert 0.85 * goodput <= sum(rates) <= 1.02 * goodput, (rates, f"CPU steal {steal:.0%}")  # together: the cell
    assert 0.8 <= rates[0] / rates[1] <= 1.25, (rates, f"CPU steal {steal:.0%}")                # each about half
    # The scheduler's own log: every slot's blocks per member (as decided), never more than the cell.
    lines = (tmp_path / "cell-uplink.log").read_text().splitlines()
    assert lines[0].startswith("# mahimahi-link cell (uplink) scheduler=rr slot_ns=500000 blocks=51 members=a,b")
    data = [line for line in lines if line[:1].isdigit()]
    slots = [[int(x) for x in line.split(" | ")[0].split()] for line in data]
    assert len(slots) > 1000 and all(sum(b[1:]) <= 51 for b in slots)
    # rr gives equal parts when both need more than half (3008 bytes: a whole slot of this cell)
    both_full = [b for b, line in zip(slots, data)
                 if all(int(v) >= 3008 for v in line.split(" | seen ")[1].split()[:2])]
    assert len(both_full) > 1000 and all(abs(b[1] - b[2]) <= 1 and sum(b[1:]) == 51 for b in both_full), \
        "rr: the whole cell in equal parts when both wait"
    assert not (tmp_path / "cell-downlink.log").exists()


def test_proportional_fair_cell_gives_equal_time_to_channels_at_2_to_1(mml, tmp_path, two_ue_lab):
    """--uplink-cell=pf with the UEs' channels at 48 and 24 Mbit/s, both
    uploading: PF's fixed point for backlogged UEs is equal time (equal
    blocks), so the rates follow the channels, 2:1, about 24 and 12 Mbit/s."""
    c48, c24 = constant_trace(tmp_path / "c48", 48), constant_trace(tmp_path / "c24", 24)
    rates, steal = _uploads_through_a_cell(mml, tmp_path, two_ue_lab, "pf", {"good": c48, "poor": c24})
    assert 1.6 <= rates[0] / rates[1] <= 2.4, (rates, f"CPU steal {steal:.0%}")
    goodput = 1448 / 1500
    assert 0.8 * 36e6 * goodput <= sum(rates) <= 1.02 * 36e6 * goodput, (rates, f"CPU steal {steal:.0%}")
    # from the scheduler's log: while both wait, each gets half of the blocks on average
    rows = [line.split(" | ") for line in (tmp_path / "cell-uplink.log").read_text().splitlines() if line[:1].isdigit()]
    both = [[int(x) for x in r[0].split()[1:]] for r in rows if all(int(v) > 0 for v in r[1].split()[1:])]
    assert len(both) > 1000
    share = sum(b[0] for b in both) / sum(b[0] + b[1] for b in both)
    assert 0.45 <= share <= 0.55, share


def test_cell_options_are_checked_before_anything_starts(mml, tmp_path):
    """Bad cell options: every problem named at once, nothing opened."""
    c = constant_trace(tmp_path / "c12", 12)
    links = [f"--link=name=a,ue=x0,core=y0,up={c},down={c}", f"--link=name=b,ue=x1,core=y1,up={c},down={c}"]
    p = subprocess.run([str(mml), "forward", *links, "--uplink-cell=tutti", "--cell-members=a,zz,a",
                        "--cell-class=be", "--cell-class=be", "--cell-class=be", "--cell-uplink-signalling",
                        "--cell-sr-grant-blocks=60"], capture_output=True, text=True, timeout=10)
    assert p.returncode != 0
    for needle in ('--cell-members: no --link is named "zz"; links: a, b', '--cell-members: "a" named twice',
                   "--cell-sr-grant-blocks: 60 is more than the cell's 51 blocks",
                   "--uplink-cell=tutti needs --cell-notice-port"):
        assert needle in p.stderr, p.stderr
    p = subprocess.run([str(mml), "forward", *links, "--uplink-cell=rr", "--cell-class=be", "--cell-class=be", "--cell-class=be"],
                       capture_output=True, text=True, timeout=10)
    assert "--cell-class: 3 classes for 2 cell members" in p.stderr, p.stderr
    p = subprocess.run([str(mml), "forward", *links, "--downlink-cell=tutti"], capture_output=True, text=True, timeout=10)
    assert "it schedules the uplink only" in p.stderr, p.stderr
    p = subprocess.run([str(mml), "forward", *links, "--cell-notice-port=47000"], capture_output=True, text=True, timeout=10)
    assert "need --uplink-cell or --downlink-cell" in p.stderr, p.stderr
    # several cells: a value per cell or one for all, every member's first cell named
    p = subprocess.run([str(mml), "forward", *links, "--cells=a,b,a", "--uplink-cell=rr,pf", "--cell-blocks=51,25,10,5",
                        "--cell-start=a,c,b"], capture_output=True, text=True, timeout=10)
    for needle in ('--cells: "a" named twice', "--uplink-cell: 2 values for 3 cell(s)", "--cell-blocks: 4 values for 3 cell(s)",
                   "--cell-start: 3 cells for 2 cell members", '--cell-start: no cell is named "c"'):
        assert needle in p.stderr, p.stderr
    p = subprocess.run([str(mml), "forward", *links, "--cells=a,b"], capture_output=True, text=True, timeout=10)
    assert "need --uplink-cell or --downlink-cell" in p.stderr, p.stderr


def _ping_median_ms(ns: str, dst: str, count: int = 100) -> float:
    out = subprocess.run(["ip", "netns", "exec", ns, "ping", "-n", "-c", str(count), "-i", "0.01", dst],
                         capture_output=True, text=True, timeout=60).stdout
    rtts = sorted(float(line.split("time=")[1].split()[0]) for line in out.splitlines() if "time=" in line)
    assert len(rtts) >= count * 0.9, out[-500:]
    return rtts[len(rtts) // 2]


def test_a_busy_link_does_not_delay_another_links_packets(mml, tmp_path, two_ue_lab):
    """A saturated link's departures are served in batches of up to 1 ms; the
    other links in the same process keep their own timing: a ping through a
    fast, idle link is as quick while the slow link is flooded as before."""
    ran, core, ues = two_ue_lab
    slow, fast = constant_trace(tmp_path / "c12", 12), constant_trace(tmp_path / "c1200", 1200)
    emu = subprocess.Popen(["ip", "netns", "exec", ran, str(mml), "forward",
                            f"--link=name=busy,ue=ue0,core=c0,up={slow},down={slow}",
                            f"--link=name=quiet,ue=ue1,core=c1,up={fast},down={fast}",
                            "--uplink-queue=droptail", "--uplink-queue-args=packets=200", f"--stats={tmp_path}/stats.json",
                            "--stats-interval-ms=20"], stderr=subprocess.PIPE, text=True)
    try:
        wait_stats(tmp_path / "stats.json", lambda links: True, emu)  # forwarding
        assert emu.poll() is None, emu.stderr.read()
        idle = _ping_median_ms(ues[1], "100.100.1.2")
        server = subprocess.Popen(["ip", "netns", "exec", core, "iperf3", "-s", "-1", "-B", "100.100.0.2", "-p", "5202"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(core, 5202, server)
        flood = subprocess.Popen(["ip", "netns", "exec", ues[0], "iperf3", "-c", "100.100.0.2", "-p", "5202", "-u", "-b", "18M", "-t", "5"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # the busy link's queue is full (200 packets): now it is as busy as it gets
        wait_stats(tmp_path / "stats.json", lambda links: links["busy"]["uplink"]["queue_packets"] >= 150, emu)
        busy = _ping_median_ms(ues[1], "100.100.1.2")
        flood.wait(timeout=30)
        server.wait(timeout=10)
    finally:
        emu.send_signal(signal.SIGTERM)
        assert emu.wait(timeout=10) == 0
    assert busy - idle < 0.5, f"ping RTT through the idle link: {idle:.3f} ms alone, {busy:.3f} ms while the other link was flooded"
