"""Start QEMU with its experiment NIC on a tap inside the node's network
namespace, while QEMU itself stays in the host's (stdlib only, run as
`python -I -S vmlaunch.py NETNS TAP -- QEMU ARGV`; "{fd}" in ARGV becomes
the tap's file descriptor).

Why: the tap must sit where the netns provider puts the node's veth end, so
the plan is unchanged (the namespace splices the tap to that veth), but the
VM's management port (QEMU's user network forwarding SSH to 127.0.0.1) must
be on the host's loopback, where ssh, rsync and Ansible reach it. A tap
opened through /dev/net/tun belongs to the namespace it was opened in, and
the open file keeps working after the process returns to the host's
namespace; QEMU takes it with `-netdev tap,fd=N`."""

from __future__ import annotations

import ctypes
import fcntl
import os
import struct
import sys

CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000

_libc = ctypes.CDLL(None, use_errno=True)


def _fail(msg: str) -> None:
    print(f"continuum vmlaunch: {msg}", file=sys.stderr, flush=True)
    sys.exit(126)


def _setns(fd: int, what: str) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        _fail(f"setns({what}): {os.strerror(ctypes.get_errno())}")


def main(args: list[str]) -> None:
    if len(args) < 4 or args[2] != "--":
        _fail("usage: vmlaunch.py NETNS TAP -- QEMU ARGV ({fd}: the tap)")
    netns, tap, argv = args[0], args[1], args[3:]
    home = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        target = os.open(f"/run/netns/{netns}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        _fail(f"no network namespace {netns}: {e.strerror}")
        return
    _setns(target, netns)
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", tap.encode(), IFF_TAP | IFF_NO_PI))
    except OSError as e:
        _fail(f"cannot attach to tap {tap} in {netns}: {e.strerror}")
        return
    _setns(home, "the host's namespace")
    os.set_inheritable(fd, True)
    argv = [a.replace("{fd}", str(fd)) for a in argv]
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        _fail(f"cannot start {argv[0]}: {e.strerror}")


if __name__ == "__main__":
    main(sys.argv[1:])
