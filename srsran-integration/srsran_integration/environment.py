"""What a machine needs before srsRAN 4G can run there, each answered with
what is missing and how to get it.

Why the kernel's SCTP is asked for by trying: the eNB reaches the MME over
S1-MME, which is SCTP (srsRAN uses the kernel's SCTP sockets through
lksctp), and some kernels leave SCTP out entirely (CONFIG_IP_SCTP unset,
as on the Firecracker kernel continuum is developed on). A socket() call is
the one test that gives the same answer as srsRAN would get."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import socket
import subprocess
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


def radio_problem(prefix: Path, radio: str) -> str | None:
    """None when srsRAN was built with the radio's plugin (libsrsran_rf_zmq.so
    or libsrsran_rf_uhd.so): CMake leaves a plugin out, silently, when its
    development package was missing at build time."""
    plugin, package = {"zmq": ("zmq", "libzmq3-dev"), "usrp": ("uhd", "libuhd-dev")}[radio]
    if not (prefix / "lib" / f"libsrsran_rf_{plugin}.so").exists():
        return (f"srsRAN under {prefix} was built without its {radio.upper()} radio (no lib/libsrsran_rf_{plugin}.so): "
                f"install {package} and rebuild (playbooks/srsran.yml" + (" with srsran_uhd=true)" if radio == "usrp" else ")"))
    if radio == "usrp":
        p = subprocess.run(["uhd_find_devices"], capture_output=True, text=True, check=False, timeout=60) \
            if shutil.which("uhd_find_devices") else None
        if p is None:
            return "no uhd_find_devices: install uhd-host (playbooks/srsran.yml with srsran_uhd=true does)"
        if "Device Address" not in p.stdout:
            return "no USRP found by uhd_find_devices: connect the radios (USB 3 for a B210, Ethernet for an X310)"
    return None


SHIM_SOURCE = Path(__file__).resolve().parents[1] / "sctp-shim" / "s1_over_udp.c"


def s1_shim() -> Path | None:
    """Where the kernel has no SCTP: the S1-over-UDP library (sctp-shim/),
    built once per source version into continuum's cache; None where the
    kernel's SCTP is there to use."""
    if sctp_problem() is None:
        return None
    digest = hashlib.sha256(SHIM_SOURCE.read_bytes()).hexdigest()[:12]
    out = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "continuum" / "srsran" / f"s1_over_udp-{digest}.so"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(tmp), str(SHIM_SOURCE), "-ldl"],
                       check=True, capture_output=True, text=True, timeout=120)
        tmp.replace(out)
    return out


def s1_transport() -> str:
    """What carries S1-MME between srsENB and srsEPC here, for the manifest."""
    return "sctp (the kernel's)" if sctp_problem() is None else \
        "udp datagrams on the epc namespace's loopback (sctp-shim/s1_over_udp.c: this kernel has no SCTP)"


def shim_problem() -> str | None:
    """None when S1 can run here: over the kernel's SCTP, or over the shim, which needs a C compiler and lksctp's header."""
    if sctp_problem() is None:
        return None
    if not shutil.which("cc"):
        return f"{sctp_problem()}; S1 then goes over the UDP shim, which needs a C compiler: install gcc"
    if not Path("/usr/include/netinet/sctp.h").exists():
        return f"{sctp_problem()}; S1 then goes over the UDP shim, which needs lksctp's header: install libsctp-dev"
    return None


def problems(prefix: Path, radio: str) -> list[str]:
    """Everything that keeps srsRAN 4G from running here, each with its remedy."""
    found = [shim_problem(), programs_problem(prefix)]
    if found[1] is None:
        found.append(radio_problem(prefix, radio))
    return [p for p in found if p]
