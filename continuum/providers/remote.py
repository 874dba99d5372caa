"""What the providers whose nodes are on other machines (hosts, qemu) share:
a node's cgroup made and sampled on its machine (hostside.py there, one
resident sample reader per machine), the machine's clock offset, the run
folder at the same path there, and what such a provider does not run yet."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from continuum import naming
from continuum.cgroups import Cgroup
from continuum.engines import containers
from continuum.errors import ProviderError
from continuum.network.plan import Plan
from continuum.providers.base import Deployment
from continuum.remote import SshHost
from continuum.runtime import WORKLOAD_USER

if TYPE_CHECKING:
    from continuum.config import ExperimentSpec


class RemoteCgroup(Cgroup):
    """A node's cgroup on its machine: created and removed there by
    hostside.py, sampled there by the machine's resident reader (Stream)."""

    def __init__(self, host: SshHost, version: int, dirs: dict[str, Path], leaf: bool):
        super().__init__(version, dirs, leaf)
        self.host = host
        self.stream: Stream | None = None

    def as_json(self) -> str:
        return json.dumps({"version": self.version, "dirs": {k: str(v) for k, v in self.dirs.items()}, "leaf": self.leaf})

    def timed_sample(self) -> tuple[int, int, int, int]:
        if self.stream is None:
            raise OSError(f"no sample reader on {self.host.name}")
        return self.stream.latest(self)

    def sample(self) -> tuple[int, int, int]:
        return self.timed_sample()[1:]  # type: ignore[return-value]

    def cpu_usage_ns(self) -> int:
        return self.sample()[0]

    def memory_bytes(self) -> int:
        return self.sample()[1]

    def oom_kills(self) -> int:
        return self.sample()[2]

    def pids(self) -> set[int]:
        raise NotImplementedError("a remote cgroup's processes are listed on its machine")

    def remove(self) -> None:
        hostside(self.host, "cgroup-remove", self.as_json())


def remote_cgroups(plan: Plan, dep: Deployment, undo: contextlib.ExitStack) -> None:
    """Each limited node's cgroup on its machine (hostside.py there), and one
    resident sample reader per machine; records the cgroup version."""
    versions = set()
    for n in plan.nodes:
        node = dep.nodes[n.name]
        if n.limits is None or node.host is None:
            continue
        leaf = plan.per_app_cgroups and n.name == plan.offload_target
        made = hostside(node.host, "cgroup-create", naming.cgroup(dep.run_id, n.name), f"{n.limits.quota_cpus:g}",
                        str(n.limits.memory_bytes), "1" if leaf else "0", str(n.limits.period_us))
        node.cgroup = RemoteCgroup(node.host, made["version"], {k: Path(v) for k, v in made["dirs"].items()}, made["leaf"])
        versions.add(made["version"])
    dep.facts["cgroup_version"] = min(versions) if len(versions) == 1 else sorted(versions)
    by_machine: dict[str, list[RemoteCgroup]] = {}
    for node in dep.nodes.values():
        if isinstance(node.cgroup, RemoteCgroup):
            by_machine.setdefault(node.cgroup.host.name, []).append(node.cgroup)
    for cgs in by_machine.values():
        undo.callback(Stream(cgs[0].host, cgs).stop)  # before the cgroups go


class Stream:
    """One machine's cgroup samples, read there every interval by one
    resident `hostside.py sample-stream` over the machine's SSH connection
    (an SSH command per sample would space them by its round trips, not by
    the interval), each with the time it was read there."""

    def __init__(self, host: SshHost, cgroups: list[RemoteCgroup], interval_s: float = 0.5):
        self.host, self.cgroups = host, cgroups
        self._latest: dict[int, tuple[int, int, int, int]] = {}
        self._lock = threading.Lock()
        remote = shlex.join(["python3", f"{host.root}/src/continuum/nodeside/hostside.py", "sample-stream", f"{interval_s:g}",
                             *(c.as_json() for c in cgroups)])
        self.proc = subprocess.Popen(host.ssh_argv(remote), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, name=f"samples-{host.name}", daemon=True)
        self._reader.start()
        for c in cgroups:
            c.stream = self

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                when, samples = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                for c, s in zip(self.cgroups, samples):
                    if s is not None:
                        self._latest[id(c)] = (int(when), int(s[0]), int(s[1]), int(s[2]))

    def latest(self, cgroup: RemoteCgroup) -> tuple[int, int, int, int]:
        with self._lock:
            found = self._latest.get(id(cgroup))
        if found is None:
            raise OSError(f"no sample from {self.host.name} yet")
        return found

    def stop(self) -> None:
        for c in self.cgroups:
            c.stream = None
        if self.proc.poll() is None:
            self.proc.terminate()  # the channel closes: the reader there ends at its next line
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        self._reader.join(5)


def remote_problems(spec: ExperimentSpec, kind: str, unsupported: list[str]) -> list[str]:
    """What a provider whose nodes are reached over SSH (hosts, qemu) needs
    here, and what of the experiment it does not run yet (`unsupported`:
    the provider's own additions). Container workloads run with `docker run`
    on the machines, from images built here, which provisioning loads there."""
    problems = [f"{tool} not found here: install Debian's openssh-client and rsync (./setup.sh does)"
                for tool in ("ssh", "rsync", "ssh-keygen") if not shutil.which(tool)]
    if spec.workload.runtime != "process" and spec.engine != "k3s":
        if why := containers.engine_problem():
            problems.append(f"workload.runtime is container: the images are loaded into the machines from Docker here: {why}")
        else:
            problems += containers.image_problems([*containers.spec_images(spec), "continuum/base"])
    if unsupported:
        problems.append(f"the {kind} provider does not run these yet (the netns provider does): " + "; ".join(unsupported))
    return problems


def hostside(host: SshHost, *args: str, timeout: float = 60):
    """continuum/nodeside/hostside.py on the machine (with its Python, from the code the workload role copied)."""
    p = host.run(["python3", f"{host.root}/src/continuum/nodeside/hostside.py", *args], check=False, timeout=timeout)
    if p.returncode != 0:
        raise ProviderError(f"{host.name}: hostside.py {args[0]} failed: {(p.stderr or p.stdout).strip()[-400:]}")
    return json.loads(p.stdout)


PONG = "import sys, time\nfor _ in sys.stdin:\n    print(time.time_ns(), flush=True)\n"


def clock_offset(host: SshHost, samples: int = 20) -> dict:
    """The machine's clock minus this one's: a process there answers each
    line with its time, over one SSH channel; the exchange with the smallest
    round trip gives the estimate (its midpoint; the error is at most half
    that round trip)."""
    proc = subprocess.Popen(host.ssh_argv(f"python3 -c {shlex.quote(PONG)}"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    best: tuple[float, float] | None = None
    try:
        for _ in range(samples):
            t0 = time.time_ns()
            proc.stdin.write("\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            t1 = time.time_ns()
            if not line.strip():
                raise ProviderError(f"{host.name}: no answer while measuring its clock offset")
            rtt, offset = (t1 - t0) / 1e6, (int(line) - (t0 + t1) / 2) / 1e6
            if best is None or rtt < best[0]:
                best = (rtt, offset)
    finally:
        proc.stdin.close()
        proc.wait(10)
    assert best is not None
    chrony = host.run(["sh", "-c", "chronyc -n tracking 2>/dev/null | sed -n 's/^System time *: //p'"], check=False,
                      timeout=20).stdout.strip()
    return {"offset_ms": round(best[1], 3), "error_bound_ms": round(best[0] / 2, 3),
            "method": f"timestamps over one SSH channel, smallest round trip of {samples}",
            **({"chrony_system_time": chrony} if chrony else {})}


def share_folder(plan: Plan, dep: Deployment, run_dir: Path, undo: contextlib.ExitStack, say: Callable[[str], None],
                 remember: Callable[[SshHost, Path], None] | None = None) -> None:
    """The run folder at the same path on every machine of the run; raw/ and
    links/ come back at teardown, and what the run made there is removed
    (`remember(machine, folder)`: what to remove there, for `continuum destroy` after a crash)."""
    hosts = {n.host.name: n.host for n in dep.nodes.values() if n.host is not None}
    raw = str(run_dir / "raw")
    for h in hosts.values():
        # the outermost folder this run creates there: what teardown removes
        top = h.run(["sh", "-c", f'd={shlex.quote(str(run_dir))}; t=; while [ ! -e "$d" ]; do t="$d"; d=$(dirname "$d"); done; echo "$t"']).stdout.strip()
        h.run(["mkdir", "-p", raw, str(run_dir / "links"), str(run_dir / "brokers")])
        if not plan.run_as_root:
            h.run(["chown", f"{WORKLOAD_USER}:", raw])
        undo.callback(_collect, h, run_dir, Path(top) if top else run_dir)
        if remember is not None:
            remember(h, Path(top) if top else run_dir)
    say(f"run folder {run_dir} on {len(hosts)} machine(s); raw/ and links/ come back at teardown")


def _collect(h: SshHost, run_dir: Path, top: Path) -> None:
    """raw/ and links/ back from the machine, then what the run created there
    removed (`top`: the run folder, or its outermost parent that was missing)."""
    try:
        for sub in ("raw", "links"):
            h.pull(run_dir / sub)
    finally:
        if top == run_dir or top in run_dir.parents:
            h.run(["rm", "-rf", "--one-file-system", str(top)], check=False, timeout=120)
