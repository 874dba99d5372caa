"""The root half of MOSAIC's per-task cgroups inside `continuum run`.

The executor runs as the edge node's workload: an unprivileged user, in the
node's network namespace, which comes with its own /sys where no cgroup
hierarchy is mounted. So it cannot make a task's cgroup itself. This agent
runs as root on the host, as SMEC's manager does. It makes the task's
cgroup under the node's, sets its weight, and moves the worker in; then it
moves the worker back and removes the cgroup. It moves only processes that
are already inside the node's cgroup, so a workload cannot use it to move
anything else on the host.

One line per request over a UNIX stream socket, one line back:

    enter TASK PID WEIGHT   ->  ok | error WHY
    leave TASK PID          ->  ok | error WHY

    python -m mosaic.agent --socket S --cpu-dir NODE_CPU_DIR --cgroup-version 1|2

It exits when the process that started it is gone."""

from __future__ import annotations

import argparse
import os
import re
import selectors
import socket
from pathlib import Path

from mosaic.executor import TaskCgroups
from smec_edge.unixpath import short

TASK_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def in_node(pid: int, node_dir: Path, mount: Path, version: int) -> bool:
    """Whether pid's cgroup (the cpu controller's) is the node's or below it;
    `mount` is the hierarchy's root."""
    inside = "/" + str(node_dir.relative_to(mount))
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if (version == 2 and ctrls == "") or (version == 1 and "cpu" in ctrls.split(",")):
            return path == inside or path.startswith(inside + "/")
    return False


class Agent:
    def __init__(self, cpu_dir: Path, version: int, mount: Path) -> None:
        self.dir, self.version, self.mount = cpu_dir, version, mount
        self.cgroups = TaskCgroups(cpu_dir, version)

    def handle(self, line: str) -> str:
        parts = line.split()
        try:
            if len(parts) == 4 and parts[0] == "enter":
                task, pid, weight = parts[1], int(parts[2]), float(parts[3])
                if not TASK_ID.match(task):
                    return "error bad task id"
                if not in_node(pid, self.dir, self.mount, self.version):
                    return f"error process {pid} is not in the node's cgroup"
                self.cgroups.enter_named(task, pid, weight)
                return "ok"
            if len(parts) == 3 and parts[0] == "leave":
                task, pid = parts[1], int(parts[2])
                if not TASK_ID.match(task):
                    return "error bad task id"
                self.cgroups.leave(self.dir / f"task-{task}", pid)
                return "ok"
        except (ValueError, OSError) as e:
            return f"error {e}"
        return "error expected: enter TASK PID WEIGHT | leave TASK PID"


def cpu_mount(version: int, mounts: str = "/proc/mounts") -> Path:
    """The cpu controller's hierarchy root on this machine: the unified one (v2), or the
    v1 mount whose options name cpu (the agent runs where its cgroups are, a VM or
    another machine included, so it finds them there itself)."""
    for line in Path(mounts).read_text().splitlines():
        _, mnt, fstype, opts = (line.split() + ["", "", "", ""])[:4]
        if (version == 2 and fstype == "cgroup2") or (version == 1 and fstype == "cgroup" and "cpu" in opts.split(",")):
            return Path(mnt)
    raise SystemExit(f"no cgroup v{version} hierarchy with the cpu controller in {mounts}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--cpu-dir", type=Path, required=True)
    ap.add_argument("--cgroup-version", type=int, choices=(1, 2), default=1)
    ap.add_argument("--cpu-mount", type=Path, help="the cpu controller's hierarchy root (v2: the unified one); "
                                                    "default: found on this machine, where the agent runs beside its cgroups")
    a = ap.parse_args()
    if a.cpu_mount is None:
        a.cpu_mount = cpu_mount(a.cgroup_version)
    agent = Agent(a.cpu_dir, a.cgroup_version, a.cpu_mount)
    if os.path.exists(a.socket):
        os.unlink(a.socket)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(short(a.socket))
    os.chmod(a.socket, 0o666)  # the executor runs as the workload user
    srv.listen(8)
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ)
    buffers: dict[socket.socket, bytes] = {}
    parent = os.getppid()
    while os.getppid() == parent:
        for key, _ in sel.select(timeout=0.5):
            if key.fileobj is srv:
                conn, _ = srv.accept()
                sel.register(conn, selectors.EVENT_READ)
                buffers[conn] = b""
                continue
            conn = key.fileobj  # type: ignore[assignment]
            data = conn.recv(4096)
            if not data:
                sel.unregister(conn)
                conn.close()
                buffers.pop(conn, None)
                continue
            buffers[conn] += data
            while b"\n" in buffers[conn]:
                line, buffers[conn] = buffers[conn].split(b"\n", 1)
                conn.sendall((agent.handle(line.decode(errors="replace")) + "\n").encode())


class AgentCgroups:
    """The executor's side: TaskCgroups' interface, through the agent."""

    def __init__(self, socket_path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(short(socket_path))
        self.file = self.sock.makefile("rw", buffering=1)

    def _ask(self, line: str) -> None:
        self.file.write(line + "\n")
        self.file.flush()
        answer = self.file.readline().strip()
        if answer != "ok":
            raise RuntimeError(f"the MOSAIC cgroup agent refused {line!r}: {answer or 'no answer'}")

    def enter(self, task, pid: int, weight: float):
        self._ask(f"enter {task.id} {pid} {weight:g}")
        return task.id

    def leave(self, handle, pid: int) -> None:
        if handle is not None:
            self._ask(f"leave {handle} {pid}")


if __name__ == "__main__":
    main()
