"""[[timeline]] without running anything: every problem of a file's timeline
named at once under timeline[i].KEY, the entries resolved (UEs by name, app
group or all; the core-delay step's tier), the emulator's --timeline file
they become, and the results' per-change figures computed from a hand-made
run folder and checked against the numbers worked out here by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from continuum import experiment
from continuum.network import link, plan
from continuum.results import events
from continuum.errors import ConfigError
from named_problems import problems

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = (REPO / "configs" / "quickstart.toml").read_text()


def _file(tmp_path: Path, extra: str, base: str = QUICKSTART, name: str = "t.toml") -> Path:
    (tmp_path / "slow.trace").write_text("6\n")
    p = tmp_path / name
    p.write_text(base + "\n" + extra)
    return p


def test_every_timeline_problem_is_named_at_once(tmp_path):
    bad = _file(tmp_path, """
[[timeline]]
t_s = 40
outage_s = 1
[[timeline]]
t_s = 1
outage_s = 1
core_delay_ms = 3
[[timeline]]
t_s = 1
handover = "b"
[[timeline]]
t_s = 1
ue = "endpoint7"
outage_s = 1
[[timeline]]
t_s = 1
uplink = "no-such-trace"
queue = "flush"
[[timeline]]
t_s = 1
outage_s = -1
colour = "red"
[[timeline]]
t_s = 2
""")
    by_key = problems(bad)
    assert "past the repetition's end" in by_key["timeline[0].t_s"] and "35 s" in by_key["timeline[0].t_s"]
    assert by_key["timeline[1]"] == "one change per entry: outage_s and core_delay_ms given"
    assert "[cells.NAME]" in by_key["timeline[2].handover"]
    assert "valid: all, endpoint0" in by_key["timeline[3].ue"]
    assert "no-such-trace" in by_key["timeline[4].uplink"] and "an outage" in by_key["timeline[4].queue"]
    assert "greater than 0" in by_key["timeline[5].outage_s"] and "unknown key" in by_key["timeline[5].colour"]
    assert "no change given" in by_key["timeline[6]"]
    not_a_list = _file(tmp_path, "[timeline]\nt_s = 1\n", name="u.toml")
    with pytest.raises(ConfigError) as e:
        experiment.load(not_a_list, materialize=False)
    assert "[[timeline]]" in str(e.value)


def test_entries_resolve_to_ues_and_become_the_emulators_lines(tmp_path):
    mix = (REPO / "configs" / "smec-mix.toml").read_text()
    f = _file(tmp_path, """
[[timeline]]
t_s = 30
ue = "vc"
uplink = "slow.trace"
phase = "aligned"
[[timeline]]
t_s = 12.5
outage_s = 0.25
queue = "flush"
ue = ["endpoint6", "ss"]
[[timeline]]
t_s = 20
core_delay_ms = 40
ue = "ar"
""", base=_without_cell(mix))
    spec = experiment.load(f, materialize=False)
    assert [e.t_s for e in spec.timeline] == [12.5, 20, 30]
    out, delay, switch = spec.timeline
    assert out.ues == ("endpoint6", "endpoint0", "endpoint1") and out.kind == "outage" and out.queue == "flush"
    assert delay.ues == ("endpoint2", "endpoint3") and delay.tier == "edge"  # the app's offload tier
    assert switch.ues == ("endpoint4", "endpoint5") and switch.uplink is not None and switch.downlink is None
    assert switch.describe() == "30 s vc: trace uplink -> slow.trace (phase-aligned)"
    lines = link.timeline_lines(spec, plan.build(spec))[1:]
    assert lines[:3] == [f"12500.000 {ue} outage 250.000 flush" for ue in ("endpoint6", "endpoint0", "endpoint1")]
    assert lines[3:5] == ["20000.000 endpoint2 delay 10.202.0.0/16 40.000", "20000.000 endpoint3 delay 10.202.0.0/16 40.000"]
    assert lines[5] == f"30000.000 endpoint4 uplink-trace {tmp_path / 'slow.trace'} aligned"
    assert len(lines) == 7


def _without_cell(mix: str) -> str:
    """smec-mix without its shared cell (a timeline changes private links)."""
    start = mix.index("[cell]")
    end = mix.index("[edge.manager]")
    return mix[:start] + mix[end:]


def test_what_a_timeline_cannot_change_yet_is_refused_by_name(tmp_path):
    # a shared cell's member may lose coverage (the cell gives it no blocks while dark: the emulator's test)
    cell = _file(tmp_path, "[[timeline]]\nt_s = 5\noutage_s = 1\nue = \"endpoint0\"\n",
                 base=(REPO / "configs" / "smec-mix.toml").read_text())
    spec = experiment.load(cell, materialize=False)
    assert link.timeline_lines(spec, plan.build(spec))[1:] == ["5000.000 endpoint0 outage 1000.000 keep"]
    qemu = _file(tmp_path, "[[timeline]]\nt_s = 5\ncore_delay_ms = 9\n", name="q.toml")
    with pytest.raises(ConfigError) as e:
        experiment.load(qemu, materialize=False, provider="qemu")
    assert "timeline[0].core_delay_ms" in str(e.value) and "netem inside the guests" in str(e.value)
    jitter = _file(tmp_path, "[[timeline]]\nt_s = 5\ncore_delay_ms = 9\n",
                   base=QUICKSTART.replace("[core]\n", "[core]\njitter_ms = 1\n"), name="j.toml")
    with pytest.raises(ConfigError) as e:
        experiment.load(jitter, materialize=False)
    assert "netem" in str(e.value)
    # an outage and a trace switch run under qemu: the link is this machine's emulator
    ok = _file(tmp_path, "[[timeline]]\nt_s = 5\noutage_s = 1\n", name="o.toml")
    assert experiment.load(ok, materialize=False, provider="qemu").timeline[0].kind == "outage"


def test_per_change_figures_from_a_run_folder_match_a_hand_count(tmp_path):
    """One outage at 2 s of each of two repetitions, 1 s long, for endpoint0; requests worked out by hand."""
    s = 1_000_000_000
    r1, r2 = 100 * s, 200 * s
    (tmp_path / "links").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({
        "trace_restarts_unix_ns": [r1, r2],
        "timeline": [{"t_s": 2.0, "ues": ["endpoint0"], "kind": "outage", "label": "outage 1 s",
                      "describe": "2 s all: outage 1 s (queue kept)", "span_s": 1.0, "timeout_s": 3.0}]}))
    # applied 0.1 ms late in repetition 1; the emulator's clock had the change at restart + 2 s + 0.5 ms
    (tmp_path / "links" / "timeline.log").write_text(f"{r1 + 2 * s + 500_000} 2000.000 100 endpoint0 outage 1000.000 keep\n"
                                                    f"{r2 + 2 * s} 2000.000 40 endpoint0 outage 1000.000 keep\n")
    at1 = r1 + 2 * s + 500_000
    rows = [  # (repetition, drawn, status, received)
        (1, at1 - 2 * s, "ok", at1 - 1 * s),  # answered before: not across it
        (1, at1 - 4 * s, "timeout", None),  # gave up (3 s) before it: not across
        (1, at1 - 1 * s, "timeout", None),  # in flight, timed out at at1 + 2 s: across, lost
        (1, at1 - s // 10, "ok", at1 + s + s // 5),  # in flight, answered 1.2 s after: across; the first answer after
        (1, at1 + s // 2, "ok", at1 + s + s // 2),  # drawn during it: across
        (1, at1 + 2 * s, "ok", at1 + 2 * s + s // 10),  # after it: not across
        (2, r2 + 2 * s + s // 4, "early_drop", None),  # repetition 2: drawn during it, dropped
        (2, r2 + 3 * s + s // 2, "ok", r2 + 3 * s + s // 2 + 50_000_000),  # the first answer after: 1.55 s
    ]
    df = pd.DataFrame([{"repetition": r, "endpoint": "endpoint0", "t_drawn": d, "status": st,
                        "t_received": rec if rec is not None else float("nan")} for r, d, st, rec in rows])
    got = events.rows(tmp_path, df)
    assert got is not None
    one, two = got.to_dict("records")
    assert one["applied_unix_ns"] == at1 and one["late_ms"] == pytest.approx(0.1)
    assert one["interruption_ms"] == pytest.approx(1200.0)
    assert (one["across"], one["answered"], one["timeout"], one["early_drop"]) == (3, 2, 1, 0)
    assert two["interruption_ms"] == pytest.approx(1550.0) and (two["across"], two["early_drop"]) == (1, 1)
    summary = events.summarize(tmp_path, df)
    assert summary is not None and summary[0]["applied"] == 2 and summary[0]["interruption_ms_max"] == pytest.approx(1550.0)
    assert summary[0]["across"] == 4 and summary[0]["timeout"] + summary[0]["early_drop"] == 2
    assert (tmp_path / "timeline.csv").exists()
    # where the plots draw it: each repetition's applied time on the run's axis
    drawn = events.lines(tmp_path, r1)
    assert [t for t, _ in drawn] == pytest.approx([2.0005, 102.0], abs=1e-3) and {lab for _, lab in drawn} == {"outage 1 s"}


def test_a_load_steps_rate_applies_from_its_instant_within_a_running_gap():
    """workloads/arrivals.py RateSteps: 1/s, then 10/s from 5 s on. A unit gap drawn at 4.5 s
    spends 0.5 of it by 5 s, the rest at 10/s: due at 5.05 s, not at 5.5 s."""
    from workloads.arrivals import RateSteps

    s = RateSteps.from_settings(1.0, {"epoch_ns": 1_000_000_000, "steps": [[5.0, 10.0]]})
    at = s.after(1_000_000_000 + 4.5e9, 1.0)
    assert (at - 1_000_000_000) / 1e9 == pytest.approx(5.05)
    assert s.rate_at(1_000_000_000 + 4.9e9) == 1.0 and s.rate_at(1_000_000_000 + 5e9) == 10.0
    assert (s.after(1_000_000_000 + 6e9, 2.0) - 1_000_000_000) / 1e9 == pytest.approx(6.2)
    assert (s.after(1_000_000_000 + 1e9, 2.0) - 1_000_000_000) / 1e9 == pytest.approx(3.0)


def test_load_steps_resolve_per_endpoint_and_what_cannot_step_is_named(tmp_path):
    f = _file(tmp_path, "[[timeline]]\nt_s = 5\nrate = 4\n[[timeline]]\nt_s = 9\nutilisation = 0.5\n")
    spec = experiment.load(f, materialize=False)
    step, util = spec.timeline
    assert step.kind == "load" and step.ue_rates == (("endpoint0", 4.0),) and util.ue_rates == ()
    from continuum import calibration
    from continuum.calibration import Calibration

    c = Calibration(app="image_classification", workload="image_classification", node="edge0", source="fresh", made="",
                    key="k", cpu_model="", limits={}, concurrency=1, requests=40, window_s=3.0, capacity_rps=30.0,
                    service_ms=(33.0,), cpu_ms_per_request=33.0, model_load_s=1.0)
    assert calibration.wanted(spec)
    applied = calibration.apply(spec, {"image_classification": c})
    assert applied.timeline[1].ue_rates == (("endpoint0", 15.0),)  # 0.5 x 30/s over its one endpoint
    cc = _file(tmp_path, "[[timeline]]\nt_s = 5\nrate = 4\n",
               base=QUICKSTART + "\n[workload.congestion_control]\nenabled = true\n", name="cc.toml")
    with pytest.raises(ConfigError) as e:
        experiment.load(cc, materialize=False)
    assert "congestion control" in str(e.value)


def test_a_relocation_is_timed_from_the_core_and_what_it_cannot_move_is_named(tmp_path):
    base = QUICKSTART.replace("[nodes.cloud]\ncount = 0", '[nodes.cloud]\ncount = 1\ncpus = 1.0\nmemory = "1G"')
    f = _file(tmp_path, '[[timeline]]\nt_s = 5\nrelocate = "cloud0"\nstate_bytes = 1000000\ncore_rate_mbps = 80\n', base=base)
    (move,) = experiment.load(f, materialize=False).timeline
    # base_edge 0.5 ms + eu_central_1 5 ms one-way, then 8 Mbit at 80 Mbit/s
    assert move.kind == "relocate" and move.relocate == "cloud0" and move.move_s == pytest.approx(0.0055 + 0.1)
    assert move.span_s == move.move_s and move.label() == "to cloud0"
    bad = _file(tmp_path, '[[timeline]]\nt_s = 5\nrelocate = "edge0"\n[[timeline]]\nt_s = 6\nrelocate = "cloud3"\n'
                          '[[timeline]]\nt_s = 7\noutage_s = 1\nstate_bytes = 5\n', base=base, name="bad.toml")
    by_key = problems(bad)
    assert "already serves" in by_key["timeline[0].relocate"] and "valid: edge0, cloud0" in by_key["timeline[1].relocate"]
    assert "belongs to a relocation" in by_key["timeline[2].state_bytes"]
    smec = _file(tmp_path, '[[timeline]]\nt_s = 5\nrelocate = "cloud0"\n',
                 base=base + '\n[edge.manager]\nkind = "smec"\nslo_ms = 100\n', name="smec.toml")
    with pytest.raises(ConfigError) as e:
        experiment.load(smec, materialize=False)
    assert "SMEC's edge manager daemon (mode = 'quota')" in str(e.value) and 'mode = "off"' in str(e.value)
    # SMEC's timing and early drops live in each server: they move with the service
    timing = _file(tmp_path, '[[timeline]]\nt_s = 5\nrelocate = "cloud0"\n',
                   base=base + '\n[edge.manager]\nkind = "smec"\nmode = "off"\nslo_ms = 100\n', name="timing.toml")
    assert experiment.load(timing, materialize=False).timeline[0].relocate == "cloud0"
    with pytest.raises(ConfigError) as e:
        experiment.load(f, materialize=False, provider="qemu")
    assert "timeline[0].relocate" in str(e.value) and "not tried yet" in str(e.value)


def test_a_node_of_its_own_steps_apart_from_its_tier_and_moves_are_timed_from_where_the_service_is(tmp_path):
    base = QUICKSTART.replace("[nodes.edge]\ncount = 1", "[nodes.edge]\ncount = 2", 1)
    f = _file(tmp_path, """
[[timeline]]
t_s = 1
node = "edge1"
core_delay_ms = 3
[[timeline]]
t_s = 2
relocate = "edge1"
state_bytes = 1000000
core_rate_mbps = 80
[[timeline]]
t_s = 3
node = "edge0"
core_delay_ms = 7
[[timeline]]
t_s = 4
relocate = "edge0"
""", base=base)
    spec = experiment.load(f, materialize=False)
    step1, there, step0, back = spec.timeline
    assert (step1.node, step1.tier, step1.label()) == ("edge1", "edge", "edge1 core 3 ms")
    # from edge0 (the tier's 0.5 ms) to edge1 (3 ms, stepped), then 8 Mbit at 80 Mbit/s; back: 3 + 7 ms, no state
    assert there.move_s == pytest.approx(0.0035 + 0.1) and back.move_s == pytest.approx(0.010)
    p = plan.build(spec)
    # each stepped node's own rule comes before its tier's (the emulator applies the first that matches)
    assert p.delay_rules == (("10.202.0.0/24", 0.5), ("10.202.1.0/24", 0.5), ("10.202.0.0/16", 0.5))
    assert [d.netem_devices for d in p.core_delays[:2]] == [(), ()]
    lines = link.timeline_lines(spec, p)[1:]
    assert lines == ["1000.000 endpoint0 delay 10.202.1.0/24 3.000", "3000.000 endpoint0 delay 10.202.0.0/24 7.000"]
    bad = _file(tmp_path, """
[[timeline]]
t_s = 1
node = "edge5"
core_delay_ms = 3
[[timeline]]
t_s = 2
node = "edge1"
tier = "cloud"
core_delay_ms = 3
[[timeline]]
t_s = 3
node = "edge1"
outage_s = 1
[[timeline]]
t_s = 4
relocate = "edge1"
[[timeline]]
t_s = 5
relocate = "edge1"
""", base=base, name="bad.toml")
    by_key = problems(bad)
    assert "valid: edge0, edge1" in by_key["timeline[0].node"]
    assert "not both" in by_key["timeline[1].tier"]
    assert "belongs to a core-delay step" in by_key["timeline[2].node"]
    assert "edge1 already serves all at 5 s" in by_key["timeline[4].relocate"] and "timeline[3].relocate" not in by_key


def test_changes_at_one_time_find_their_own_log_lines_in_every_repetition():
    """The stay/follow arms step two nodes' delays at each handover's instant: each planned change
    takes its own line of each repetition's group, in the plan's order (a two-direction trace switch two)."""
    plan = [{"t_s": 1.0, "ues": ["endpoint0"], "kind": "outage", "log_lines": 1},
            {"t_s": 1.0, "ues": ["endpoint0"], "kind": "relocate", "log_lines": 0},
            {"t_s": 1.0, "ues": ["endpoint0"], "kind": "trace", "log_lines": 2},
            {"t_s": 1.0, "ues": ["endpoint0"], "kind": "core_delay", "log_lines": 1}]
    log = pd.DataFrame({"unix_ns": range(100, 108), "t_ms": [1000.0] * 8, "late_us": [float(i) for i in range(8)],
                        "link": ["endpoint0"] * 8, "change": ["x"] * 8})
    got = [[events._at(e, "endpoint0", rep, 0, log, plan) for e in plan] for rep in (1, 2)]
    assert [[a for a, _ in r] for r in got] == [[100, 1_000_000_000, 101, 103], [104, 1_000_000_000, 105, 107]]
    assert events._at(plan[3], "endpoint0", 3, 0, log, plan) == (None, pytest.approx(float("nan"), nan_ok=True))


CELLS = (REPO / "configs" / "mobility-cells.toml").read_text()


def test_several_cells_become_the_emulators_cells_and_a_handover_its_lines(tmp_path):
    f = _file(tmp_path, "", base=CELLS.replace('uplink_trace = "const-12mbps"', 'blocks = 25\nuplink_trace = "slow.trace"')
                                     .replace('[cells.b]\nuplink = "pf"', '[cells.b]\nuplink = "smec"'))
    spec = experiment.load(f, materialize=False)
    c = spec.cell
    assert c is not None and [(s.name, s.uplink, s.blocks, s.members) for s in c.sites] == [
        ("a", "pf", 51, ("endpoint0", "bulk0")), ("b", "smec", 25, ("bulk1",))]
    assert [m.name for m in c.members] == ["endpoint0", "bulk0", "bulk1"] and c.uplink == "pf"
    p = plan.build(spec)
    argv = link.argv(spec, p, tmp_path, tmp_path / "stats.json", "mahimahi-link", binary=Path("mml"))
    assert {"--uplink-cell=pf,smec", "--cells=a,b", "--cell-start=a,a,b", "--cell-blocks=51,25"} <= set(argv), argv
    assert not any(a.startswith("--downlink-cell") for a in argv)
    # bulk1 starts in b: its link's uplink is b's channel; the others' [mobile]'s
    ups = {a.split("name=")[1].split(",")[0]: a.split("up=")[1].split(",")[0] for a in argv if a.startswith("--link=")}
    assert ups["bulk1"] == str(tmp_path / "slow.trace") and ups["endpoint0"] == str(spec.mobile.uplink.path)
    # the handover's line, and at the join (15.03 s) the uplink channel of b; back in a, [mobile]'s again
    lines = link.timeline_lines(spec, p)[1:]
    assert lines == ["15000.000 endpoint0 handover b 30.000 keep",
                     f"15030.000 endpoint0 uplink-trace {tmp_path / 'slow.trace'} aligned",
                     "35000.000 endpoint0 handover a 30.000 flush",
                     f"35030.000 endpoint0 uplink-trace {spec.mobile.uplink.path} aligned"]
    assert spec.timeline[0].describe() == "15 s endpoint0: handover to cell b (30 ms interruption, queue forwarded)"
    assert events.planned(spec)[0]["log_lines"] == 1 and spec.timeline[0].span_s == pytest.approx(0.03)


def test_what_several_cells_and_a_handover_cannot_be_is_named(tmp_path):
    bad = _file(tmp_path, """
[[timeline]]
t_s = 20
ue = "endpoint0"
handover = "c"
[[timeline]]
t_s = 21
handover = "a"
phase = "restart"
queue = "flush"
""", base=CELLS.replace('members = ["bulk1"]', 'members = ["bulk1", "endpoint0"]\ndownlink = "pf"'))
    by_key = problems(bad)
    assert "named twice: a UE starts in one cell" in by_key["cells.b.members[1]"]
    assert "private in some cells and scheduled in others" in by_key["cells.downlink"]
    # without [cells], a handover has nowhere to go
    alone = _file(tmp_path, '[[timeline]]\nt_s = 5\nhandover = "b"\n', name="alone.toml")
    with pytest.raises(ConfigError) as e:
        experiment.load(alone, materialize=False)
    assert "[cells.NAME]" in str(e.value) and "timeline[0].handover" in str(e.value)
    nocell = _file(tmp_path, '[cells.a]\nmembers = ["endpoint0"]\n', name="nocell.toml")
    with pytest.raises(ConfigError) as e:
        experiment.load(nocell, materialize=False)
    assert "add a [cell] table" in str(e.value)
    ok = _file(tmp_path, '[[timeline]]\nt_s = 20\nue = "endpoint0"\nhandover = "c"\n', base=CELLS, name="c.toml")
    with pytest.raises(ConfigError) as e:
        experiment.load(ok, materialize=False)
    assert "no cell is named 'c'; cells: a, b" in str(e.value)


def test_a_recorded_drives_handovers_move_the_ue_between_the_cells_the_log_names(tmp_path):
    if not (REPO.parent / "shared" / "traces" / "irish-5g").is_dir():
        pytest.skip(f"the Irish 5G dataset is not under {REPO.parent / 'shared' / 'traces'} (clone beside ../shared)")
    drive = (REPO / "configs" / "mobility-drive.toml").read_text()
    cells = ('\n[cell]\ndownlink = "private"\n\n[cells.12]\nuplink = "pf"\nmembers = ["endpoint0"]\n\n'
             '[cells.11]\nuplink = "smec"\nmembers = []\n')
    f = _file(tmp_path, cells, base=drive.replace('queue = "keep"', 'queue = "keep"\nto_cells = true'))
    spec = experiment.load(f, materialize=False)
    # the same five recorded changes of serving cell as mobility-drive's outages, now moves between cells 12 and 11
    assert [(e.t_s, e.kind, e.handover) for e in spec.timeline] == [
        (77.0, "handover", "11"), (79.0, "handover", "12"), (123.0, "handover", "11"), (126.0, "handover", "12"),
        (131.0, "handover", "11")]
    assert spec.timeline[0].label() == "handover 12 -> 11" and spec.timeline[0].phase == "aligned"
    assert link.timeline_lines(spec, plan.build(spec))[1] == "77000.000 endpoint0 handover 11 50.000 keep"
    missing = _file(tmp_path, cells.replace("[cells.11]", "[cells.13]"), name="m.toml",
                    base=drive.replace('queue = "keep"', 'queue = "keep"\nto_cells = true'))
    with pytest.raises(ConfigError) as e:
        experiment.load(missing, materialize=False)
    assert "no [cells.ID] for 11" in str(e.value)
    in_11 = cells.replace('uplink = "pf"\nmembers = ["endpoint0"]', 'uplink = "pf"\nmembers = []').replace(
        'uplink = "smec"\nmembers = []', 'uplink = "smec"\nmembers = ["endpoint0"]')
    wrong = _file(tmp_path, in_11, name="w.toml", base=drive.replace('queue = "keep"', 'queue = "keep"\nto_cells = true'))
    with pytest.raises(ConfigError) as e:
        experiment.load(wrong, materialize=False)
    assert "must start in the drive's first cell, 12" in str(e.value)


def test_a_request_dropped_early_before_a_change_is_not_across_it():
    """SMEC's early drop answers the endpoint (status early_drop, a t_received): one answered before
    a change is not in flight at it (the follow-smec arm counted 47 requests across its moves)."""
    s = 1_000_000_000
    df = pd.DataFrame({"repetition": [1, 1, 1], "endpoint": ["endpoint0"] * 3, "status": ["early_drop", "early_drop", "ok"],
                       "t_drawn": [1 * s, 9 * s, 9 * s], "t_received": [1 * s + s // 10, 10 * s + s // 10, 10 * s + s // 5]})
    e = {"span_s": 0.5, "timeout_s": 10.0}
    got = events._effect(df, 1, "endpoint0", 10 * s, e)
    # the first was dropped (answered) long before the change at 10 s; the other two were in flight at it
    assert (got["across"], got["early_drop"], got["answered"]) == (2, 1, 1)
    assert got["interruption_ms"] == pytest.approx(200.0)
