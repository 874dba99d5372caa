"""A campaign's points on several machines (`continuum run FILE --hosts
INVENTORY`): the machines come from an Ansible inventory, and each point
runs whole on one of them, one point per machine at a time.

Why a point runs whole on one machine, through the hosts provider with
every role on that machine: the points are independent, and a point that
keeps its endpoint, link and edge on one machine has the network plan of a
netns run there (its veths stay veths, nothing crosses the lab's network),
so machines add throughput without changing what a point measures. The
hosts provider already prepares a machine with playbooks/site.yml, runs
there over SSH, measures the app's service time on it (recorded per point)
and brings the records back into the point's folder here.

Why the inventory is read by `ansible-inventory`: it is the format the
lab already keeps for the playbooks (YAML or INI, groups, variables), and
Ansible's own reader is the one that knows all of it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from continuum.config.raw import HOST_ROLES
from continuum.errors import UsageError

HOST_KEYS = ("known", "first-use")


@dataclass(frozen=True)
class Worker:
    """One machine of the inventory: where SSH reaches it, how its host key is trusted, and whether the
    campaign's first point on it provisions it."""

    name: str
    address: str
    user: str = "root"
    port: int = 22
    key: str | None = None
    host_keys: str = "known"
    provision: bool = True

    def as_json(self) -> str:
        """The argument continuum/campaign/worker.py reads."""
        return json.dumps(dataclasses.asdict(self))


def read_inventory(path: Path) -> list[Worker]:
    """The inventory's machines (every host in it, each once); UsageError naming the file, and the
    machine and variable, when one cannot be used."""
    if not path.is_file():
        raise UsageError(f"--hosts {path}: no such file (an Ansible inventory, YAML or INI, of the machines to run "
                         "points on; docs/campaigns.md)")
    try:
        p = subprocess.run(["ansible-inventory", "-i", str(path), "--list"], capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise UsageError("--hosts: ansible-inventory not found: install Debian's ansible-core (./setup.sh does)") from None
    if p.returncode != 0:
        raise UsageError(f"--hosts {path}: ansible-inventory could not read it: {p.stderr.strip()[-600:]}")
    found = [line.strip() for line in p.stderr.splitlines() if "Unable to parse" in line or "No inventory was parsed" in line]
    if found:
        raise UsageError(f"--hosts {path}: not an inventory Ansible can read ({found[0][-300:]})")
    data = json.loads(p.stdout)
    hostvars: dict[str, dict] = data.get("_meta", {}).get("hostvars", {})
    names = _hosts(data)
    if not names:
        raise UsageError(f"--hosts {path}: no machines in it (give each under all.hosts: NAME: {{ansible_host: ADDRESS}})")
    workers, bad = [], []
    for name in names:
        v = hostvars.get(name, {})
        keys = v.get("continuum_host_keys", "known")
        if keys not in HOST_KEYS:
            bad.append(f"{name}: continuum_host_keys = {keys!r}; valid: {', '.join(HOST_KEYS)}")
        provision = v.get("continuum_provision", True)
        if not isinstance(provision, bool):
            bad.append(f"{name}: continuum_provision = {provision!r}; valid: true, false")
        try:
            port = int(v.get("ansible_port", 22))
        except (TypeError, ValueError):
            bad.append(f"{name}: ansible_port = {v.get('ansible_port')!r} is not a port number")
            port = 22
        if v.get("ansible_become"):
            bad.append(f"{name}: ansible_become: a campaign's points run as root over SSH (the hosts provider's "
                       "machines need a root login); give ansible_user: root")
        workers.append(Worker(name, str(v.get("ansible_host", name)), str(v.get("ansible_user", "root")), port,
                              v.get("ansible_ssh_private_key_file"), keys, provision))
    if bad:
        raise UsageError(f"--hosts {path}: " + "; ".join(bad))
    return workers


def _hosts(data: dict) -> list[str]:
    """Every host under `all`, through its groups, in the inventory's order, once each."""
    out: list[str] = []

    def walk(group: str, seen: set[str]) -> None:
        if group in seen:
            return
        seen.add(group)
        g = data.get(group, {})
        for h in g.get("hosts", []):
            if h not in out:
                out.append(h)
        for child in g.get("children", []):
            walk(child, seen)

    walk("all", set())
    return out


def point_text(text: str, worker: Worker, provision: bool) -> str:
    """A point's file run whole on `worker`: [provider] the hosts provider with this one machine in
    every role; the rest of the file as it was."""
    doc = tomllib.loads(text)
    first = text.splitlines()[0] if text.startswith("# point ") else ""
    host: dict = {"address": worker.address, "user": worker.user, "port": worker.port, "role": list(HOST_ROLES)}
    if worker.key:
        host["key"] = worker.key
    doc["provider"] = {"kind": "hosts", "host_keys": worker.host_keys, "provision": provision,
                       "hosts": {worker.name: host}}
    return (f"{first}, on {worker.name}\n" if first else "") + tomli_w.dumps(doc)


def refuse_other_provider(text: str, file: Path) -> None:
    """--hosts runs the points through the hosts provider: a file that names another provider (qemu, or
    hosts with machines of its own) is not run by it silently."""
    kind = tomllib.loads(text).get("provider", {}).get("kind", "netns")
    if kind != "netns":
        raise UsageError(f"{file}: [provider] kind = {kind!r}, but --hosts runs each point whole on one machine of the "
                         "inventory as a netns run there; remove [provider] kind (or set \"netns\"), or drop --hosts")
