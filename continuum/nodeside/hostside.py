"""continuum's part that runs on a machine of the hosts provider, called over
SSH as `python3 hostside.py COMMAND ...` from the code the workload role
copied there (stdlib only: the machine needs no continuum environment).

Why not plain shell over SSH: cgroups (v1 or v2, detected there), their
limits, samples and removal, and finding a run's leftovers are already
written once, in cgroups.py and naming.py; running that same code on the
machine keeps one implementation and one set of tests. Answers are JSON on
stdout; errors a message on stderr and exit status 1."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from continuum import cgroups, naming  # noqa: E402
from continuum.errors import ProviderError  # noqa: E402

PIDS = Path("/run/continuum/pids")
TUNNEL_PREFIX = "cvx"  # a run's VXLAN devices before they move into its namespaces: cvx<run id><n>
LABEL_RUN = "continuum.run"  # continuum/engines/containers.py's label on a run's containers (tests/hosts checks they agree)


def _containers(run_id: str | None) -> list[str]:
    """The run's Docker containers on this machine (sandboxes and workload sides), where Docker runs."""
    if not shutil.which("docker"):
        return []
    flt = f"label={LABEL_RUN}" + (f"={run_id}" if run_id else "")
    p = subprocess.run(["docker", "ps", "-a", "--filter", flt, "--format", "{{.Names}}"], capture_output=True, text=True,
                       timeout=30)
    return p.stdout.split() if p.returncode == 0 else []


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def _namespaces(run_id: str | None) -> list[str]:
    out = []
    for line in _ip("netns", "list").stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        parsed = naming.parse_netns(name)
        if parsed and (run_id is None or parsed[0] == run_id):
            out.append(name)
    return out


def _ns_pids(ns: str) -> set[int]:
    return {int(x) for x in _ip("netns", "pids", ns).stdout.split()}


def _tunnels(run_id: str | None) -> list[str]:
    p = _ip("-o", "link", "show")
    names = [line.split(":")[1].strip().split("@")[0] for line in p.stdout.splitlines() if ":" in line]
    return [n for n in names if n.startswith(TUNNEL_PREFIX + (run_id or ""))]


def cgroup_create(relative: str, cpus: str, memory: str, leaf: str, period_us: str = str(cgroups.PERIOD_US)) -> dict:
    cg = cgroups.create(relative, float(cpus), int(memory), leaf=leaf == "1", period_us=int(period_us))
    return {"version": cg.version, "dirs": {k: str(v) for k, v in cg.dirs.items()}, "leaf": cg.leaf}


def sample(*dirs_json: str) -> list:
    """[cpu ns, memory bytes, OOM kills] per cgroup (null where it is gone)."""
    out: list = []
    for d in dirs_json:
        spec = json.loads(d)
        cg = cgroups.Cgroup(spec["version"], {k: Path(v) for k, v in spec["dirs"].items()}, spec.get("leaf", False))
        try:
            out.append(list(cg.sample()))
        except (OSError, ValueError):
            out.append(None)
    return out


def sample_stream(interval_s: str, *dirs_json: str) -> None:
    """`sample`'s answer with this machine's time, one JSON line every
    interval, until the reader goes away (its SSH channel closes): one
    resident process per machine instead of an SSH command per sample."""
    period = float(interval_s)
    try:
        while True:
            print(json.dumps([time.time_ns(), sample(*dirs_json)]), flush=True)
            time.sleep(period)
    except BrokenPipeError:
        return None


def cgroup_remove(dirs_json: str) -> dict:
    spec = json.loads(dirs_json)
    cgroups.Cgroup(spec["version"], {k: Path(v) for k, v in spec["dirs"].items()}, spec.get("leaf", False)).remove()
    return {}


def leftovers(run_id: str) -> list[str]:
    rid = None if run_id == "-" else run_id
    out = [f"container {c}" for c in _containers(rid)]
    for ns in _namespaces(rid):
        pids = _ns_pids(ns)
        out.append(f"namespace {ns}" + (f" ({len(pids)} processes)" if pids else ""))
    out += [f"tunnel {t}" for t in _tunnels(rid)]
    for _rid, cgs in cgroups.existing(rid).items():
        out += [f"cgroup {next(iter(cg.dirs.values()))}" for cg in cgs]
    return out


def destroy(run_id: str) -> list[str]:
    """Remove a run's containers, namespaces (their processes first), tunnels and cgroups; safe to repeat."""
    rid = None if run_id == "-" else run_id
    removed = []
    for c in _containers(rid):
        subprocess.run(["docker", "rm", "-f", c], capture_output=True, timeout=60)
        removed.append(f"container {c}")
    for ns in _namespaces(rid):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in _ns_pids(ns):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 3
            while _ns_pids(ns) and time.monotonic() < deadline:
                time.sleep(0.05)
        _ip("netns", "del", ns)
        removed.append(f"namespace {ns}")
    for t in _tunnels(rid):
        _ip("link", "del", t)
        removed.append(f"tunnel {t}")
    for _rid, cgs in cgroups.existing(rid).items():
        for cg in cgs:
            cg.remove()
            removed.append(f"cgroup {next(iter(cg.dirs.values()))}")
    cgroups.prune(rid)
    if PIDS.is_dir():  # pid files of processes that have ended (or await their reaping: a zombie)
        for f in PIDS.iterdir():
            try:
                if not _alive(int(f.read_text().strip() or 0)):
                    f.unlink(missing_ok=True)
            except (OSError, ValueError):
                f.unlink(missing_ok=True)
    for d in (PIDS, PIDS.parent):  # /run/continuum, when nothing else of ours is in it
        try:
            d.rmdir()
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    """Whether pid runs: a process just killed stays a zombie until the shell that started it
    (remote.py's wrapper) reaps it and removes its pid file, which raced this cleanup."""
    try:
        return pid > 0 and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


COMMANDS: dict[str, Callable[..., object]] = {"cgroup-create": cgroup_create, "sample": sample, "sample-stream": sample_stream,
            "cgroup-remove": cgroup_remove,
            "leftovers": leftovers, "destroy": destroy}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: hostside.py {{{'|'.join(COMMANDS)}}} ARGS...", file=sys.stderr)
        return 2
    if argv[0] == "sample-stream":  # answers as it goes, not once
        try:
            sample_stream(*argv[1:])
        finally:  # the reader is gone: nothing more to flush to it
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    try:
        result = COMMANDS[argv[0]](*argv[1:])
    except (ProviderError, OSError, TypeError) as e:
        print(f"hostside {argv[0]}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
