"""What of ours exists on the host: namespaces, cgroups, processes. Tests
compare it before and after a run: the host must be left as it was."""

from __future__ import annotations

import subprocess
from pathlib import Path


def namespaces(run_id: str = "") -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith(f"ctm-{run_id}")}


def cgroup_dirs(run_id: str = "") -> set[str]:
    found = set()
    for root in Path("/sys/fs/cgroup").glob("*/continuum"):
        found |= {str(p) for p in root.glob(f"{run_id}*")}
    v2 = Path("/sys/fs/cgroup/continuum")
    if v2.is_dir():
        found |= {str(p) for p in v2.glob(f"{run_id}*")}
    return found


def processes(marker: str) -> set[int]:
    """Processes whose command line mentions marker (e.g. a run folder)."""
    pids = set()
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if marker.encode() in (p / "cmdline").read_bytes():
                    pids.add(int(p.name))
            except OSError:
                pass
    return pids


def snapshot(run_id: str = "", marker: str | None = None) -> dict:
    return {"namespaces": namespaces(run_id), "cgroups": cgroup_dirs(run_id),
            "processes": processes(marker) if marker else set()}
