"""Several cells in one emulator (--cells) and a handover between them on the
timeline, live: three UEs flood their uplinks (UDP) through two cells under
different schedulers, u0 starting in cell a (round robin, with u1) and
handing over to cell b (SMEC, with u2, u0 latency-critical and u2 best
effort), then back. The cell log says which blocks each UE got in every
slot, the link log what left and what was dropped, the timeline log when
each change applied; the checks are ratios of what was measured."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from netlab import constant_trace, parse_log, ue_lab, wait_listening, wait_stats, wait_until

pytestmark = pytest.mark.usefixtures("root_netns")

UES = 3
FLOOD_MBPS = 30  # each UE's offered load: above its share of the 24 Mbit/s cell, so every queue stays backlogged


@pytest.fixture
def three_ue_lab(mml):
    yield from ue_lab("mmlh", UES)


def _cell_log(path: Path) -> tuple[int, list[list[int]], list[tuple[int, str, int]]]:
    """t0 (Unix ns of slot 0), per-slot rows [slot, blocks of u0, u1, u2], moves (ue, cell, slot)."""
    t0, rows, moves = 0, [], []
    for line in path.read_text().splitlines():
        if line[:1].isdigit():
            rows.append([int(x) for x in line.split(" | ", 1)[0].split()])
        elif line.startswith("move "):
            _, ue, cell, slot = line.split()
            moves.append((int(ue), cell, int(slot)))
        elif line.startswith("t0 "):
            t0 = int(line.split()[1])
    return t0, rows, moves


def test_a_handover_moves_a_ue_to_another_cell_and_its_scheduler(mml, tmp_path, three_ue_lab):
    """u0 hands over from cell a (rr: it halves the cell with u1) to cell b (smec: u0 is
    latency-critical, u2 best effort, so u0 goes first) at 1 s, its queue forwarded, and back at
    2.5 s, its queue lost; 50 ms with nothing sent each time. Measured: the blocks each UE got per
    slot (its share of its cell), u0's departures in the interruptions, and the drops."""
    ran, core, ues = three_ue_lab
    trace = constant_trace(tmp_path / "24mbps.trace", 24)  # 2 opportunities per ms: the cells' channel
    (tmp_path / "timeline.txt").write_text("1000 u0 handover b 50 keep\n2500 u0 handover a 50 flush\n")
    stats = tmp_path / "stats.json"
    links = [f"--link=name=u{i},ue=ue{i},core=c{i},up={trace},down={trace}" for i in range(UES)]
    emu = subprocess.Popen(["ip", "netns", "exec", ran, str(mml), "forward", *links, "--uplink-cell=rr,smec", "--cells=a,b",
                            "--cell-start=a,a,b", "--cell-class=lc:100", "--cell-class=be", "--cell-class=be",
                            f"--cell-log={tmp_path}/cell-{{dir}}.log", f"--uplink-log={tmp_path}/{{name}}.up.log", f"--downlink-log={tmp_path}/{{name}}.down.log",
                            f"--timeline={tmp_path}/timeline.txt", f"--timeline-log={tmp_path}/applied.log", f"--stats={stats}"],
                           stderr=subprocess.PIPE, text=True)
    servers: list[subprocess.Popen] = []
    floods: list[subprocess.Popen] = []
    try:
        wait_stats(stats, lambda links: True, emu)
        for i in range(UES):
            servers.append(subprocess.Popen(["ip", "netns", "exec", core, "iperf3", "-s", "-1", "-B", f"100.100.{i}.2", "-p", "5201"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_listening(core, 5201, servers[-1])
        floods = [subprocess.Popen(["ip", "netns", "exec", ue, "iperf3", "-c", f"100.100.{i}.2", "-p", "5201", "-u", "-b",
                                    f"{FLOOD_MBPS}M", "-l", "1400", "-t", "5"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for i, ue in enumerate(ues)]
        # every queue backlogged (the premise of the shares below), then the timeline's clock starts
        wait_stats(stats, lambda links: len(links) == UES and all(link["uplink"]["queue_packets"] > 20 for link in links.values()), emu)
        emu.send_signal(signal.SIGUSR2)
        wait_until(lambda: (tmp_path / "applied.log").exists() and len((tmp_path / "applied.log").read_text().splitlines()) >= 4,
                   emu, 10, "the timeline's four changes applied")
        for f in floods:
            f.wait(timeout=30)
    finally:
        for p in (*floods, *servers):
            if p.poll() is None:
                p.kill()
        emu.send_signal(signal.SIGTERM)
        _, err = emu.communicate(timeout=10)
    assert emu.returncode == 0, err
    applied = [line.split() for line in (tmp_path / "applied.log").read_text().splitlines()]
    assert [" ".join(a[4:]) for a in applied] == ["handover b 50 keep", "joins b", "handover a 50 flush", "joins a"], applied
    t0, rows, moves = _cell_log(tmp_path / "cell-uplink.log")
    slot_ns = 500_000
    at = [(int(a[0]) - t0) // slot_ns for a in applied]  # the slot each change applied in
    assert [(ue, cell) for ue, cell, _ in moves] == [(0, "-"), (0, "b"), (0, "-"), (0, "a")]
    assert all(abs(s - a) <= 1 for (_, _, s), a in zip(moves, at)), (moves, at)  # the two clocks' readings: a slot apart at most
    by_slot = {r[0]: r[1:] for r in rows}

    def shares(first: int, last: int) -> tuple[float, float, float]:
        """Each UE's blocks over the slots [first, last) (rr's spread of unneeded blocks: none, all are backlogged)."""
        got = [sum(by_slot.get(k, [0, 0, 0])[u] for k in range(first, last)) for u in range(UES)]
        return got[0], got[1], got[2]

    per_s = 2000  # slots per second
    print("blocks (u0, u1, u2): before", shares(at[0] - per_s // 2, at[0]), "interruption", shares(at[0] + 1, at[1]),
          "in b", shares(at[1] + 1, at[2]), "back in a", shares(at[3] + 1, at[3] + 1 + per_s // 4))
    # in cell a under round robin: u0 and u1 halve it; u2 alone in cell b
    u0, u1, u2 = shares(at[0] - per_s // 2, at[0])
    assert 0.8 <= u0 / u1 <= 1.25 and u2 > 0.9 * (u0 + u1), (u0, u1, u2)
    # the interruption: no cell schedules u0, and it sends nothing
    u0, u1, u2 = shares(at[0] + 1, at[1])
    assert u0 == 0 and u1 > 0 and u2 > 0, (u0, u1, u2)
    # in cell b under SMEC: u0, latency-critical, goes before u2 (best effort, served when starved);
    # u1 has cell a to itself
    u0, u1, u2 = shares(at[1] + 1, at[2])
    assert u0 > 4 * u2 and u1 > 0.9 * (u0 + u2), (u0, u1, u2)
    # back in cell a: halved again
    u0, u1, u2 = shares(at[3] + 1, at[3] + 1 + per_s // 4)
    assert 0.8 <= u0 / u1 <= 1.25, (u0, u1, u2)
    # what u0's link did: nothing left in either interruption; the first handover forwarded its
    # queue (no drop), the second lost it (one drop of everything queued, at the change)
    _, opp, _, dep, drops = parse_log(tmp_path / "u0.up.log")
    _, down_opp, _, _, _ = parse_log(tmp_path / "u0.down.log")
    ms = [(int(a[0]) - t0) / 1e6 for a in applied]
    for start, end in ((ms[0], ms[1]), (ms[2], ms[3])):
        assert not [d for d in dep if start + 3 < d[0] < end - 3], f"u0 sent during the interruption {start:.0f}-{end:.0f} ms"
        # dark both ways (an outage: no delivery opportunity at all, in the downlink too, which has no cell here)
        for what, o in (("uplink", opp), ("downlink", down_opp)):
            assert not [x for x in o if start + 3 < x[0] < end - 3], f"u0's {what} had opportunities in {start:.0f}-{end:.0f} ms"
        assert [x for x in down_opp if end + 3 < x[0] < end + 20], "u0's downlink has its opportunities back after the interruption"
    print("u0's drops (ms, packets, bytes):", drops, "changes at (ms):", [round(m, 1) for m in ms])
    # (the link log counts whole ms from the emulator's start, the cell log's t0 is read off another clock: 3 ms slack)
    assert len(drops) == 1 and abs(drops[0][0] - ms[2]) <= 3 and drops[0][1] > 20, (drops, ms)


def test_a_handover_to_no_such_cell_or_of_a_private_link_is_refused_before_anything_starts(mml, tmp_path):
    trace = constant_trace(tmp_path / "12.trace", 12)
    (tmp_path / "timeline.txt").write_text("100 u0 handover c 50 keep\n200 u1 handover b 50 keep\n300 * handover b 50 keep\n")
    links = [f"--link=name=u{i},ue=x{i},core=y{i},up={trace},down={trace}" for i in range(2)]
    p = subprocess.run([str(mml), "forward", *links, "--uplink-cell=rr,pf", "--cells=a,b", "--cell-members=u0",
                        f"--timeline={tmp_path}/timeline.txt"], capture_output=True, text=True, timeout=10)
    assert p.returncode != 0
    for needle in ("a handover moves one link: name it, not *",):
        assert needle in p.stderr, p.stderr
    (tmp_path / "timeline.txt").write_text("100 u0 handover c 50 keep\n200 u1 handover b 50 keep\n")
    p = subprocess.run([str(mml), "forward", *links, "--uplink-cell=rr,pf", "--cells=a,b", "--cell-members=u0",
                        f"--timeline={tmp_path}/timeline.txt"], capture_output=True, text=True, timeout=10)
    assert p.returncode != 0
    for needle in ('no cell is named "c"; cells (--cells): a, b', 'link "u1" is in no shared cell'):
        assert needle in p.stderr, p.stderr
