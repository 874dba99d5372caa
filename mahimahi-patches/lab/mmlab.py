"""A lab for the patched mm-link in pass-through: three namespaces, as the testbed wires
an endpoint (mahimahi-link/lab/netlab.py is the same for mahimahi-link):

    [ue ns: ue0 10.210.0.2, probe 10.212.0.2] --veth-- ue [mm-link's shell] ~ mm-link ~ [mm ns] core --veth-- [srv ns: srv0 10.211.0.2]

mm-link starts in the mm namespace with --pass-through=ue (ue holds the UE's gateway,
10.210.0.1) and runs as an unprivileged user, as the testbed runs it."""

from __future__ import annotations

import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "mahimahi-link" / "lab"))  # netlab: the same lab for mahimahi-link

from netlab import sh  # noqa: E402
UE_IP, GW_IP, SRV_IP, PROBE_IP = "10.210.0.2", "10.210.0.1", "10.211.0.2", "10.212.0.2"


def run_as(user: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
    pw = pwd.getpwnam(user)
    return subprocess.run(["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", *argv],
                          capture_output=True, text=True, **kw)


class MmLab:
    def __init__(self, mm_link: Path, workdir: Path, user: str = "nobody"):
        self.mm_link, self.user = mm_link, user
        tag = f"mmup{os.getpid() % 100000}"
        self.ue, self.mm, self.srv = f"{tag}u", f"{tag}m", f"{tag}s"
        self.dir = workdir  # set on entry: a folder of its user's, where it reads its traces and writes its logs
        self.proc: subprocess.Popen | None = None
        self.ready: dict[str, str] = {}
        self.stderr = ""

    def __enter__(self) -> "MmLab":
        pw = pwd.getpwnam(self.user)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{self.ue}-"))  # pytest's own tmp folders are closed to others
        os.chmod(self.dir, 0o755)
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        try:
            for ns in (self.ue, self.mm, self.srv):
                sh("ip", "netns", "add", ns)
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                   "net.ipv6.conf.default.disable_ipv6=1")
            sh("ip", "link", "add", "ue0", "netns", self.ue, "type", "veth", "peer", "name", "ue", "netns", self.mm)
            sh("ip", "link", "add", "core", "netns", self.mm, "type", "veth", "peer", "name", "srv0", "netns", self.srv)
            for ns, dev, cidr in ((self.ue, "ue0", f"{UE_IP}/24"), (self.mm, "ue", f"{GW_IP}/24"),
                                  (self.mm, "core", "10.211.0.1/24"), (self.srv, "srv0", f"{SRV_IP}/24")):
                sh("ip", "-n", ns, "addr", "add", cidr, "dev", dev)
                sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
                sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", self.ue, "addr", "add", f"{PROBE_IP}/32", "dev", "ue0")
            sh("ip", "-n", self.ue, "route", "add", "default", "via", GW_IP)
            sh("ip", "-n", self.srv, "route", "add", "default", "via", "10.211.0.1")
            sh("ip", "netns", "exec", self.mm, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        for ns in (self.ue, self.mm, self.srv):
            sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, up: Path, down: Path, *options: str, cpu: int | None = None) -> dict[str, str]:
        """mm-link with --no-command --pass-through=ue, until it says it is ready; the probe
        address routed to the UE from inside its shell and to the shell from the mm namespace.
        cpu: pinned to that core (the benchmarks pin either emulator to CPU 0)."""
        traces = []
        for name, t in (("up", up), ("down", down)):
            dst = self.dir / f"{name}.trace"
            shutil.copyfile(t, dst)
            traces.append(dst)
        pw = pwd.getpwnam(self.user)
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            [*(["taskset", "-c", str(cpu)] if cpu is not None else []), "ip", "netns", "exec", self.mm, "setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
             str(self.mm_link), "--no-command", "--pass-through=ue", f"--ready-fd={w}", *options, *map(str, traces)],
            pass_fds=(w,), stderr=subprocess.PIPE, text=True)
        os.close(w)
        try:
            got, _, _ = select.select([r], [], [], 15)
            line = os.read(r, 4096).decode() if got else ""
        finally:
            os.close(r)
        if not line.startswith("ready "):
            self.stop()
            raise RuntimeError(f"mm-link did not get ready ({line!r}): {self.stderr}")
        self.ready = dict(f.split("=", 1) for f in line.split()[1:])
        # the shell's own namespace: no IPv6 (a router solicitation would take an opportunity)
        sh("nsenter", "-t", self.ready["pid"], "-n", "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1")
        sh("nsenter", "-t", self.ready["pid"], "-n", "ip", "route", "add", f"{PROBE_IP}/32", "via", UE_IP)
        sh("ip", "-n", self.mm, "route", "add", f"{PROBE_IP}/32", "dev", self.ready["egress"])
        return self.ready

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            _, self.stderr = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, self.stderr = self.proc.communicate()
        rc, self.proc = self.proc.returncode, None
        return rc

    def run(self, ns: str, *argv: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=timeout, check=check)

    def popen(self, ns: str, *argv: str, **kw) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", ns, *argv], text=True, **kw)
