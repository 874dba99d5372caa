"""Named network namespaces on this machine: list them, and delete one with
every process still in it (what the netns provider and the qemu provider's
link namespace leave behind)."""

from __future__ import annotations

import contextlib
import os

from continuum import commands


def list_namespaces() -> list[str]:
    p = commands.run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def namespace_pids(netns: str) -> set[int]:
    p = commands.run(["ip", "netns", "pids", netns], check=False)
    return {int(x) for x in p.stdout.split()}


def kill_namespace_processes(netns: str) -> None:
    import signal
    import time

    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = namespace_pids(netns)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 3
        while namespace_pids(netns) and time.monotonic() < deadline:
            time.sleep(0.05)


def delete_namespace(netns: str) -> None:
    kill_namespace_processes(netns)
    commands.run(["ip", "netns", "del", netns], check=False)
