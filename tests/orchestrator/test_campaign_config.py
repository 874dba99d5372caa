"""A [sweep] without running anything: the points a file makes (product, zip,
arms, seeds), each point's file checked whole and its problems named by the
point, every problem of [sweep] itself at once, the commands that take one
point refusing a campaign, and the spread over runs as the campaign's table
gives it, checked on hand-made run folders against numbers worked out here."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from continuum import cli, experiment
from continuum.campaign import aggregate, sweep
from continuum.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "configs" / "campaign-quickstart.toml"
BASE = SHIPPED.read_text().split("\n[sweep]\n")[0] + "\n"


def _file(tmp_path: Path, sweep_text: str, name: str = "c.toml") -> Path:
    p = tmp_path / name
    p.write_text(BASE + sweep_text)
    return p


def _issues(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as e:
        sweep.check(path, sweep.points(path))
    return [str(i) for i in e.value.issues]


def test_the_shipped_campaign_is_eight_whole_files(capsys):
    pts = sweep.points(SHIPPED)
    assert len(pts) == 8, [p.label() for p in pts]
    specs = sweep.check(SHIPPED, pts)
    got = {(s.mobile.uplink.given, s.cell.uplink, s.seed) for s in specs}
    assert got == {(t, c, seed) for t in ("const-12mbps", "const-120mbps") for c in ("rr", "pf") for seed in (1, 2)}, got
    assert all("[sweep]" not in p.text for p in pts) and pts[0].label() == "mobile.uplink=const-12mbps, cell.uplink=rr, seed 1"
    assert len({p.slug() for p in pts}) == 8 and pts[4].slug() == "005-mobile.uplink=const-120mbps-cell.uplink=rr-seed=1"
    # a point's text is a file of its own: what the run folder keeps as experiment.toml
    assert tomllib.loads(pts[6].text)["cell"]["uplink"] == "pf" and tomllib.loads(pts[6].text)["experiment"]["seed"] == 1
    assert cli.main(["validate", str(SHIPPED)]) == 0
    assert cli.main(["run", "--dry-run", str(SHIPPED)]) == 0
    out = capsys.readouterr().out
    assert "8 points" in out and "points/008-mobile.uplink=const-120mbps-cell.uplink=pf-seed=2" in out and "min" in out


def test_zip_arms_and_seeds_make_the_points_asked_for(tmp_path):
    zipped = _file(tmp_path, '[sweep]\n"mobile.uplink" = ["const-12mbps", "const-120mbps"]\n'
                             '"mobile.downlink" = ["const-48mbps", "const-120mbps"]\n"workload.rate" = [1.0, 2.0, 3.0]\n'
                             'zip = [["mobile.uplink", "mobile.downlink"]]\n')
    pts = sweep.points(zipped)
    assert len(pts) == 2 * 3
    assert {(p.values["mobile.uplink"], p.values["mobile.downlink"]) for p in pts} == {
        ("const-12mbps", "const-48mbps"), ("const-120mbps", "const-120mbps")}
    arms = _file(tmp_path, '[sweep]\nseeds = [3, 4, 5]\n[sweep.arms.round-robin]\n"cell.uplink" = "rr"\n'
                           '[sweep.arms.fair]\ncell.uplink = "pf"\nworkload.rate = 1.5\n', name="arms.toml")
    pts = sweep.points(arms)
    specs = sweep.check(arms, pts)
    assert [(p.arm, p.seed) for p in pts] == [(a, s) for a in ("round-robin", "fair") for s in (3, 4, 5)]
    assert {(s.cell.uplink, s.workload.rate, s.seed) for s in specs} == {
        *(("rr", 2.0, s) for s in (3, 4, 5)), *(("pf", 1.5, s) for s in (3, 4, 5))}
    assert pts[0].slug() == "001-round-robin-seed=3"
    # an arm removes keys (a table too) the base file sets: unset
    unset = _file(tmp_path, '[sweep]\n[sweep.arms.plain]\nunset = ["cell"]\n[sweep.arms.cell]\n"cell.uplink" = "rr"\n'
                            '[sweep.arms.bad]\nunset = ["cell.nothing", "workload.rate"]\n"workload.rate" = 1.0\n', name="unset.toml")
    with pytest.raises(ConfigError) as e:
        sweep.points(unset)
    assert any("workload.rate is both set and unset" in str(i) for i in e.value.issues), e.value.issues
    unset.write_text(unset.read_text().split("[sweep.arms.bad]")[0])
    specs = sweep.check(unset, sweep.points(unset))
    assert [s.cell is None for s in specs] == [True, False] and "[cell]" not in sweep.points(unset)[0].text
    # an empty arm is the file as it is (a baseline); an arm may set a whole array of tables
    base = _file(tmp_path, '[sweep]\n[sweep.arms.baseline]\n[sweep.arms.outage]\n'
                           'timeline = [{ t_s = 1, outage_s = 0.05 }, { t_s = 2, outage_s = 0.02 }]\n', name="base.toml")
    specs = sweep.check(base, sweep.points(base))
    assert [[(e.t_s, e.kind) for e in s.timeline] for s in specs] == [[], [(1, "outage"), (2, "outage")]]
    missing = _file(tmp_path, '[sweep]\n[sweep.arms.a]\nunset = ["transport.buffer_kb"]\n', name="missing.toml")
    with pytest.raises(ConfigError) as e:
        sweep.points(missing)
    assert "unset transport.buffer_kb: the file does not set it" in str(e.value)


def test_every_problem_of_a_sweep_is_named_at_once(tmp_path):
    bad = _file(tmp_path, '[sweep]\n"cell.uplink" = []\n"workload.rate" = 2.0\n"mobile.uplink" = ["const-12mbps"]\n'
                          '"mobile.downlink" = ["const-48mbps", "const-120mbps"]\nseeds = [1, 1]\n'
                          'zip = [["mobile.uplink", "mobile.downlink"], ["nodes.x", "workload.rate"]]\n'
                          '"experiment.name" = ["a", "b"]\n[sweep.arms.one]\n"mobile.uplink" = "const-12mbps"\n')
    with pytest.raises(ConfigError) as e:
        sweep.points(bad)
    by_key = {i.key: i.message for i in e.value.issues}
    assert "empty list" in by_key["sweep.cell.uplink"]
    assert "expected a list" in by_key["sweep.workload.rate"]
    assert "a seed given twice" in by_key["sweep.seeds"]
    assert "lists of one length" in by_key["sweep.zip[0]"] and "mobile.uplink: 1, mobile.downlink: 2" in by_key["sweep.zip[0]"]
    assert "'nodes.x' is not a swept key" in by_key["sweep.zip[1]"]
    assert "share its name and output folder" in by_key["sweep.experiment.name"]
    assert "both swept and set by the arm" in by_key["sweep.arms.one"]
    assert all(i.file == str(bad) for i in e.value.issues)


def test_a_point_that_is_not_a_valid_file_is_named_by_its_point(tmp_path):
    got = _issues(_file(tmp_path, '[sweep]\n"cell.uplink" = ["rr", "fastest"]\n"cell.uplnk" = ["pf"]\n'))
    # the unknown key in every point (said once), the bad value in the point that has it, naming the point and the key
    assert any("every point" in g and "cell.uplnk: unknown key" in g for g in got) and len(got) == 2, got
    assert any("point 2 (cell.uplink=fastest, cell.uplnk=pf)" in g and "cell.uplink" in g and "'rr'" in g for g in got), got
    assert not any("point 1" in g for g in got), got
    with pytest.raises(ConfigError) as e:
        sweep.points(_file(tmp_path, '[sweep]\n"experiment.duration_s.x" = [1]\n"timeline.t_s" = [1]\n',
                           name="paths.toml").with_name("paths.toml"))
    msgs = [str(i) for i in e.value.issues]
    assert any("experiment.duration_s is a value, not a table" in m for m in msgs), msgs
    text = BASE + '[[timeline]]\nt_s = 3\noutage_s = 1\n[sweep]\n"timeline.t_s" = [1, 2]\n'
    (tmp_path / "tl.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        sweep.points(tmp_path / "tl.toml")
    assert "array of tables" in str(e.value)
    huge = _file(tmp_path, '[sweep]\n"workload.rate" = ' + str([float(i + 1) for i in range(40)]) + '\nseeds = '
                 + str(list(range(30))) + "\n", name="huge.toml")
    with pytest.raises(ConfigError) as e:
        sweep.points(huge)
    assert "1200 points; at most 1000" in str(e.value)


def test_a_command_that_takes_one_point_refuses_a_campaign(tmp_path):
    with pytest.raises(ConfigError) as e:
        experiment.load(SHIPPED, materialize=False)
    assert [i.key for i in e.value.issues] == ["sweep"] and "campaign" in e.value.issues[0].message


def _run_folder(root: Path, name: str, requests: int, answered: int, up: tuple[float, float]) -> str:
    d = root / "points" / name
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"requests": requests, "answered": answered,
                                                "metrics": {"uplink_ms": {"median": up[0], "p99": up[1]}}}))
    return f"points/{name}"


def test_the_table_gives_each_groups_runs_as_median_and_range(tmp_path):
    """Two groups of three seeds: the table's cells are the median of the runs' own medians and P99s with
    their [min-max], never a pooled percentile; a failed run is counted but not measured."""
    pts = []
    for i, (rate, seed, status, up) in enumerate([
            ("1", 1, "complete", (10.0, 30.0)), ("1", 2, "complete", (14.0, 50.0)), ("1", 3, "complete", (11.0, 90.0)),
            ("2", 1, "complete", (20.0, 40.0)), ("2", 2, "failed", (99.0, 999.0)), ("2", 3, "complete", (22.0, 60.0))], 1):
        run = _run_folder(tmp_path, f"{i:03d}", 100, 90 + i, up)
        pts.append({"index": i, "arm": None, "values": {"workload.rate": rate}, "seed": seed, "status": status, "run": run})
    csv_path, md = aggregate.write(tmp_path, pts, ["workload.rate"])
    lines = md.read_text().splitlines()
    row1 = next(line for line in lines if line.startswith("| 1 |"))
    row2 = next(line for line in lines if line.startswith("| 2 |"))
    assert "3 / 3" in row1 and "11.0 [10.0-14.0] / 50.0 [30.0-90.0]" in row1, row1
    assert "2 / 3" in row2 and "21.0 [20.0-22.0] / 50.0 [40.0-60.0]" in row2, row2
    assert "92.0% [91.0%-93.0%]" in row1, row1  # answered 91, 92, 93 of 100: the mean and range
    assert len(csv_path.read_text().splitlines()) == 1 + 6
    assert "The smallest run answered 91 requests: a P99 over fewer than 100" in md.read_text()  # the failed run not counted


def test_hosts_inventories_and_the_points_they_run_are_checked_before_anything_runs(tmp_path, capsys, monkeypatch):
    """--hosts: the inventory read by Ansible's own reader, each point checked as it will run there (the
    hosts provider, the one machine in every role), and what cannot be used named by file and machine."""
    from continuum.campaign import machines
    from continuum.errors import UsageError

    monkeypatch.chdir(tmp_path)
    inv = tmp_path / "lab.yml"
    # machines that refuse at once: nothing leaves this computer (port 9 and 2222 of the loopback, closed)
    inv.write_text("all:\n  vars:\n    continuum_host_keys: first-use\n  children:\n    edge:\n      hosts:\n"
                   "        a: {ansible_host: 127.0.0.1, ansible_port: 2222}\n  hosts:\n    b: {ansible_host: 127.0.0.1, ansible_port: 9}\n")
    workers = machines.read_inventory(inv)
    assert [(w.name, w.address, w.port, w.host_keys) for w in workers] == [("b", "127.0.0.1", 9, "first-use"),
                                                                          ("a", "127.0.0.1", 2222, "first-use")]
    point = sweep.points(SHIPPED)[0]
    doc = tomllib.loads(machines.point_text(point.text, workers[1], provision=False))
    assert doc["provider"] == {"kind": "hosts", "host_keys": "first-use", "provision": False,
                               "hosts": {"a": {"address": "127.0.0.1", "user": "root", "port": 2222,
                                               "role": ["endpoint", "edge", "cloud", "link"]}}}
    # the dry run lists the points and what is not ready; the run itself refuses before any point starts
    assert cli.main(["run", "--dry-run", str(SHIPPED), "--hosts", str(inv)]) == 0
    out = capsys.readouterr().out
    assert "on 2 machines (b, a)" in out and "not ready: machine b: cannot reach b" in out and "not ready: machine a: cannot reach a" in out, out
    copy = tmp_path / "campaign.toml"
    copy.write_text(SHIPPED.read_text())
    assert cli.main(["run", str(copy), "--hosts", str(inv)]) == 1
    assert "not ready for the campaign (nothing has run)" in capsys.readouterr().err
    assert not list(tmp_path.rglob("campaign.json")), list(tmp_path.rglob("*"))
    bad = tmp_path / "bad.yml"
    for text, said in [("all:\n  hosts:\n    a: {continuum_host_keys: sometimes}\n", "a: continuum_host_keys = 'sometimes'"),
                       ("all:\n  hosts:\n    a: {ansible_become: true, ansible_user: me}\n", "a: ansible_become"),
                       ("all:\n  hosts: {}\n", "no machines in it"),
                       ("[edge\nnot = an inventory {\n", "bad.yml")]:
        bad.write_text(text)
        with pytest.raises(UsageError) as e:
            machines.read_inventory(bad)
        assert said in str(e.value) and str(bad) in str(e.value), (text, str(e.value))
    assert cli.main(["run", str(SHIPPED), "--hosts", str(tmp_path / "none.yml")]) == 2
    assert cli.main(["run", str(SHIPPED), "--hosts", str(inv), "--provider", "qemu"]) == 2
    single = tmp_path / "one.toml"
    single.write_text(BASE)
    assert cli.main(["run", str(single), "--hosts", str(inv)]) == 2
    qemu = _file(tmp_path, '[sweep]\nseeds = [1, 2]\n', "q.toml")
    qemu.write_text(qemu.read_text().replace('kind = "netns"', 'kind = "qemu"'))
    assert cli.main(["run", str(qemu), "--hosts", str(inv)]) == 2
    err = capsys.readouterr().err
    assert "none.yml: no such file" in err and "choose one" in err and "has no [sweep]" in err and "kind = 'qemu'" in err


def test_a_point_on_a_machine_is_not_run_from_a_file_changed_since_the_campaign_started(tmp_path, capsys):
    """--hosts runs each point in a process of its own, which reads the file again: one edited since the
    campaign started is refused there (its points would not be the recorded ones), before anything is made."""
    import hashlib

    from continuum.campaign import machines, worker

    f = _file(tmp_path, '[sweep]\nseeds = [1, 2]\n')
    sha = hashlib.sha256(f.read_text().encode()).hexdigest()
    f.write_text(f.read_text().replace("seeds = [1, 2]", "seeds = [1, 3]"))
    w = machines.Worker("m", "127.0.0.1", port=9)
    assert worker.main([str(f), sha, "2", w.as_json(), str(tmp_path / "run"), "0", "0"]) == 1
    assert "changed since the campaign started: point 2 not run" in capsys.readouterr().out
    assert not (tmp_path / "run").exists()
