"""Run external commands as argument lists (never through a shell) and judge them
by exit status; namespaces are entered with `ip netns exec`."""

from __future__ import annotations

import subprocess

from continuum.errors import CommandError


def run(argv: list[str], *, check: bool = True, timeout: float = 60.0, input: str | None = None) -> subprocess.CompletedProcess:
    """Run argv to completion and return it; raise CommandError when it fails and check is set."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input)
    except FileNotFoundError as e:
        raise CommandError(argv, 127, f"{argv[0]}: not found ({e})") from None
    except subprocess.TimeoutExpired as e:
        raise CommandError(argv, -1, f"timed out after {timeout:.0f} s") from e
    if check and p.returncode != 0:
        raise CommandError(argv, p.returncode, p.stderr)
    return p


def in_netns(netns: str, argv: list[str]) -> list[str]:
    """argv, run inside the named network namespace."""
    return ["ip", "netns", "exec", netns, *argv]
