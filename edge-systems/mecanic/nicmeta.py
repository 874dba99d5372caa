"""How a UDP app reads MECaNIC's payload pattern matching (docs/mecanic.md,
"Payload pattern matching"): the NIC scanned the datagram and put the first
pattern it found (1-based; 0: none) into the packet as IPv4 option 158, which
Linux hands to a socket that asked for IP options (IP_RECVOPTS). An app that
opts in reads the result here and skips its own matching; a datagram without
the option was not scanned (or had no room for it) and is matched as before.

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    nicmeta.enable(sock)
    data, addr, found = nicmeta.recv(sock)   # found: None, 0, or the pattern's number
"""

from __future__ import annotations

import socket

MATCH_OPTION = 0x9E  # RFC 4727's experimental option 30, copied: what mahimahi-link --nic-patterns writes
IP_RECVOPTS = getattr(socket, "IP_RECVOPTS", 6)  # linux/in.h; also the type of the control message that carries them


def enable(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_IP, IP_RECVOPTS, 1)


def found_in(options: bytes) -> int | None:
    """The result in a packet's IPv4 options, None where it has none."""
    i = 0
    while i < len(options):
        kind = options[i]
        if kind == 0:  # end of the list
            return None
        if kind == 1:  # no-op
            i += 1
            continue
        if i + 1 >= len(options) or options[i + 1] < 2:
            return None
        length = options[i + 1]
        if kind == MATCH_OPTION and length == 4:
            return int.from_bytes(options[i + 2:i + 4], "big")
        i += length
    return None


def recv(sock: socket.socket, size: int = 65535) -> tuple[bytes, tuple, int | None]:
    """One datagram, its sender and the NIC's result (None: not scanned)."""
    data, ancillary, _, addr = sock.recvmsg(size, socket.CMSG_SPACE(40))
    for level, kind, value in ancillary:
        if level == socket.IPPROTO_IP and kind == IP_RECVOPTS:
            return data, addr, found_in(value)
    return data, addr, None
