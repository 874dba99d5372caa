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
    assert _valid("forward", "--downlink-cell=tutti") == raw.DOWNLINK_SCHEDULERS
    assert _valid("forward", "--uplink-cell=mrfs") == raw.UPLINK_SCHEDULERS
    assert _valid("forward", "--uplink-cell=no-such") == raw.UPLINK_SCHEDULERS


def test_the_queues_are_the_emulators():
    assert _valid("forward", "--uplink-queue=no-such") == raw.QUEUES


def test_an_opportunity_is_the_emulators():
    lib = (REPO / "mahimahi-link" / "src" / "lib.rs").read_text()
    m = re.search(r"pub const OPPORTUNITY_BYTES: u32 = (\d+);", lib)
    assert m and int(m.group(1)) == mahimahi.OPPORTUNITY_BYTES
    assert mahimahi.OPPORTUNITY_BITS == 8 * (mahimahi.OPPORTUNITY_BYTES - 4)


def test_the_opportunitys_bytes_are_written_once():
    """No Python of ours spells an opportunity's 1504 bytes (or its 1500 IP bytes times 8) as a number:
    each use takes continuum/tracearchive/mahimahi.py's constants, which the test above holds to the
    emulator's (a literal once made one mean rate 0.27% higher than the archive's)."""
    import ast

    found = []
    for folder in ("continuum", "experiments", "workloads", "edge-systems", "smec-edge", "srsran-integration"):
        for p in sorted((REPO / folder).rglob("*.py")):
            if p.name == "mahimahi.py" and p.parent.name == "tracearchive":
                continue
            tree = ast.parse(p.read_text())
            for n in ast.walk(tree):
                if isinstance(n, ast.Constant) and n.value == 1504 and type(n.value) is int:
                    found.append(f"{p.relative_to(REPO)}:{n.lineno}: 1504")
                elif (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)
                      and {getattr(n.left, "value", None), getattr(n.right, "value", None)} == {1500, 8}):
                    found.append(f"{p.relative_to(REPO)}:{n.lineno}: 1500 * 8")
    assert not found, "\n".join(found)


def test_pdcells_wire_is_the_emulators():
    """The transport's header as edge-systems/pdcell/wire.py packs it is the CU's in mahimahi-link
    (src/pdcell/mod.rs, `wire`): size, magic, payload and the kinds' numbers; the orchestrator's CU
    port is the sources' and sinks' default."""
    from continuum.edge import pdcell as system
    from pdcell import wire

    src = (REPO / "mahimahi-link" / "src" / "pdcell" / "mod.rs").read_text()
    rust = src[src.index("pub mod wire {"):]
    assert int(re.search(r"pub const HEADER: usize = (\d+);", rust).group(1)) == wire.HEADER.size
    assert re.search(r'pub const MAGIC: \[u8; 2\] = \*b"(\w+)";', rust).group(1).encode() == wire.MAGIC
    assert "pub const PAYLOAD: u32 = 1500 - 20 - 8 - HEADER as u32;" in rust and wire.PAYLOAD == 1500 - 20 - 8 - wire.HEADER.size
    kinds = {k.lower(): int(v) for k, v in re.findall(r"^\s*(Rts|Data|Credit|Done) = (\d+),", rust, re.M)}
    assert kinds == {"rts": wire.RTS, "data": wire.DATA, "credit": wire.CREDIT, "done": wire.DONE}, kinds
    assert system.CU_PORT == wire.PORT


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
