"""One definition per fact, held to the emulator's own: what Python says of
mahimahi-link (its schedulers, queues and the size of a delivery opportunity)
is what the binary says, asked through its own messages and source."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from continuum.config import raw
from continuum.traces import mahimahi_link_binary
from continuum.tracearchive import mahimahi

REPO = Path(__file__).resolve().parents[2]


def _valid(*args: str) -> tuple[str, ...]:
    """The names the binary lists after 'valid' when it refuses an option."""
    binary = mahimahi_link_binary()
    if not binary.exists():
        pytest.skip(f"{binary} is not built: ./setup.sh builds it")
    p = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=30)
    m = re.search(r"valid(?: here)?: ([a-z_, ]+)", p.stderr)
    assert p.returncode != 0 and m, p.stderr
    return tuple(x.strip() for x in m.group(1).split(","))


def test_the_cells_schedulers_are_the_emulators():
    assert set(_valid("simulate-cell", "--trace=/dev/null", "--scheduler=no-such")) == set(raw.SCHEDULERS)
    assert _valid("forward", "--downlink-cell=tutti") == raw.typing.get_args(raw.DownlinkScheduler)
    assert _valid("forward", "--uplink-cell=mrfs") == raw.typing.get_args(raw.UplinkScheduler)


def test_the_queues_are_the_emulators():
    assert _valid("forward", "--uplink-queue=no-such") == raw.QUEUES


def test_an_opportunity_is_the_emulators():
    lib = (REPO / "mahimahi-link" / "src" / "lib.rs").read_text()
    m = re.search(r"pub const OPPORTUNITY_BYTES: u32 = (\d+);", lib)
    assert m and int(m.group(1)) == mahimahi.OPPORTUNITY_BYTES
    assert mahimahi.OPPORTUNITY_BITS == 8 * (mahimahi.OPPORTUNITY_BYTES - 4)


def test_the_workload_role_copies_every_edge_systems_node_side():
    """The machines of the qemu and hosts providers get the folders the node-side daemons and
    servers import (a MOSAIC agent on a machine without edge-systems/ died at import)."""
    import yaml

    from continuum.edge.registry import node_code

    defaults = yaml.safe_load((REPO / "playbooks" / "roles" / "workload" / "defaults" / "main.yml").read_text())
    assert set(node_code()) <= set(defaults["workload_trees"]), (node_code(), defaults["workload_trees"])


# what a server's import or command needs from Debian (the rest come from the wheelhouse: TensorFlow, transformers)
DEBIAN = {"torch": "python3-torch", "torchvision": "python3-torchvision", "av": "python3-av", "redis": "python3-redis",
          "numpy": "python3-numpy", "pandas": "python3-pandas", "PIL": "python3-pil", "zstandard": "python3-zstandard",
          "yaml": "python3-yaml", "aiohttp": "python3-aiohttp", "paho": "python3-paho-mqtt", '"redis-server"': "redis-server"}


def test_each_apps_debian_packages_cover_what_its_code_imports():
    """A machine of the qemu or hosts provider has only what the workload role installs: its common
    packages and the app's own (continuum/workloads: debian_packages). An app that imports
    torch without declaring python3-torch would die at import on a VM, never on this host,
    which has every package (setup.sh)."""
    import yaml

    from continuum.workloads import REGISTRY, debian_packages

    common = set(yaml.safe_load((REPO / "playbooks" / "roles" / "workload" / "defaults" / "main.yml").read_text())
                 ["workload_debian_packages"])
    for kind in (k for k in REGISTRY.values() if k.builtin):
        code = "\n".join(p.read_text() for p in (REPO / "workloads" / kind.name).glob("*.py"))
        used = {pkg for mod, pkg in DEBIAN.items()
                if re.search(rf"^\s*(import|from) {mod}\b", code, re.M) or (mod.startswith('"') and mod in code)}
        assert used <= common | set(kind.debian_packages), (kind.name, sorted(used - common - set(kind.debian_packages)))
    setup = (REPO / "setup.sh").read_text()
    apt = set(re.search(r"APT_PACKAGES=\(([^)]*)\)", setup, re.S).group(1).split())  # type: ignore[union-attr]
    assert set(debian_packages()) <= apt, sorted(set(debian_packages()) - apt)  # this host runs every app
