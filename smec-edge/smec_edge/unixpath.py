"""AF_UNIX addresses are at most 107 bytes, and a run folder can be deeper
than that: the manager's socket in experiments/smec/results/static/runs/
<stamp>-<name>/raw/ was 110, and its bind failed. A path that is too long is
reached through an open descriptor of its folder instead:
/proc/self/fd/N/NAME is short whatever the folder's depth, and it names the
same socket for the manager (bind) and for the servers (sendto)."""

from __future__ import annotations

import os

MAX_BYTES = 100
_folders: dict[str, int] = {}  # folder -> an O_PATH descriptor kept open for the process's life


def short(path: str | os.PathLike) -> str:
    """path itself when it fits a socket address, else the same file through /proc/self/fd."""
    path = os.fspath(path)
    if len(path.encode()) <= MAX_BYTES:
        return path
    folder, name = os.path.split(os.path.abspath(path))
    fd = _folders.get(folder)
    if fd is None:
        fd = _folders[folder] = os.open(folder, os.O_PATH | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{name}"
