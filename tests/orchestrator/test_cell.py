"""A shared cell end to end (issue #18): `continuum run` with a [cell] table.
One latency-critical endpoint sends 250 KB bursts (video-frame-like) four
times a second with a 90 ms SLO; two bulk UEs upload files as fast as TCP
goes, all in one 48 Mbit/s cell with NR uplink signalling (SR every 10 ms,
k2 = 4 slots). The same file is run under SMEC and under proportional fair:
SMEC serves the request first and meets the SLO, PF shares the cell and
misses it; SMEC's request-start estimates fall within one SR period + k2 of
the true send times, Tutti's (the edge's notices) only after the request
arrived; a bulk UE is never left without blocks longer than SMEC's
starvation bound."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")

STARVATION_MS = 10.0

CONFIG = """
[experiment]
name = "cell-{scheduler}"
duration_s = 6
warmup_s = 1
output = "{out}"

[nodes.endpoint]
count = 1
cpus = 0.5

[mobile]
uplink = "const-48mbps"
downlink = "const-48mbps"

[workload]
app = "custom"
rate = 4.0

[workload.payload]
distribution = "fixed"
min_bytes = 250000
max_bytes = 250000

[workload.custom]
endpoint_command = ["{{python}}", "app.py", "endpoint"]
server_command = ["{{python}}", "app.py", "server"]
environment = {{ EXAMPLE_WORK_MS = "1" }}

[cell]
uplink = "{scheduler}"
downlink = "rr"
slo_ms = 90
sr_period_ms = 10
k2_slots = 4
be_starvation_ms = {starvation}
bulk = {{ count = 2 }}
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory, continuum_run):
    tmp = tmp_path_factory.mktemp("cell")
    shutil.copy(REPO / "workloads" / "example" / "app.py", tmp / "app.py")
    tmp.chmod(0o755)  # the app runs as nobody from this folder (pytest makes it 0700)
    out = {}
    for s in ("smec", "pf", "tutti"):
        cfg = tmp / f"{s}.toml"
        cfg.write_text(CONFIG.format(scheduler=s, out=tmp / "runs", starvation=STARVATION_MS))
        out[s] = continuum_run(cfg, tmp, f"cell-{s}")
    return out


def _cell(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())["cell"]


def test_smec_meets_the_slo_that_pf_misses(runs):
    smec, pf = _cell(runs["smec"])["classes"], _cell(runs["pf"])["classes"]
    assert smec["lc"]["requests"] >= 20 and pf["lc"]["requests"] >= 20  # 4/s for 6 s
    # the SLO is end to end: the endpoint's 0.5 CPU and the server share this 2-core machine with the two bulk
    # UEs' iperf3s, and a slow phase cost SMEC 3 of 24 (CI-like run, 2026-11-29: 87.5%); the RAN's part is the
    # P99-against-median check below
    assert smec["lc"]["slo_met"] >= 0.8 and smec["lc"]["slo_met"] >= pf["lc"]["slo_met"] + 0.4, (smec["lc"], pf["lc"])
    assert pf["lc"]["slo_met"] <= 0.5, pf["lc"]
    assert smec["lc"]["ran_ms_p99"] < pf["lc"]["ran_ms_p50"], (smec["lc"], pf["lc"])
    # the bulk UEs still move what the requests leave: most of the cell (48 Mbit/s, ~8 of it the requests')
    for c in (smec, pf):
        assert c["be"]["throughput_mbps_uplink"] >= 25, c["be"]
    # what a researcher reads: the per-class table and the two figures
    text = (runs["smec"] / "summary.txt").read_text()
    assert "shared cell: uplink smec" in text and "latency-critical" in text
    for png in ("cell_share.png", "ran_latency_cdf.png"):
        assert (runs["smec"] / "plots" / png).stat().st_size > 10_000
    # the netns default: the hosts' super-frames reach the cell whole, which schedules their segments
    assert json.loads((runs["smec"] / "manifest.json").read_text())["mobile"]["segmentation"] == "kernel"
    assert sum(lk["uplink"]["superframes"] for lk in json.loads((runs["smec"] / "links" / "stats.json").read_text())["links"]) > 0


def test_smec_start_estimates_are_within_an_sr_period_and_k2(runs):
    """The scheduler dates a request by the SR that preceded its BSR: never
    before the app sent it (one slot's rounding aside), and at most one SR
    period (10 ms) plus k2 (2 ms) after it."""
    c = _cell(runs["smec"])["classes"]["lc"]
    assert c["start_not_estimated"] <= 0.05, c
    assert -0.5 <= c["start_error_ms_p50"] <= c["start_error_ms_p99"] <= 10 + 2 + 0.5, c


def test_smec_never_starves_a_bulk_ue_beyond_its_bound(runs):
    """From the scheduler's own log: while a bulk UE has reported data, the
    longest run of slots in which it transmits nothing stays within the
    starvation bound (plus the k2 slots a grant takes), though every request
    burst outranks it for tens of slots."""
    lines = (runs["smec"] / "links" / "cell-uplink.log").read_text().splitlines()
    members = lines[0].split("members=")[1].split(",")
    bound = STARVATION_MS / 0.5 + 4 + 1
    for m in ("bulk0", "bulk1"):
        k = members.index(m)
        longest = run = 0
        last = None
        for line in lines:
            if not line[:1].isdigit():
                continue
            parts = line.split(" | ")
            slot, blocks = int(parts[0].split()[0]), int(parts[0].split()[1 + k])
            seen = int(parts[1].split()[1 + k])
            if last is not None and slot != last + 1:
                run = 0  # the cell was idle in between
            run = run + 1 if (blocks == 0 and seen > 0) else 0
            longest = max(longest, run)
            last = slot
        assert 0 < longest <= bound, f"{m}: {longest} slots without blocks while backlogged (bound {bound:g})"


def test_the_requests_outrank_bulk_under_smec_and_take_turns_under_pf(runs):
    """From the scheduler's log: in the slots where the gNB knows the
    endpoint has data, SMEC grants it nearly always (a bulk UE at its
    starvation bound aside); PF alternates it with the bulk UEs."""
    def granted_when_reported(run_dir: Path) -> float:
        lines = (run_dir / "links" / "cell-uplink.log").read_text().splitlines()
        members = lines[0].split("members=")[1].split(",")
        k = members.index("endpoint0")
        reported = granted = 0
        for line in lines:
            if line[:1].isdigit():
                blocks, seen = line.split(" | ")[:2]
                if int(seen.split()[1 + k]) > 0:
                    reported += 1
                    granted += int(blocks.split()[1 + k]) > 0
        assert reported > 500
        return granted / reported

    smec, pf = granted_when_reported(runs["smec"]), granted_when_reported(runs["pf"])
    assert smec >= 0.75 and pf <= 0.6, (smec, pf)


def test_tutti_learns_starts_from_the_edge_too_late_for_the_uplink(runs):
    """Tutti's estimate is the edge's "request arrived" notice: it comes
    after the whole 250 KB request crossed the cell (at least 42 ms at the
    cell's 48 Mbit/s) and the core twice, so its start error is at least that
    and the request was sent without priority: SMEC keeps the SLO, Tutti not."""
    smec, tutti = _cell(runs["smec"])["classes"]["lc"], _cell(runs["tutti"])["classes"]["lc"]
    notices = (runs["tutti"] / "raw" / "notices.csv").read_text().splitlines()[1:]
    assert len(notices) >= tutti["requests"] and all(n.endswith(",10.200.0.2") for n in notices)
    assert tutti["start_not_estimated"] <= 0.05, tutti
    assert tutti["start_error_ms_p50"] >= 42 > smec["start_error_ms_p99"], (smec, tutti)
    assert tutti["slo_met"] <= smec["slo_met"] - 0.5, (smec, tutti)
