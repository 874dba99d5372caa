"""The network plan is the whole build recipe (no root needed): limits,
sandboxes, addresses, routes, neighbours and core delays, each consistent
with the others, so a provider builds it without looking at the spec."""

from __future__ import annotations

import inspect
import ipaddress
from pathlib import Path

import pytest

from continuum import experiment
from continuum.network import plan as netplan
from continuum.providers.base import Provider

HERE = Path(__file__).parent / "configs"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def full():
    spec = experiment.load(HERE / "good-full.toml", materialize=False)  # 2 endpoints, edge0, cloud0, offload cloud
    return spec, netplan.build(spec)


def test_nodes_carry_their_limits_and_infrastructure_has_none(full):
    spec, plan = full
    assert plan.namespaces == ("endpoint0", "endpoint1", "edge0", "cloud0", "ran", "core")
    for n in spec.nodes:
        assert plan.node(n.name).limits == netplan.Limits(n.cpus, n.memory_bytes)
        assert plan.node(n.name).role == n.role and not plan.node(n.name).sandboxed
    assert plan.node("ran").limits is None and plan.node("core").limits is None
    assert [n.name for n in plan.nodes if n.forwarding] == ["core"]
    assert plan.offload_target == "cloud0"


def _interfaces(plan):
    return [end for v in plan.veths for end in (v.a, v.b)]


def test_every_route_and_neighbour_points_into_a_connected_subnet(full):
    _, plan = full
    ifs = _interfaces(plan)
    assert {i.namespace for i in ifs} == set(plan.namespaces)
    nets = {(i.namespace, i.name): ipaddress.ip_interface(i.address).network for i in ifs if i.address}
    for r in plan.routes:
        if r.via:
            assert any(ns == r.namespace and ipaddress.ip_address(r.via) in net for (ns, _), net in nets.items()), r
    for nb in plan.neighbours:
        assert ipaddress.ip_address(nb.address) in nets[(nb.namespace, nb.dev)], nb
        peer = next(i for i in ifs if (i.namespace, i.name) == (nb.peer_namespace, nb.peer_dev))
        assert peer.address and ipaddress.ip_interface(peer.address).ip == ipaddress.ip_address(nb.address), \
            "the entry maps the address to the MAC of the interface that holds it"
    # each endpoint: its gateway, and the core's way back to it, both permanent (no ARP over the cell link)
    for ep in ("endpoint0", "endpoint1"):
        gw = next(r.via for r in plan.routes if r.namespace == ep)
        assert any(nb.namespace == ep and nb.address == gw for nb in plan.neighbours)
        assert any(nb.namespace == "core" and nb.address == plan.addresses[ep] for nb in plan.neighbours)


def test_addresses_stay_inside_the_emulated_range(full):
    _, plan = full
    inside = ipaddress.ip_network(netplan.ALL_NETS)
    for i in _interfaces(plan):
        if i.address:
            assert ipaddress.ip_interface(i.address).ip in inside, i
    for x in plan.extra_addresses:
        assert ipaddress.ip_interface(x.cidr).ip in inside and x.dev == netplan.NODE_IF
    assert {x.namespace for x in plan.extra_addresses} == set(plan.probe_addresses)


def test_core_delays_name_their_prefix_and_both_netem_ends(full):
    spec, plan = full
    assert plan.delay_mechanism == "mahimahi-link"
    by_tier = {d.tier: d for d in plan.core_delays}
    assert by_tier["edge"].one_way_ms == spec.core.edge_ms and by_tier["cloud"].one_way_ms == spec.core.cloud_ms
    for d in plan.core_delays:
        for ns, dev in d.netem_devices:
            addr = next(i.address for i in _interfaces(plan) if (i.namespace, i.name) == (ns, dev))
            assert ipaddress.ip_interface(addr).ip in ipaddress.ip_network(d.prefix)


def test_mechanism_and_sandboxes_are_decided_in_the_plan(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text('[experiment]\nname = "j"\nduration_s = 1\n[mobile]\nuplink = "const-12mbps"\ndownlink = "const-48mbps"\n'
                    '[core]\njitter_ms = 2\n[workload]\nruntime = "container"\n')
    plan = netplan.build(experiment.load(path, materialize=False))
    assert plan.delay_mechanism == "netem" and {d.jitter_ms for d in plan.core_delays} == {2.0}
    assert {n.name for n in plan.nodes if n.sandboxed} == {"endpoint0", "edge0"}


def test_providers_build_from_the_plan_alone():
    assert list(inspect.signature(Provider.deploy).parameters) == ["self", "plan", "run_id", "undo", "say"]


def test_the_offload_nodes_machine_gets_its_apps_own_debian_packages():
    """The qemu and hosts providers hand plan.debian_packages to the workload role for the
    offload node's machine (and the qemu guest image variant): MOSAIC's edge_tasks runs
    redis-server and PyTorch there; W1 needs nothing beyond the role's common packages."""
    tasks = netplan.build(experiment.load(REPO / "configs" / "mosaic-quick.toml", materialize=False))
    assert tasks.debian_packages == ("python3-torch", "python3-torchvision", "redis-server")
    w1 = netplan.build(experiment.load(REPO / "configs" / "quickstart.toml", materialize=False))
    assert w1.debian_packages == () and w1.requirements == ("workloads/requirements-tensorflow.txt",)
    assert tasks.edge_daemon and not w1.edge_daemon  # MOSAIC's agent: site.yml's edge_manager group
