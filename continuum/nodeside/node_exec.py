"""The exec wrapper every node process starts through (stdlib only, run as
`python -I -S node_exec.py OPTIONS -- ARGV`): join the node's cgroup, enter
its network namespace (with that namespace's /sys, as `ip netns exec` does),
and for workloads give them their view of the file system and drop root,
then exec ARGV.

Why a wrapper and not `preexec_fn`: code between fork and exec in a
threaded parent (the orchestrator samples nodes from a thread) can deadlock
the child, as CPython documents; this process is single-threaded. The
cgroup is joined before the namespace is entered, while the host's
/sys/fs/cgroup is still in view.

Why the mounts: an unprivileged workload cannot reach files below a folder
it may not enter (a checkout in /root, the model cache in /root/.cache, a
run folder under /tmp/pytest-of-root). In a private mount namespace each
such folder is covered by an empty tmpfs and only the paths the workload
needs are bound back at their own paths, so every path in its environment
stays the same, and the rest of the covered folder is hidden. /tmp is its
own. The namespace ends with the process; nothing is left on the host.

Exit status 126 with a message on stderr: the wrapper could not set up
(the caller reads the node's log).
"""

from __future__ import annotations

import ctypes
import errno
import os
import pwd
import stat
import sys
from typing import NoReturn

CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MNT_DETACH = 2
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38

_libc = ctypes.CDLL(None, use_errno=True)


def _fail(msg: str) -> NoReturn:
    print(f"continuum node_exec: {msg}", file=sys.stderr, flush=True)
    sys.exit(126)


def _enc(s: str | None) -> bytes | None:
    return s.encode() if s is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = _enc
    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        _fail(f"mount {source or fstype} on {target}: {os.strerror(err)}")


def _can_enter(path: str, uid: int, gid: int) -> bool:
    st = os.stat(path)
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def _covers(paths: list[str], uid: int, gid: int) -> list[str]:
    """The outermost folders above `paths` the user cannot enter, and /tmp."""
    found = {"/tmp"}
    for p in paths:
        parts = p.strip("/").split("/")
        for i in range(1, len(parts)):
            a = "/" + "/".join(parts[:i])
            if not os.path.isdir(a):
                break
            if not _can_enter(a, uid, gid):
                found.add(a)
                break
    outer = [c for c in found if not any(c != o and c.startswith(o.rstrip("/") + "/") for o in found)]
    return sorted(outer, key=lambda c: c.count("/"))


def _parse(args: list[str]) -> tuple[str, list[str], str | None, list[tuple[str, bool]], str | None, list[str]]:
    procs: list[str] = []
    netns = ""
    user = chdir = None
    expose: list[tuple[str, bool]] = []
    i = 0
    while i < len(args) and args[i] != "--":
        if i + 1 >= len(args):
            _fail(f"{args[i]} needs a value")
        key, value = args[i], args[i + 1]
        if key == "--netns":
            netns = value
        elif key == "--cgroup-procs":
            procs.append(value)
        elif key == "--user":
            user = value
        elif key in ("--ro", "--rw"):
            expose.append((os.path.abspath(value), key == "--rw"))
        elif key == "--chdir":
            chdir = value
        else:
            _fail(f"unknown option {key}")
        i += 2
    argv = args[i + 1:]
    if not argv:
        _fail("usage: node_exec.py [--netns NS] [--cgroup-procs F]... [--user U [--ro P]... [--rw P]...] [--chdir D] -- ARGV")
    return netns, procs, user, expose, chdir, argv


def _enter(netns: str) -> None:
    """Into the network namespace, in a private mount namespace (nothing
    mounted here propagates to the host) with that namespace's /sys."""
    try:
        fd = os.open(f"/run/netns/{netns}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        _fail(f"no network namespace {netns}: {e.strerror}")
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        _fail(f"setns({netns}): {os.strerror(ctypes.get_errno())}")
    os.close(fd)
    if _libc.unshare(CLONE_NEWNS) != 0:
        _fail(f"unshare(CLONE_NEWNS): {os.strerror(ctypes.get_errno())}")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    if _libc.umount2(b"/sys", MNT_DETACH) == 0:
        _mount(netns, "/sys", "sysfs", 0)


def _view(expose: list[tuple[str, bool]], uid: int, gid: int) -> None:
    """The user reaches exactly `expose` (in the private mount namespace)."""
    existing = [(p, rw) for p, rw in expose if os.path.exists(p)]
    fds = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p, _ in existing}  # before anything is covered
    # Paths not there yet count too: a model cache that is missing must look
    # missing to the workload, not forbidden.
    for c in _covers([p for p, _ in expose], uid, gid):
        mode = "1777" if c == "/tmp" else "0755"
        _mount("tmpfs", c, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode}")
    if "/tmp" in fds:  # /tmp itself exposed (an experiment file directly in /tmp): its files, but writes stay private
        _private_tmp(fds["/tmp"])
        existing = [(p, rw) for p, rw in existing if p != "/tmp"]
        for p, _ in existing:  # a results folder in a private folder there (/tmp/pytest-of-root/...): its way in
            parts = p.split("/")
            for a in ("/".join(parts[:i]) for i in range(3, len(parts)) if p.startswith("/tmp/")):
                if os.path.isdir(a) and not _can_enter(a, uid, gid):
                    os.chmod(a, stat.S_IMODE(os.stat(a).st_mode) | 0o011)  # in the private layer only
    for p, rw in sorted(existing, key=lambda e: e[0].count("/")):
        if not os.path.lexists(p):  # covered, or on a mount a parent's bind left behind: make the mount point
            _mount_point(p, os.path.isdir(f"/proc/self/fd/{fds[p]}"))
        # Not MS_REC: that would bring along the tmpfs just mounted over p or its parents.
        _mount(f"/proc/self/fd/{fds[p]}", p, None, MS_BIND)
        if not rw:
            _mount(None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
    for fd in fds.values():
        os.close(fd)


def _private_tmp(host_tmp: int) -> None:
    """/tmp as the host's /tmp below a private writable layer (overlayfs, its upper layer on the tmpfs that
    covers /tmp, gone with the namespace): the workload reads the experiment's files there, and what it
    writes to /tmp (its HOME too) stays its own, as a covered /tmp would, and the host's /tmp is not touched."""
    for d in ("/tmp/.continuum/upper", "/tmp/.continuum/work"):
        os.makedirs(d, mode=0o755)
    os.chmod("/tmp/.continuum/upper", 0o1777)
    _mount("overlay", "/tmp", "overlay", MS_NOSUID | MS_NODEV,
           f"lowerdir=/proc/self/fd/{host_tmp},upperdir=/tmp/.continuum/upper,workdir=/tmp/.continuum/work")


def _mount_point(p: str, is_dir: bool) -> None:
    """Make p to bind onto. Where a read-only parent's bind (not recursive) left
    out the file system p lives on (a run folder on its own disk under the
    experiment's folder), its mount point shows the parent's empty directory, read-only:
    a tmpfs there, as on the host, where that mount hides the directory too."""
    folder = p if is_dir else os.path.dirname(p)
    try:
        os.makedirs(folder, mode=0o755, exist_ok=True)
    except OSError as e:
        if e.errno != errno.EROFS:
            raise
        above = folder
        while not os.path.isdir(above):
            above = os.path.dirname(above)
        _mount("tmpfs", above, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
        os.makedirs(folder, mode=0o755, exist_ok=True)
    if not is_dir:
        open(p, "a").close()


def main(args: list[str]) -> None:
    netns, procs, user, expose, chdir, argv = _parse(args)
    pid = str(os.getpid())
    for f in procs:
        try:
            with open(f, "w") as out:
                out.write(pid)
        except OSError as e:
            _fail(f"cannot join cgroup ({f}): {e.strerror}")
    if netns:
        _enter(netns)
    elif user is not None and _libc.unshare(CLONE_NEWNS) == 0:  # a private mount view without a namespace
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
    if user is not None:
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            _fail(f"no user {user!r} on this host")
        uid, gid = pw.pw_uid, pw.pw_gid
        _view(expose, uid, gid)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            _fail("prctl(PR_SET_NO_NEW_PRIVS) failed")
        for p, rw in expose:
            if os.path.exists(p) and not os.access(p, (os.W_OK if rw else os.R_OK) | (os.X_OK if os.path.isdir(p) else 0)):
                mode = stat.filemode(os.stat(p).st_mode)
                _fail(f"user {user} cannot {'write to' if rw else 'read'} {p} ({mode}); make it readable for others, "
                      f"or set workload.run_as_root = true in the experiment file")
        os.environ["HOME"] = "/tmp"
    if chdir:
        try:
            os.chdir(chdir)
        except OSError as e:
            _fail(f"cannot enter {chdir}: {e.strerror}")
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        _fail(f"cannot start {argv[0]}: {e.strerror}")


if __name__ == "__main__":
    main(sys.argv[1:])
