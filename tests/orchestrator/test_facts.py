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
    assert _valid("simulate-cell", "--trace=/dev/null", "--scheduler=no-such") == raw.SCHEDULERS
    assert _valid("forward", "--downlink-cell=tutti") == raw.typing.get_args(raw.DownlinkScheduler)


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
