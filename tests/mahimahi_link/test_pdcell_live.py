"""pDCell's CU in the emulator (issue 41), live: flows from the core to four UEs
of a shared downlink cell, over TCP or pDCell's credit transport
(mahimahi-link/lab/pdcell_lab.py; the sources and sinks are edge-systems/pdcell)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from premise import premise

from netlab import ue_lab
from pdcell_lab import Arm, cu_counters, poisson_schedule, run_flows

pytestmark = pytest.mark.usefixtures("root_netns")

CHANNELS = [48, 48, 24, 24]  # Mbit/s with the whole cell: two good UEs, two at the cell's edge
LARGE, SMALL = 2_000_000, 10_000


@pytest.fixture(scope="module")
def four_ues():
    yield from ue_lab("mmpd", 4)


def _mix(seed: int) -> list[tuple[float, int, int]]:
    """A large flow to every UE at once, then small flows at 40/s to UEs at random for a second while they run."""
    return [(0.0, u, LARGE) for u in range(4)] + [(t + 0.1, u, s) for t, u, s in poisson_schedule(seed, 4, 1.0, 0.025, [SMALL])]


def _small_median(flows) -> float:
    fct = [f.fct_s for f in flows if f.size == SMALL]
    assert all(t is not None for t in fct), "every small flow completes"
    return statistics.median(fct)


def test_small_flows_finish_sooner_under_pdcell_with_mrfs_than_under_tcp_with_pf(mml, tmp_path, four_ues):
    """The paper's point, measured, with one TCP app for both (pDCell's shims
    carry its connections): behind a UE's large flow, TCP's small flows
    wait in the UE's deep queue (1.4 MB, RLC-like) while pDCell's CU keeps
    each UE's queue to what its grants carry over the credit loop and credits
    the shortest flow first, and MRFS serves the UE whose flow ends soonest.
    Measured here (2 repetitions, 3 runs, one with a CPU hog): small flows'
    median 159-197 ms under tcp+PF, 11-13 ms under pDCell+MRFS; asserted:
    under half, each repetition. Large flows still complete."""
    arms = [Arm("tcp-pf", "tcp", "pf", 1_400_000), Arm("pdcell-mrfs", "pdcell", "mrfs", shims=True)]
    for rep in range(2):
        med = {}
        for arm in arms:
            run = run_flows(mml, four_ues, tmp_path / f"{arm.name}-{rep}", arm, _mix(rep + 1), CHANNELS)
            med[arm.name] = _small_median(run.flows)
            large = [f for f in run.flows if f.size == LARGE]
            assert len(large) == 4 and all(f.fct_s is not None for f in large), (arm.name, large)
            if run.cu_log is not None:
                c = cu_counters(run.cu_log)
                # a packet comes twice only after its credit was given up on and sent again
                assert c["peak_total"] <= arm.buffer_bytes and all(u["duplicates"] <= u["expired"] for u in c["ues"]), c
        print(f"repetition {rep}: small flows' median FCT", {k: f"{v * 1e3:.1f} ms" for k, v in med.items()})
        assert med["pdcell-mrfs"] < 0.5 * med["tcp-pf"], med


def test_credit_accounting_keeps_the_cu_buffer_within_its_bound(mml, tmp_path, four_ues):
    """A 15 KB buffer and sources sending 8 packets with each RTS: the
    unscheduled packets overflow it (the premise: some are not admitted), the
    CU's admission keeps every slot's occupancy and the peak within the bound
    (its own counters, and each slot's line of its log), and every packet not
    admitted is credited again: every flow still completes."""
    arm = Arm("tight", "pdcell", "pf", 15_000, unscheduled=8)
    schedule = [(0.0, u, 200_000) for u in range(4)] + [(0.05 * k, k % 4, SMALL) for k in range(1, 20)]
    run = run_flows(mml, four_ues, tmp_path / "tight", arm, schedule, CHANNELS)
    assert run.cu_log is not None
    c = cu_counters(run.cu_log)
    premise("packets not admitted: the bound was reached", sum(u["not_admitted"] for u in c["ues"]), 1, detail=c)
    assert 0 < c["peak_total"] <= 15_000 and c["most_in_a_slot"] <= 15_000, c
    assert all(u["peak"] <= 15_000 for u in c["ues"]), c
    done = [f for f in run.flows if f.fct_s is not None]
    assert len(done) == len(schedule), [f for f in run.flows if f.fct_s is None]


def test_the_sources_header_is_the_cus(tmp_path: Path):
    """edge-systems/pdcell/wire.py writes the bytes src/pdcell/ reads (the same
    credit as the Rust test's, byte for byte)."""
    from pdcell import wire

    h = wire.Header(wire.CREDIT, 0xDEADBEEF, 7, 1 << 40, True, 1500, 1000)
    assert h.pack().hex() == "50440301deadbeef000000070000010000000000000005dc000003e8"
    assert wire.parse(h.pack()) == h and wire.PAYLOAD == 1444
