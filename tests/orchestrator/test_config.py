"""Experiment files: fixtures that must load and files that must fail, each
failure asserting the error type and that the message names the key."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import hoststate
import pytest

from continuum import experiment
from continuum.errors import ConfigError

HERE = Path(__file__).parent / "configs"
REPO = Path(__file__).resolve().parents[2]


def test_minimal_file_gets_defaults():
    spec = experiment.load(HERE / "good-minimal.toml")
    assert [n.name for n in spec.nodes] == ["endpoint0", "edge0"]
    assert spec.core.edge_ms == 0.5 and spec.workload.offload == "edge"
    assert spec.mobile.uplink.path.name == "const-12mbps"
    assert len(spec.mobile.uplink.sha256) == 64


def test_full_file_resolves_every_section():
    spec = experiment.load(HERE / "good-full.toml")
    assert [n.name for n in spec.nodes] == ["endpoint0", "endpoint1", "edge0", "cloud0"]
    ep = spec.nodes[0]
    assert ep.cpus == 0.5 and ep.memory_bytes == 256 << 20
    assert spec.nodes[2].memory_bytes == int(1.5 * (1 << 30))
    assert spec.core.edge_ms == 0.25 and spec.core.cloud_ms == 40.0 and spec.core.cloud_label == "us_east_1"
    assert spec.mobile.uplink_queue == "codel" and spec.mobile.bypass == ("10.202.0.0/16:22",)
    w = spec.workload
    assert w.params["bank_size"] == 8 and w.qos == 1 and w.arrivals == "poisson" and w.burst == 2
    assert w.payload == {"distribution": "lognormal", "mean_bytes": 30000, "sigma": 0.4,
                         "min_bytes": 10000, "max_bytes": 100000}  # the app's range fills in the bounds
    assert w.congestion_control["enabled"] and w.congestion_control["threshold_ms"] == 400
    assert w.endpoint.runtime == w.server.runtime == "process"
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.seed = 3  # frozen


@pytest.mark.parametrize("path", sorted((REPO / "configs").rglob("*.toml")), ids=lambda p: str(p.relative_to(REPO / "configs")))
def test_shipped_configs_are_valid(path, request):
    if path.parent.name == "thesis":
        request.getfixturevalue("shared_traces")  # public datasets: skipped with a reason without ../shared
    from continuum.campaign import sweep

    if sweep.has_sweep(path):  # a campaign: every point, each a whole file
        assert sweep.check(path, sweep.points(path))
        return
    experiment.load(path, materialize=False)


@pytest.mark.parametrize("name, keys", [
    ("bad-unknown-key", ["experiment.duraton"]),
    ("bad-many", ["experiment.duration_s", "nodes.edge.cpus", "nodes.edge.memory", "mobile.uplink_queue", "core.cloud",
                   "nodes.endpoint.tcp_congestion_control"]),
    ("bad-trace-missing", ["mobile.uplink"]),
    ("bad-trace-invalid", ["mobile.uplink"]),
    ("bad-kpn-preset", ["mobile.preset"]),
    ("bad-offload-no-node", ["workload.offload"]),
    ("bad-queue-args", ["mobile.uplink_queue_args"]),
    ("bad-provider", ["provider.kind"]),
    ("bad-syntax", ["(syntax)"]),
    ("bad-params", ["workload.params.bank_size", "workload.params.colour"]),
    ("bad-workload", ["workload.payload", "workload.custom"]),
    ("bad-workload-types", ["workload.arrivals", "workload.congestion_control.factor"]),
    ("bad-custom", ["workload.custom.server_command", "workload.custom.environment.CONTINUUM_RATE"]),
    ("bad-cell", ["cell.downlink", "cell.ue.endpoint9.slo", "cell.bulk.speed", "cell.colour", "cell.uplink_signalling",
                  "cell.sr_period_ms", "cell.members[1]", "cell.members", "cell.ue.endpoint9",
                  "cell.ue.endpoint0.uplink"]),
])
def test_bad_files_report_every_problem_with_its_key(name, keys):
    with pytest.raises(ConfigError) as e:
        experiment.load(HERE / f"{name}.toml")
    got = [i.key for i in e.value.issues]
    assert set(got) == set(keys), e.value
    for issue in e.value.issues:
        assert issue.file.endswith(f"{name}.toml")
        assert len(issue.message) > 10  # says what would be valid, not just "invalid"


def test_a_shared_cell_resolves_members_classes_and_slots():
    """[cell]: the members in the file's order (bulk UEs are nodes of their
    own, always best effort), per-UE classes over the cell's default, times
    in slots; endpoints outside the cell keep private links (the plan)."""
    from continuum.network import link, plan

    spec = experiment.load(HERE / "good-cell.toml")
    c = spec.cell
    assert c is not None and c.uplink == "smec" and c.downlink is None
    assert [(m.name, m.cls) for m in c.members] == [("endpoint0", "lc"), ("endpoint2", "be"), ("bulk0", "be")]
    assert c.members[0].slo_ms == 120 and c.sr_period_slots == 5 and c.be_starvation_slots == 30
    assert [n.name for n in spec.role("bulk")] == ["bulk0"] and c.bulk_direction == "downlink"
    p = plan.build(spec)
    assert [lk.name for lk in p.cell_links] == ["endpoint0", "endpoint1", "endpoint2", "bulk0"]
    assert p.addresses["bulk0"] == "10.200.100.2"
    argv = link.argv(spec, p, Path("/r/links"), Path("/r/stats.json"), "mahimahi-link")
    assert "--uplink-cell=smec" in argv and not any(a.startswith("--downlink-cell") for a in argv)
    assert "--cell-members=endpoint0,endpoint2,bulk0" in argv  # endpoint1: a private link
    assert [a for a in argv if a.startswith("--cell-class")] == ["--cell-class=lc:120", "--cell-class=be", "--cell-class=be"]
    assert "--cell-slot-us=1000" in argv and "--cell-sr-period-slots=5" in argv and "--cell-uplink-signalling" in argv
    assert "--cell-periodic-bsr-slots=10" in argv  # NR's sf10 default, in 1 ms slots
    assert "--cell-pf-alpha=1" in argv and "--cell-pf-window-slots=50" in argv  # 50 ms of 1 ms slots
    links = {a.split(",")[0].removeprefix("--link=name="): a for a in argv if a.startswith("--link=")}
    assert "up=" + str(c.members[1].uplink.path) in links["endpoint2"] and "const-48mbps" in links["endpoint2"]
    assert "const-12mbps" in links["endpoint0"].split("up=")[1].split(",")[0]  # [mobile]'s


def test_messages_say_what_is_valid():
    with pytest.raises(ConfigError) as e:
        experiment.load(HERE / "bad-many.toml")
    text = str(e.value)
    assert "valid: base_edge, eu_central_1, eu_west_3, us_east_1" in text
    assert "'infinite', 'droptail'" in text
    with pytest.raises(ConfigError) as e:
        experiment.load(HERE / "bad-unknown-key.toml")
    assert "valid: name, seed, duration_s" in str(e.value)
    with pytest.raises(ConfigError) as e:
        experiment.load(HERE / "bad-trace-invalid.toml")
    assert "invalid.trace:2" in str(e.value)
    with pytest.raises(ConfigError) as e:
        experiment.load(HERE / "bad-cell.toml")
    text = str(e.value)
    assert "cell.ue.endpoint9.slo: unknown key; valid: class, slo_ms" in text
    assert "'endpoint5' is not an endpoint or bulk UE of this file; valid: endpoint0, bulk0" in text
    assert "not a whole number of 500 us slots" in text


def test_cli_validate_and_dry_run_touch_nothing(tmp_path):
    """Nothing is written (not even the trace cache) and nothing is started:
    they work with an empty cache and without the emulator built."""
    cli = [sys.executable, "-m", "continuum"]
    cache = tmp_path / "cache"
    cache.mkdir()
    env = {**os.environ, "CONTINUUM_TRACE_CACHE": str(cache), "MAHIMAHI_LINK": str(tmp_path / "not-built")}
    bad = subprocess.run([*cli, "validate", str(HERE / "bad-many.toml")], capture_output=True, text=True, cwd=REPO, env=env)
    assert bad.returncode == 2 and "core.cloud" in bad.stderr
    ok = subprocess.run([*cli, "validate", str(HERE / "good-full.toml"), str(REPO / "configs" / "quickstart.toml")],
                        capture_output=True, text=True, cwd=REPO, env=env)
    assert ok.returncode == 0, ok.stderr
    before = hoststate.namespaces()
    dry = subprocess.run([*cli, "run", str(HERE / "good-full.toml"), "--dry-run"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert dry.returncode == 0, dry.stderr
    for word in ("endpoint1", "10.203.0.2", "mahimahi-link forward", "us_east_1", "codel", "mosquitto", "forwarding threads 2"):
        assert word in dry.stdout
    assert "host not ready" in dry.stdout and "not-built" in dry.stdout  # said, not crashed on
    assert hoststate.namespaces() == before  # ours only: the link lane makes its own beside this test
    assert not (tmp_path / "runs").exists()
    assert list(cache.rglob("*")) == [], "validate and --dry-run wrote into the trace cache"


def test_run_provider_overrides_the_files_kind_and_the_run_keeps_the_text(tmp_path):
    """`continuum run --provider KIND FILE`: the file's [provider] kind replaced (or the table
    added), every other key as written; the spec's text, which the run folder keeps, says so."""
    from continuum.config.resolve import with_provider

    smec = experiment.load(REPO / "configs" / "smec-mix.toml", materialize=False, provider="qemu")
    assert smec.provider == "qemu" and "[provider]\nkind = \"qemu\"  # continuum run --provider qemu" in smec.text
    assert experiment.load(REPO / "configs" / "smec-mix.toml", materialize=False).provider == "netns"
    qemu = experiment.load(REPO / "configs" / "qemu-containers.toml", materialize=False, provider="netns")
    assert qemu.provider == "netns" and qemu.text.count("kind = ") == 1
    # a [provider] table without kind gets one under its header, before its sub-tables
    text = '[experiment]\nname = "x"\n[provider]\nhost_keys = "first-use"\n[provider.hosts.m]\naddress = "192.0.2.1"\n'
    out = with_provider(text, "hosts", "f.toml")
    assert out.index('kind = "hosts"') < out.index("[provider.hosts.m]") and out.count("kind") == 1
    # a key of the file's provider that the new one has not: said by name
    vms = tmp_path / "vms.toml"
    vms.write_text((REPO / "configs" / "qemu-smec.toml").read_text().replace('vm_cpu = "auto"', 'vm_cpu = "qemu64"'))
    with pytest.raises(ConfigError) as e:
        experiment.load(vms, materialize=False, provider="netns")
    assert "provider.vm_cpu" in str(e.value)
    with pytest.raises(ConfigError) as e:
        experiment.load(REPO / "configs" / "quickstart.toml", materialize=False, provider="vmware")
    assert "provider.kind" in str(e.value) and "qemu" in str(e.value)
    bad = tmp_path / "inline.toml"
    bad.write_text('provider = { kind = "netns" }\n' + (REPO / "configs" / "quickstart.toml").read_text())
    with pytest.raises(ConfigError) as e:
        experiment.load(bad, materialize=False, provider="qemu")
    assert "--provider qemu" in str(e.value)
    dry = subprocess.run([sys.executable, "-m", "continuum", "run", "--provider", "qemu", "--dry-run",
                          str(REPO / "configs" / "smec-mix.toml")], capture_output=True, text=True, cwd=tmp_path)
    assert dry.returncode == 0 and "VMs (QEMU" in dry.stdout and "endpoint11" in dry.stdout, dry.stdout[-2000:] + dry.stderr
    # utilisation: measured in the edge VM by the run, not by `continuum calibrate` (which refuses other providers)
    plan = " ".join(dry.stdout.split())
    assert "calibration on edge0 itself (qemu)" in plan and "continuum calibrate" not in plan, plan[-1500:]


def test_one_pass_reports_schema_and_resolution_problems_together():
    """Schema errors must not hide the checks that resolve names or read keys
    together (trace names, counts, app names, payload bounds): one report."""
    with pytest.raises(ConfigError) as e:
        experiment.load(HERE / "bad-one-pass.toml")
    by_key: dict[str, list[str]] = {}
    for i in e.value.issues:
        by_key.setdefault(i.key, []).append(i.message)
    assert set(by_key) == {
        "experiment.name", "experiment.duration_s", "nodes.endpoint.count", "nodes.edge.cpus",
        "mobile.uplink", "mobile.downlink", "mobile.downlink_queue", "mobile.uplink_queue_args", "mobile.uplink_loss",
        "mobile.emulator_threads", "core.edge", "workload.app", "workload.rate", "workload.payload",
    }, e.value
    assert "no-such-uplink-trace" in by_key["mobile.uplink"][0]
    assert "at least one endpoint" in by_key["nodes.endpoint.count"][0]
    assert "valid: augmented_reality, custom, edge_tasks, file_download, file_transfer, flows, image_classification" in by_key["workload.app"][0]
    assert by_key["workload.payload"] == ["min_bytes 50000 > max_bytes 20000"]
    assert "needs a limit" in by_key["mobile.uplink_queue_args"][0]
    # the bad downlink queue is reported once, not again as bad queue arguments for its default
    assert "mobile.downlink_queue_args" not in by_key


def test_cli_validate_prints_every_problem_in_one_run():
    r = subprocess.run([sys.executable, "-m", "continuum", "validate", str(HERE / "bad-one-pass.toml")],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2
    assert "14 problem(s)" in r.stderr, r.stderr
    for key in ("mobile.uplink", "nodes.endpoint.count", "workload.app", "workload.payload", "experiment.duration_s"):
        assert f": {key}:" in r.stderr


def test_one_definition_per_fact():
    """Facts that live in one place only, read by the others (a failing test
    here means a second definition crept in)."""
    from workloads import congestion
    from workloads.contract import Env

    from continuum.config import raw

    assert set(raw.CongestionControl.model_fields["restore"].annotation.__args__) == set(congestion.RESTORE)
    cc = congestion.CongestionControl(base_rate=1.0)
    defaults = raw.CongestionControl()
    assert (defaults.threshold_ms, defaults.factor, defaults.hold_s) == (cc.threshold_ms, cc.factor, cc.hold_s)
    docs = (REPO / "docs" / "workloads.md").read_text()
    for name in Env.names():
        assert f"`{name}`" in docs, f"{name} is set by continuum but not described in docs/workloads.md"
    launch = (REPO / "continuum" / "workloads" / "launch.py").read_text()
    assert '"CONTINUUM_' not in launch, "launch.py spells a variable name instead of using workloads.contract.Env"


def test_edge_manager_keys_are_checked(tmp_path):
    """[edge.manager]: the quota must start at the server's own CPUs, in whole
    steps, and SMEC needs process workloads; every problem named."""
    base = HERE / "good-minimal.toml"
    f = tmp_path / "m.toml"
    f.write_text(base.read_text() + '\n[nodes.edge]\ncpus = 0.3\n\n[edge.manager]\nkind = "smec"\nmax_cpus = 0.2\nmode = "gpus"\n')
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    assert {i.key for i in e.value.issues} == {"edge.manager.mode"}  # a schema error stops the checks on that table
    f.write_text(base.read_text() + '\n[edge.manager]\nkind = "smec"\nmax_cpus = 1.5\nmode = "cores"\n')
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    assert [i.key for i in e.value.issues] == ["edge.manager.max_cpus"] and "whole cores" in str(e.value)
    f.write_text(base.read_text() + '\n[nodes.edge]\ncpus = 0.3\n\n[edge.manager]\nkind = "smec"\n')
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    assert [i.key for i in e.value.issues] == ["edge.manager.unit_cpus"] and "0.25-CPU steps" in str(e.value)
    f.write_text(base.read_text() + '\n[nodes.edge]\ncpus = 1.0\n\n[edge.manager]\nkind = "smec"\nmax_cpus = 0.5\n')
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    assert [i.key for i in e.value.issues] == ["edge.manager.max_cpus"]
    f.write_text(base.read_text() + '\n[edge.manager]\nkind = "smec"\nslo_ms = 90\n')
    spec = experiment.load(f)
    assert spec.edge["smec"].quota == (0.25, 2.0, 30.0) and "mosaic" not in spec.edge
    # cores mode hands out the cores where the server runs: a qemu edge VM's vCPUs (ceil of its cpus), not this host's
    vm = '[provider]\nkind = "qemu"\n' + base.read_text() + '\n[nodes.edge]\ncpus = {cpus}\n\n[edge.manager]\nkind = "smec"\nmode = "cores"\nmax_cpus = 4\n'
    f.write_text(vm.format(cpus=2.0))
    with pytest.raises(ConfigError) as e:
        experiment.load(f, materialize=False)
    assert [i.key for i in e.value.issues] == ["edge.manager.max_cpus"] and "the edge VM (edge0, cpus 2)" in str(e.value)
    f.write_text(vm.format(cpus=3.5))
    assert experiment.load(f, materialize=False).edge["smec"].mode == "cores"


MIX = """
[workload]
rate = 2

[workload.apps.ar]
app = "augmented_reality"
endpoints = 2
rate = 5
slo_ms = 100

[workload.apps.ft]
app = "file_transfer"
endpoints = 1
best_effort = true
payload = { distribution = "fixed", mean_bytes = 3000000 }
"""


def test_a_mix_gives_each_app_its_endpoints_slo_and_keys(tmp_path):
    f = tmp_path / "mix.toml"
    f.write_text((HERE / "good-minimal.toml").read_text() + MIX + '\n[edge.manager]\nkind = "smec"\nmode = "cores"\nmax_cpus = 2\n')
    spec = experiment.load(f)
    assert spec.mix and [n.name for n in spec.role("endpoint")] == ["endpoint0", "endpoint1", "endpoint2"]
    ar, ft = spec.apps
    assert (ar.name, ar.endpoints, ar.slo_ms, ar.workload.rate, ar.index) == ("ar", ("endpoint0", "endpoint1"), 100.0, 5.0, 0)
    assert ar.urgency_ms == pytest.approx(100 / 3) and ar.workload.params["input"] == 224
    assert (ft.endpoints, ft.slo_ms, ft.urgency_ms, ft.workload.rate) == (("endpoint2",), None, None, 2.0)  # [workload]'s rate
    assert ft.workload.payload["mean_bytes"] == 3_000_000
    assert spec.app_of("endpoint2") is ft and spec.edge["smec"].mode == "cores" and spec.edge["smec"].mps == "auto"
    # in a shared cell each endpoint's class and SLO come from its app, unless [cell.ue] says otherwise
    f.write_text(f.read_text() + '\n[cell]\nuplink = "smec"\nslo_ms = 300\n\n[cell.ue.endpoint1]\nslo_ms = 120\n')
    members = {m.name: (m.cls, m.slo_ms) for m in experiment.load(f).cell.members}
    assert members == {"endpoint0": ("lc", 100.0), "endpoint1": ("lc", 120.0), "endpoint2": ("be", 100.0)}


def test_mps_on_without_a_gpu_is_refused_before_anything_is_built(tmp_path):
    """`mps = "on"` asks for CUDA MPS; where it cannot run, the host check says why (this
    machine has no GPU; on one with MPS the check passes and the run starts a daemon)."""
    from continuum.edge import registry
    from continuum.providers.netns import NetnsProvider
    from smec_edge import mps

    f = tmp_path / "mix.toml"
    f.write_text((HERE / "good-minimal.toml").read_text() + MIX + '\n[edge.manager]\nkind = "smec"\nmode = "cores"\nmax_cpus = 2\nmps = "on"\n')
    spec = experiment.load(f)
    assert spec.edge["smec"].mps == "on"
    problems = [p for p in registry.problems(spec, "netns", NetnsProvider.node_verbs) if "MPS" in p]
    if mps.unavailable() is None:
        assert problems == []
    else:
        assert len(problems) == 1 and mps.unavailable() in problems[0] and '"auto"' in problems[0]
    f.write_text(f.read_text().replace('mps = "on"', 'mps = "sometimes"'))
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    assert "edge.manager.mps" in {i.key for i in e.value.issues}


def test_a_mix_is_checked_group_by_group(tmp_path):
    f = tmp_path / "mix.toml"
    base = (HERE / "good-minimal.toml").read_text()
    bad_mix = MIX.replace('endpoints = 2\nrate = 5', 'endpoints = 2\nrate = 5\npayload = { min_bytes = 1000 }')
    bad_mix = bad_mix.replace("best_effort = true", "best_effort = true\nslo_ms = 50")
    bad_mix += '\n[workload.apps.x-y]\napp = "smart_stadium"\n\n[workload.apps.z]\napp = "yolo"\n'
    f.write_text(base.replace("[experiment]", "[nodes.endpoint]\ncount = 2\n\n[experiment]") + bad_mix
                 + '\n[edge.manager]\nkind = "smec"\nmode = "cores"\nmax_cpus = 2\n')
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    keys = {i.key for i in e.value.issues}
    assert {"nodes.endpoint.count", "workload.apps.ar.payload", "workload.apps.ft.best_effort", "workload.apps.x-y",
            "workload.apps.z.app", "edge.manager.mode"} <= keys, keys
    messages = {i.key: i.message for i in e.value.issues}
    assert "[workload.apps] runs 5" in messages["nodes.endpoint.count"] and "own" in messages["edge.manager.mode"]
    f.write_text(base + MIX.replace("[workload]\nrate = 2", '[workload]\nrate = 2\nruntime = "container"'))
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    assert "workload.runtime" in {i.key for i in e.value.issues} and "processes only" in str(e.value)


def test_edge_admission_goes_with_edge_tasks_and_alone(tmp_path):
    f = tmp_path / "tasks.toml"
    base = (HERE / "good-minimal.toml").read_text()
    f.write_text(base + '\n[workload]\napp = "edge_tasks"\nrate = 3\n')
    a = experiment.load(f).edge.get("mosaic")
    assert a is not None and a["policy"] == "fcfs" and a["slots"] >= 1  # no section: FCFS
    f.write_text(base + '\n[workload]\napp = "edge_tasks"\nrate = 3\n\n[edge.admission]\npolicy = "mosaic"\nn_max = 4\n')
    a = experiment.load(f).edge.get("mosaic")
    assert a is not None and (a["policy"], a["n_max"], a["tau_ipc"]) == ("mosaic", 4, 0.35)
    f.write_text(base + '\n[edge.admission]\npolicy = "edf"\n')  # the default app is W1: nothing to admit
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    assert "edge.admission" in {i.key for i in e.value.issues} and "edge_tasks" in str(e.value)
    f.write_text(base + '\n[workload]\napp = "edge_tasks"\n\n[edge.admission]\npolicy = "lottery"\n')
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    assert "edge.admission.policy" in {i.key for i in e.value.issues}
    f.write_text(base + '\n[workload]\napp = "edge_tasks"\n\n[edge.manager]\nkind = "smec"\nmode = "off"\n')
    with pytest.raises(ConfigError) as e:
        experiment.load(f)
    assert "choose one" in str(e.value)


def test_an_edge_system_is_refused_by_a_provider_without_the_node_verbs_it_needs(tmp_path):
    """The providers know no edge system: a system states its needs, a provider its node verbs
    (Provider.node_verbs), and a need no verb meets is refused by name before anything is built."""
    from continuum.edge import registry
    from continuum.providers import REGISTRY

    f = tmp_path / "tasks.toml"
    base = (HERE / "good-minimal.toml").read_text()
    f.write_text(base + '\n[workload]\napp = "edge_tasks"\nrate = 3\n\n[edge.admission]\npolicy = "mosaic"\n')
    spec = experiment.load(f, materialize=False)
    assert "child_cgroups" in spec.edge_needs and "node_daemon" in spec.edge_needs
    assert registry.problems(spec, "netns", REGISTRY["netns"].node_verbs) == []
    refused = registry.problems(spec, "bare", frozenset())  # a provider with no node verbs
    assert len(refused) == 1 and "[edge.admission]" in refused[0] and "root daemon" in refused[0], refused
    # qemu and hosts have the verbs (#38): MOSAIC runs on both (tests/hosts, tests/qemu)
    tasks = f.read_text()
    f.write_text('[provider]\nkind = "qemu"\n' + tasks)
    spec = experiment.load(f, materialize=False)
    assert registry.problems(spec, "qemu", REGISTRY["qemu"].node_verbs) == []
    f.write_text('[provider]\nkind = "hosts"\n[provider.hosts.m]\naddress = "192.0.2.1"\nrole = ["endpoint", "edge", "link"]\n' + tasks)
    spec = experiment.load(f, materialize=False)
    assert registry.problems(spec, "hosts", REGISTRY["hosts"].node_verbs) == []
    f.write_text('[provider]\nkind = "qemu"\n' + base + '\n[edge.manager]\nkind = "smec"\n')
    spec = experiment.load(f, materialize=False)
    assert spec.edge["smec"].quota is not None and registry.problems(spec, "qemu", REGISTRY["qemu"].node_verbs) == []
    f.write_text(base + '\n[edge.manager]\nkind = "smec"\nmode = "off"\n')  # timing and drops only: no daemon
    spec = experiment.load(f, materialize=False)
    assert spec.edge["smec"].quota is None and registry.problems(spec, "bare", frozenset()) == []


@pytest.mark.parametrize("name", ["lte-fdd-srsran", "nr-fdd", "nr-tdd-dddsu"])
def test_each_access_preset_resolves_and_the_emulator_takes_its_radio(name, tmp_path):
    """[mobile] access = PRESET: a one-UE uplink cell at the preset's timings, its radio in both
    directions shown by --dry-run, and mahimahi-link accepts the radio values the run would pass."""
    from continuum.config import presets
    from continuum.traces import mahimahi_link_binary

    a = presets.ACCESS[name]
    text = (REPO / "configs" / "quickstart.toml").read_text().replace("[mobile]", f'[mobile]\naccess = "{name}"', 1)
    path = tmp_path / "access.toml"
    path.write_text(text)
    spec = experiment.load(path, materialize=False)
    c = spec.cell
    assert c is not None and c.access == name and c.slot_us == a.slot_us and c.blocks == a.blocks, c
    assert c.sr_period_slots == round(a.sr_period_ms * 1000 / a.slot_us) and c.k2_slots == a.k2_slots, c
    dry = subprocess.run([sys.executable, "-m", "continuum", "run", str(path), "--dry-run"], capture_output=True, text=True, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert f"access procedure ({name}" in dry.stdout and a.summary() in " ".join(dry.stdout.split()), dry.stdout
    mml = mahimahi_link_binary()
    if not mml.exists():
        pytest.skip(f"mahimahi-link is not built ({mml}): `make -C mahimahi-link` builds it")
    trace = tmp_path / "t"
    trace.write_text("1\n")
    for flag, up in (("--uplink-radio", True), ("--downlink-radio", False)):
        p = subprocess.run([str(mml), "simulate", str(trace), f"{flag}={a.radio(up)}"], input="0 1504\n", capture_output=True, text=True)
        assert p.returncode == 0 and "radio packets=1" in p.stdout, (flag, p.stderr)
