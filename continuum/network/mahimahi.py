"""mobile.emulator = "mahimahi": upstream Mahimahi's mm-link, with this project's
patches (mahimahi-patches/), as each endpoint's cellular hop, so that a result
can be checked on the emulator reviewers know.

Each endpoint gets its own mm-link in its own namespace (plan.py draws it):
`--pass-through` takes the endpoint's gateway into the shell, so what the
endpoint sends crosses the uplink queue once and what is routed to it the
downlink queue once; the endpoint's probe address passes the address filter
(`--bypass`), as it passes mahimahi-link's trace. The core delay stays with
mahimahi-link in ran, every frame past its trace (as with srsRAN): mm-link has
no per-destination delay and this kernel has no netem.

mm-link must be setuid root and started by an unprivileged user (its own rule),
and it opens its traces and logs as that user. They live in a folder of the
run's, named by the run id (STAGE) so that `continuum destroy` finds what a
crash left; the logs move into the run's links/ when the shells stop.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from continuum import commands, naming
from continuum.errors import ProviderError
from continuum.network.plan import PROBE_NET, MmShell, Plan
from continuum.runtime import WORKLOAD_USER, Node, stop_process

REPO = Path(__file__).resolve().parents[2]
PREFIX = REPO / ".local"  # where mahimahi-patches/build installs by default
BUILD = "mahimahi-patches/build"
READY_TIMEOUT_S = 15.0


def binary() -> Path:
    """The patched mm-link: $CONTINUUM_MM_LINK, else the build's default prefix."""
    env = os.environ.get("CONTINUUM_MM_LINK")
    return Path(env) if env else PREFIX / "bin" / "mm-link"


def build_info(path: Path | None = None) -> dict | None:
    """What mahimahi-patches/build recorded beside the binary: upstream's commit, each
    applied patch's SHA-256, the binary's; None when there is no such record."""
    path = path or binary()
    try:
        return json.loads((path.parent.parent / "share" / "continuum" / "mahimahi.json").read_text())
    except (OSError, ValueError):
        return None


def problems(user: str = WORKLOAD_USER) -> list[str]:
    """Why the patched mm-link cannot run here; empty when it can."""
    mm = binary()
    if not mm.exists():
        return [f"mobile.emulator = \"mahimahi\" needs the patched upstream mm-link at {mm}: build it with "
                f"`{BUILD} --source PATH` (PATH: a clone of https://github.com/ravinet/mahimahi; "
                f"mahimahi-patches/README.md)"]
    out = []
    st = mm.stat()
    if st.st_uid != 0 or not st.st_mode & stat.S_ISUID:
        out.append(f"{mm} must be setuid root (mm-link's own rule: `chown root {mm} && chmod 4755 {mm}`, "
                   f"as {BUILD} installs it)")
    if not _reachable(mm, user, os.X_OK):
        out.append(f"{mm} cannot be run by the user {user!r} (mm-link refuses to be run as root): a folder above "
                   f"it is closed to others; install elsewhere with `{BUILD} --prefix DIR` and set CONTINUUM_MM_LINK")
    info = build_info(mm)
    if info is None:
        out.append(f"{mm} has no build record (share/continuum/mahimahi.json beside it): build it with {BUILD}, "
                   "so the manifest can name upstream's commit and the patches applied")
    elif [(x["name"], x["sha256"]) for x in info.get("patches", [])] != series():
        out.append(f"{mm} was built with another patch series than mahimahi-patches/ holds now "
                   f"({', '.join(x['name'] for x in info.get('patches', [])) or 'none'}): rebuild it with {BUILD}")
    for tool in ("dnsmasq", "iptables", "setpriv"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            out.append(f"mm-link needs {tool} (Debian: {'dnsmasq-base' if tool == 'dnsmasq' else tool if tool != 'setpriv' else 'util-linux'})")
    return out


def series() -> list[tuple[str, str]]:
    """(name, SHA-256) of each patch of mahimahi-patches/, in order: what a build must have applied."""
    return [(p.name, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted((REPO / "mahimahi-patches").glob("[0-9][0-9][0-9][0-9]-*.patch"))]


def _reachable(path: Path, user: str, mode: int) -> bool:
    """Whether `user` (not root) may open `path` for `mode`: every folder above it searchable by them."""
    pw = pwd.getpwnam(user)
    for p in [*reversed(path.parents), path]:
        st = p.stat()
        want = os.X_OK if p != path else mode
        shift = 6 if st.st_uid == pw.pw_uid else 3 if st.st_gid == pw.pw_gid else 0
        if not (st.st_mode >> shift) & want:
            return False
    return True


def stage(run_id: str) -> Path:
    """The run's folder for mm-link's traces and logs (readable and writable by its user)."""
    return Path(tempfile.gettempdir()) / f"{naming.TAG}-{run_id}-mahimahi"


@dataclass
class Shell:
    """One endpoint's live mm-link."""

    spec: MmShell
    proc: subprocess.Popen
    log: Path
    inner_pid: int = 0  # its shell's namespace (the uplink's process)
    egress: str = ""  # its egress TUN device, in spec.namespace


def argv(mm: Path, s: MmShell, up: Path, down: Path, logs: Path, mobile, ready_fd: int) -> list[str]:
    out = [str(mm), "--no-command", f"--pass-through={s.device}", f"--ready-fd={ready_fd}",
           f"--bypass={PROBE_NET}.0.0/16", *[f"--bypass={b}" for b in mobile.bypass],
           f"--uplink-queue={mobile.uplink_queue}", f"--downlink-queue={mobile.downlink_queue}",
           f"--uplink-log={logs / f'{s.endpoint}.uplink.log'}", f"--downlink-log={logs / f'{s.endpoint}.downlink.log'}"]
    if mobile.uplink_queue_args:
        out.append(f"--uplink-queue-args={mobile.uplink_queue_args}")
    if mobile.downlink_queue_args:
        out.append(f"--downlink-queue-args={mobile.downlink_queue_args}")
    return [*out, str(up), str(down)]


def start(nodes: dict[str, Node], spec, plan: Plan, run_id: str, log_dir: Path, user: str = WORKLOAD_USER) -> list[Shell]:
    """Every endpoint's mm-link, each ready (both directions carry packets) and its probe route
    set, before this returns. Stop them with stop(); on an error, what started is stopped here."""
    pw = pwd.getpwnam(user)
    folder = stage(run_id)
    folder.mkdir(mode=0o755, exist_ok=True)
    os.chown(folder, pw.pw_uid, pw.pw_gid)
    traces = {}
    for d in ("uplink", "downlink"):  # copies its user can read, whatever the source's folders allow
        src = getattr(spec.mobile, d).path
        dst = folder / f"{d}-{Path(src).name}"
        shutil.copyfile(src, dst)
        os.chmod(dst, 0o644)
        traces[d] = dst
    mm = binary()
    shells: list[Shell] = []
    try:
        for s in plan.mahimahi:
            shells.append(_start_one(nodes[s.namespace], s, mm, traces, folder, spec.mobile, pw, log_dir))
    except BaseException:
        stop(shells, folder, None)
        raise
    return shells


def _start_one(node: Node, s: MmShell, mm: Path, traces: dict[str, Path], folder: Path, mobile, pw,
               log_dir: Path) -> Shell:
    for key in ("all", "default"):  # the egress device it makes: no IPv6 chatter through its queues
        node.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{key}.disable_ipv6=1"], check=False)
    log = log_dir / f"mm-link-{s.endpoint}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    r, w = os.pipe()
    try:
        cmd = node.argv(["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
                         *argv(mm, s, traces["uplink"], traces["downlink"], folder, mobile, w)])
        with open(log, "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    pass_fds=(w,), start_new_session=True)
        os.close(w)
        w = -1
        shell = Shell(s, proc, log)
        line = _ready_line(r, proc, log, s.endpoint)
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    fields = dict(f.split("=", 1) for f in line.split()[1:])
    shell.inner_pid, shell.egress = int(fields["pid"]), fields["egress"]
    inner = ["nsenter", "-t", str(shell.inner_pid), "-n"]
    for key in ("all", "default"):
        commands.run([*inner, "sysctl", "-q", "-w", f"net.ipv6.conf.{key}.disable_ipv6=1"], check=False)
    # the probe address: past the filter both ways, and to the endpoint from inside the shell
    commands.run([*inner, "ip", "route", "add", f"{s.probe_address}/32", "via", s.endpoint_address])
    node.run(["ip", "route", "add", f"{s.probe_address}/32", "dev", shell.egress])
    return shell


def _ready_line(r: int, proc: subprocess.Popen, log: Path, endpoint: str) -> str:
    deadline = time.monotonic() + READY_TIMEOUT_S
    got = b""
    while b"\n" not in got:
        left = deadline - time.monotonic()
        if left <= 0:
            stop_process(proc)
            raise ProviderError(f"mm-link for {endpoint} did not say it was ready within {READY_TIMEOUT_S:.0f} s; "
                                f"its output ({log}): {log.read_text(errors='replace').strip()[-500:]}")
        ready, _, _ = select.select([r], [], [], min(left, 0.2))
        if ready:
            chunk = os.read(r, 4096)
            if not chunk:  # closed without a line: it ended
                proc.wait(5)
                raise ProviderError(f"mm-link for {endpoint} exited with status {proc.returncode} before it was ready: "
                                    f"{log.read_text(errors='replace').strip()[-500:]}")
            got += chunk
    line = got.decode(errors="replace").splitlines()[0]
    if not line.startswith("ready "):
        raise ProviderError(f"mm-link for {endpoint} said {line!r} where its readiness line was expected")
    return line


def stop(shells: list[Shell], folder: Path, links: Path | None) -> None:
    """Stop each mm-link (SIGTERM: it ends its shell and children), kill a shell process its
    end left behind, move the logs into `links` and remove the run's folder. Safe twice."""
    for sh in shells:
        stop_process(sh.proc)
    for sh in shells:
        if sh.inner_pid and _alive(sh.inner_pid):
            _kill_tree(sh.inner_pid)
    if links is not None and folder.exists():
        links.mkdir(parents=True, exist_ok=True)
        for log in folder.glob("*.log"):
            shutil.move(str(log), links / log.name)
    shutil.rmtree(folder, ignore_errors=True)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                kids = [int(c) for c in (task / "children").read_text().split()]
                out += kids
                todo += kids
        except (OSError, ValueError):
            continue
    return out


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and everything under it (a shell's dnsmasq would outlive a killed shell)."""
    for p in [pid, *_descendants(pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def leftovers(run_id: str | None) -> list[tuple[int, Path]]:
    """(pid, folder) of mm-link processes a run's folder names (run_id None: any run's),
    and such folders with no process left (pid 0)."""
    folders = [p for p in Path(tempfile.gettempdir()).glob(f"{naming.TAG}-*-mahimahi")
               if run_id is None or p.name == stage(run_id).name]
    out: list[tuple[int, Path]] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        for f in folders:
            if "mm-link" in cmdline and f"{f}/" in cmdline:
                out.append((int(proc.name), f))
    seen = {f for _, f in out}
    return out + [(0, f) for f in folders if f not in seen]


def destroy(run_id: str | None) -> list[str]:
    """What a crash left of the shells: their processes and everything under them (SIGKILL: the
    shells' namespaces go with them) and folders. Returns what it removed."""
    done = []
    found = leftovers(run_id)
    tree = {pid: _descendants(pid) for pid, _ in found if pid}  # all of it first: a killed parent's children move away
    for pid, folder in found:
        if pid:
            for p in [pid, *tree[pid]]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
            done.append(f"mm-link process {pid}")
        elif folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
            done.append(f"folder {folder}")
    for _, folder in leftovers(run_id):
        shutil.rmtree(folder, ignore_errors=True)
    return done


def arrivals(log: Path) -> int:
    """Packets that entered a direction's queue so far (mm-link writes and flushes a line per packet)."""
    try:
        with open(log, "rb") as f:
            return sum(1 for line in f if b" + " in line)
    except OSError:
        return 0


def manifest_entry() -> dict:
    """What the manifest records of the emulator: upstream's commit, the patches applied, the binary."""
    mm = binary()
    info = build_info(mm) or {}
    try:
        digest = hashlib.sha256(mm.read_bytes()).hexdigest()
    except OSError:
        digest = "missing"
    return {**info, "name": "mahimahi", "binary": str(mm), "binary_sha256": digest,
            "built_binary_sha256": info.get("binary_sha256")}  # differ: the binary was replaced after its build
