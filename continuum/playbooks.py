"""Provisioning machines with playbooks/site.yml: the inventory a run
writes, the wheels its nodes install offline, and ansible-playbook run with
its output in the run's logs and its recap read back.

Why Ansible and not continuum's own SSH commands: the same roles serve a
user who provisions lab machines by hand (playbooks/README.md), are linted,
and say per task what changed; continuum only decides which groups a
machine is in and which variables it gets."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rich.markup import escape

from continuum import REPO
from continuum.engines import containers
from continuum.errors import ProviderError

if TYPE_CHECKING:
    from continuum.remote import SshHost

PLAYBOOKS = REPO / "playbooks"
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")


@dataclass(frozen=True)
class Recap:
    """ansible-playbook's PLAY RECAP, per machine."""

    ok: dict[str, int]
    changed: dict[str, int]
    failed: dict[str, int]
    unreachable: dict[str, int]
    seconds: float


def problem() -> str | None:
    """Why playbooks cannot run here (None: ansible-playbook is installed)."""
    if not shutil.which("ansible-playbook"):
        return "ansible-playbook not found: install Debian's ansible-core and ansible (./setup.sh does)"
    return None


def inventory(hosts: dict[str, SshHost], groups: dict[str, list[str]], host_vars: dict[str, dict]) -> dict:
    """An Ansible inventory (YAML's JSON subset) for these machines and groups."""
    all_hosts: dict[str, dict] = {}
    for name, h in hosts.items():
        v: dict = {"ansible_host": h.address, "ansible_port": h.port, "ansible_user": h.user,
                   "continuum_root": h.root, **host_vars.get(name, {})}
        if h.key:
            v["ansible_ssh_private_key_file"] = str(Path(h.key).expanduser())
        if h.known_hosts is not None:
            v["ansible_ssh_common_args"] = f"-o UserKnownHostsFile={h.known_hosts} -o StrictHostKeyChecking=accept-new"
        all_hosts[name] = v
    children: dict[str, dict] = {g: {"hosts": {m: {} for m in members}} for g, members in groups.items() if members}
    return {"all": {"hosts": all_hosts, "children": children}}


def run(playbook: str, inv: dict, log: Path, say: Callable[[str], None], extra_vars: dict | None = None,
        timeout: float = 1800) -> Recap:
    """ansible-playbook PLAYBOOK on the inventory; its output to `log`, each
    task named as it starts; a failure names the machine and the task."""
    log.parent.mkdir(parents=True, exist_ok=True)
    inv_file = log.with_suffix(".inventory.json")
    inv_file.write_text(json.dumps(inv, indent=2) + "\n")
    argv = ["ansible-playbook", "-i", str(inv_file), str(PLAYBOOKS / playbook)]
    if extra_vars:
        argv += ["--extra-vars", json.dumps(extra_vars)]
    env = {"ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"), "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(log.parent / ".ansible-tmp"), "PYTHONUNBUFFERED": "1"}
    t0 = time.monotonic()
    lines: list[str] = []
    with open(log, "w") as out:
        p = subprocess.Popen(argv, cwd=PLAYBOOKS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env={**os.environ, **env})
        assert p.stdout is not None
        for line in p.stdout:
            out.write(line)
            lines.append(line.rstrip("\n"))
            if line.startswith("TASK ["):
                say(escape(f"  {line.split(' *')[0].strip()}"))
            if time.monotonic() - t0 > timeout:
                p.kill()
                raise ProviderError(f"{playbook} ran past {timeout:.0f} s; see {log}")
        p.wait()
    recap = parse_recap(lines, time.monotonic() - t0)
    if p.returncode != 0:
        failed = [m for m, n in {**recap.failed, **recap.unreachable}.items() if n]
        errors = [ln.strip() for ln in lines if ln.startswith(("fatal:", "failed:"))][-4:]
        raise ProviderError(f"provisioning with playbooks/{playbook} failed" + (f" on {', '.join(failed)}" if failed else "")
                            + f" (exit {p.returncode}):\n    " + "\n    ".join(e[:600] for e in (errors or lines[-6:]))
                            + f"\n  full output: {log}")
    return recap


def parse_recap(lines: list[str], seconds: float) -> Recap:
    ok: dict[str, int] = {}
    changed: dict[str, int] = {}
    failed: dict[str, int] = {}
    unreachable: dict[str, int] = {}
    in_recap = False
    for line in lines:
        if line.startswith("PLAY RECAP"):
            in_recap = True
            continue
        m = RECAP.match(line) if in_recap else None
        if m:
            host = m.group(1)
            ok[host], changed[host] = int(m.group(2)), int(m.group(3))
            unreachable[host], failed[host] = int(m.group(4)), int(m.group(5))
    return Recap(ok, changed, failed, unreachable, round(seconds, 1))


def ensure_wheels(requirements: list[str], say: Callable[[str], None]) -> None:
    """The wheelhouse has every wheel of these requirement files (for nodes without PyPI). Under a lock:
    a campaign provisions its machines from processes that run at once."""
    import fcntl

    containers.WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    with open(containers.WHEELHOUSE.parent / "wheelhouse.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for req in requirements:
            if not containers.wheels_missing(REPO / req):
                continue
            say(f"wheelhouse: {req}")
            containers.download_wheels(REPO / req)
