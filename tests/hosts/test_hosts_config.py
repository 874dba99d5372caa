"""[provider] kind = "hosts" in the experiment file: what is refused (each
error naming its key) and how nodes are placed on the machines, without any
machine (the live run is tests/hosts/test_hosts_live.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from continuum import config
from continuum import experiment
from continuum.errors import ConfigError
from continuum.network import plan as netplan

REPO = Path(__file__).resolve().parents[2]
BASE = (REPO / "configs" / "quickstart.toml").read_text()


def _load(tmp_path: Path, provider: str, nodes: str = "") -> config.ExperimentSpec:
    text = BASE.replace('[provider]\nkind = "netns"\n', provider)
    if nodes:
        text = text.replace("[nodes.endpoint]\ncount = 1\n", f"[nodes.endpoint]\ncount = {nodes}\n")
    f = tmp_path / "exp.toml"
    f.write_text(text)
    return experiment.load(f, materialize=False)


THREE = '''[provider]
kind = "hosts"
[provider.hosts.ue1]
address = "192.0.2.11"
role = "endpoint"
[provider.hosts.ue2]
address = "192.0.2.12"
role = "endpoint"
[provider.hosts.gw]
address = "gw.lab.example"
user = "root"
port = 2222
key = "~/.ssh/lab"
role = ["link", "edge"]
'''


def _keys(e: ConfigError) -> list[str]:
    return [i.key for i in e.issues]


def test_three_machines_place_endpoints_round_robin_and_the_link_with_the_core(tmp_path):
    spec = _load(tmp_path, THREE, nodes="3")
    plan = netplan.build(spec)
    assert plan.placement == {"endpoint0": "ue1", "endpoint1": "ue2", "endpoint2": "ue1", "edge0": "gw", "ran": "gw", "core": "gw"}
    gw = next(m for m in plan.machines if m.name == "gw")
    assert (gw.port, gw.key, gw.roles) == (2222, "~/.ssh/lab", ("link", "edge"))
    assert plan.requirements == ("workloads/requirements-tensorflow.txt",)  # W1's server, as its image has it
    assert plan.host_keys == "known" and plan.provision


@pytest.mark.parametrize("provider, key, words", [
    ('[provider]\nkind = "hosts"\n', "provider.hosts", "needs the machines"),
    ('[provider]\nkind = "netns"\n[provider.hosts.a]\naddress = "192.0.2.1"\nrole = "link"\n', "provider.hosts", "kind = \"hosts\""),
    (THREE.replace('role = ["link", "edge"]', 'role = "edge"'), "provider.hosts", "exactly one machine carries the link"),
    (THREE.replace('role = ["link", "edge"]', 'role = "link"'), "provider.hosts", "no machine has role 'edge'"),
    (THREE.replace("[provider.hosts.gw]", "[provider.hosts.Gw_1]"), "provider.hosts.Gw_1", "lower-case"),
    (THREE.replace('role = ["link", "edge"]', 'role = ["link", "fog"]'), "provider.hosts.gw.role", ""),
    (THREE.replace('port = 2222', 'port = 0'), "provider.hosts.gw.port", ""),
    (THREE.replace('address = "192.0.2.11"', 'address = "192.0.2.11; rm -rf /"'), "provider.hosts.ue1.address", ""),
    (THREE.replace('[provider.hosts.ue1]', '[provider.hosts.ue1]\npassword = "x"'), "provider.hosts.ue1.password", ""),
    (THREE.replace('kind = "hosts"', 'kind = "hosts"\nhost_keys = "any"'), "provider.host_keys", ""),
    ('[provider]\nkind = "netns"\nengine = "k3s"\n', "provider.engine", "kind = \"hosts\""),
    (THREE.replace('kind = "hosts"', 'kind = "hosts"\nengine = "k3s"'), "provider.k3s_server", "one of gw, ue1, ue2"),
    (THREE.replace('kind = "hosts"', 'kind = "hosts"\nengine = "k3s"\nk3s_server = "mec"'), "provider.k3s_server", "(not 'mec')"),
    (THREE.replace('kind = "hosts"', 'kind = "hosts"\nengine = "k3s"\nk3s_server = "gw"'), "workload.runtime", "from container images"),
    (THREE.replace('kind = "hosts"', 'kind = "hosts"\nengine = "kubernetes"'), "provider.engine", ""),
])
def test_bad_machines_are_refused_naming_the_key(tmp_path, provider, key, words):
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, provider)
    assert any(k.startswith(key) for k in _keys(e.value)), _keys(e.value)
    assert words in str(e.value), str(e.value)


def test_engine_k3s_plans_the_images_its_pods_need(tmp_path):
    provider = THREE.replace('kind = "hosts"', 'kind = "hosts"\nengine = "k3s"\nk3s_server = "gw"')
    f = tmp_path / "exp.toml"
    f.write_text(BASE.replace('[provider]\nkind = "netns"\n', provider)
                 .replace("[workload]\napp = ", '[workload]\nruntime = "container"\napp = '))
    spec = experiment.load(f, materialize=False)
    assert spec.engine == "k3s" and spec.k3s_server == "gw"
    p = netplan.build(spec)
    assert p.engine == "k3s" and p.k3s_server == "gw"
    assert set(p.images) == {"continuum/w1-endpoint:local", "continuum/w1-server:local"}
