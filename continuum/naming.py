"""Every resource a run creates carries its run id in its name, so `continuum
destroy` can find leftovers from what exists on the host after a crash, and
never touches anything that is not ours."""

from __future__ import annotations

import re
import secrets

TAG = "ctm"
RUN_ID = re.compile(r"^[0-9a-f]{8}$")
NETNS = re.compile(rf"^{TAG}-([0-9a-f]{{8}})-([a-z0-9]+)$")
CGROUP_ROOT = "continuum"


def new_run_id() -> str:
    return secrets.token_hex(4)


def netns(run_id: str, logical: str) -> str:
    """Host-visible namespace name of a logical namespace (node name, ran, core)."""
    return f"{TAG}-{run_id}-{logical}"


def parse_netns(name: str) -> tuple[str, str] | None:
    """(run id, logical name) of one of our namespaces, else None."""
    m = NETNS.match(name)
    return (m.group(1), m.group(2)) if m else None


def cgroup(run_id: str, node: str) -> str:
    """cgroup path relative to a hierarchy's root."""
    return f"{CGROUP_ROOT}/{run_id}/{node}"
