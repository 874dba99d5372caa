"""What a machine needs before srsRAN 4G can run there, each answered with
what is missing and how to get it.

Why the kernel's SCTP is asked for by trying: the eNB reaches the MME over
S1-MME, which is SCTP (srsRAN uses the kernel's SCTP sockets through
lksctp), and some kernels leave SCTP out entirely (CONFIG_IP_SCTP unset,
as on the Firecracker kernel continuum is developed on). A socket() call is
the one test that gives the same answer as srsRAN would get."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

PROGRAMS = ("srsenb", "srsepc", "srsue")
IPPROTO_SCTP = 132


def sctp_problem() -> str | None:
    """None when this kernel opens SCTP sockets; else why srsENB and srsEPC cannot talk here."""
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_SEQPACKET, IPPROTO_SCTP)
    except OSError as e:
        if e.errno in (errno.ESOCKTNOSUPPORT, errno.EPROTONOSUPPORT, errno.EAFNOSUPPORT):
            return ("this kernel has no SCTP (CONFIG_IP_SCTP), which srsRAN's eNB and MME speak to each other "
                    "(S1-MME); Debian's and Ubuntu's kernels have it (the sctp module)")
        return f"SCTP sockets cannot be opened here: {e.strerror}"
    s.close()
    return None


def programs_problem(prefix: Path) -> str | None:
    """None when srsRAN 4G's three programs are installed under prefix."""
    missing = [p for p in PROGRAMS if not (prefix / "bin" / p).is_file()]
    if missing:
        return (f"srsRAN 4G is not installed under {prefix} (no {', '.join(missing)}): "
                "ansible-playbook -i playbooks/inventory/local.yml playbooks/srsran.yml builds it "
                "(tens of minutes on two cores; the source from GitHub, or srsran_4g_source_dir)")
    if not (prefix / "share" / "srsran" / "rr.conf.example").is_file():
        return f"srsRAN's example radio-resource files are not in {prefix}/share/srsran (rr.conf.example): reinstall it"
    return None
