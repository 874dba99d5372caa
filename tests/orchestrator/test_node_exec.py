"""Node processes start through continuum/nodeside/node_exec.py: in the node's cgroup
and network namespace, and workloads as `nobody` who reaches only what the
sandbox exposes, at the same paths. Checked from inside a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuum import cgroups, commands
from continuum.runtime import Node, Sandbox, wait_for

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, os, sys
def can(f):
    try:
        return f()
    except OSError as e:
        return e.errno
out = {
    "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "cgroup": open("/proc/self/cgroup").read(),
    "interfaces": sorted(os.listdir("/sys/class/net")),
    "repo_readable": os.access(sys.argv[1] + "/continuum/runtime.py", os.R_OK),
    "repo_writable": os.access(sys.argv[1], os.W_OK),
    "write_rw": can(lambda: open(sys.argv[2] + "/out.txt", "w").write("x")),
    "write_etc": can(lambda: open("/etc/continuum-probe", "w").write("x")),
    "host_tmp_file_seen": os.path.exists(sys.argv[3]),
    "hidden_sibling_seen": os.path.exists(sys.argv[4]),
    "home": os.environ.get("HOME"), "cwd": os.getcwd(),
}
print("PROBE " + json.dumps(out), flush=True)
"""


@pytest.fixture
def node(root_netns, tmp_path):
    ns = f"ctm-test-exec-{os.getpid()}"
    commands.run(["ip", "netns", "add", ns])
    cg = cgroups.create(f"continuum-test-exec-{os.getpid()}", 0.5, 64 << 20)
    try:
        yield Node("probe", ns, cgroup=cg)
    finally:
        commands.run(["ip", "netns", "del", ns], check=False)
        wait_for(lambda: not cg.pids(), 5, "the probe to leave its cgroup")
        cg.remove()


def _probe(node: Node, tmp_path: Path, sandbox: Sandbox | None) -> dict:
    # A folder only root may enter (like /root or /tmp/pytest-of-root): the
    # exposed path inside it must be reachable, its sibling not.
    private = tmp_path / "private"
    (private / "results").mkdir(parents=True)
    (private / "sibling").mkdir()
    private.chmod(0o700)
    rw = private / "results"
    os.chown(rw, 65534, 65534)
    host_tmp = Path("/tmp") / f"continuum-probe-{os.getpid()}"
    host_tmp.write_text("host")
    log = tmp_path / "probe.log"
    try:
        p = node.start([sys.executable, "-c", PROBE, str(REPO), str(rw), str(host_tmp), str(private / "sibling")],
                       log, cwd=REPO, sandbox=sandbox)
        assert p.wait(30) == 0, log.read_text()
    finally:
        host_tmp.unlink()
    line = [x for x in log.read_text().splitlines() if x.startswith("PROBE ")]
    assert line, log.read_text()
    return json.loads(line[0].removeprefix("PROBE "))


def test_workload_runs_as_nobody_and_reaches_only_what_is_exposed(node, tmp_path):
    before = Path("/proc/self/mountinfo").read_text()
    rw = tmp_path / "private" / "results"
    out = _probe(node, tmp_path, Sandbox("nobody", ro=(REPO,), rw=(rw,)))
    assert (out["uid"], out["gid"], out["groups"]) == (65534, 65534, [])
    assert f"continuum-test-exec-{os.getpid()}" in out["cgroup"]          # joined before exec
    assert out["interfaces"] == ["lo"], "the node's namespace (and its /sys), not the host's"
    assert out["repo_readable"] and not out["repo_writable"]              # code: read-only
    assert out["write_rw"] == 1 and (rw / "out.txt").read_text() == "x"   # results: writable, same path
    assert out["write_etc"] in (13, 30), "EACCES or EROFS: nobody cannot write the host's files"
    assert not out["host_tmp_file_seen"], "/tmp is the workload's own"
    assert not out["hidden_sibling_seen"], "only the exposed path of a private folder is reachable"
    assert out["home"] == "/tmp" and out["cwd"] == str(REPO)
    assert Path("/proc/self/mountinfo").read_text() == before, "no mount reached the host"


def test_without_a_sandbox_the_process_keeps_root(node, tmp_path):
    out = _probe(node, tmp_path, None)
    assert out["uid"] == 0 and out["interfaces"] == ["lo"]
    assert f"continuum-test-exec-{os.getpid()}" in out["cgroup"]
    assert out["host_tmp_file_seen"] and out["hidden_sibling_seen"]


def test_wrapper_failures_are_named(node, tmp_path):
    log = tmp_path / "x.log"
    p = node.start(["true"], log, sandbox=Sandbox("no-such-user-continuum"))
    assert p.wait(30) == 126
    assert "no user 'no-such-user-continuum'" in log.read_text()
    p = node.start(["/nonexistent/program"], tmp_path / "y.log")
    assert p.wait(30) == 126 and "cannot start /nonexistent/program" in (tmp_path / "y.log").read_text()
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    p = node.start(["true"], tmp_path / "z.log", sandbox=Sandbox("nobody", ro=(closed,)))
    assert p.wait(30) == 126
    assert f"user nobody cannot read {closed} (drwx------)" in (tmp_path / "z.log").read_text()
    assert "workload.run_as_root = true" in (tmp_path / "z.log").read_text()
    r = subprocess.run([sys.executable, "-I", "-S", str(REPO / "continuum" / "nodeside" / "node_exec.py"), "--netns", "no-such-ns-ctm", "--", "true"],
                       capture_output=True, text=True)
    assert r.returncode == 126 and "no network namespace no-such-ns-ctm" in r.stderr


def test_the_manifest_says_whom_each_side_ran_as(tmp_path):
    from continuum import experiment
    from continuum.workloads import launch

    path = tmp_path / "e.toml"
    base = '[experiment]\nname = "u"\nduration_s = 1\n[mobile]\nuplink = "const-12mbps"\ndownlink = "const-48mbps"\n'
    path.write_text(base)
    assert launch.user_note(experiment.load(path, materialize=False)) == {"endpoint": "nobody", "server": "nobody"}
    path.write_text(base + "[workload]\nrun_as_root = true\n")
    spec = experiment.load(path, materialize=False)
    assert launch.sandbox(spec, tmp_path) is None
    assert launch.user_note(spec) == {"endpoint": "root (workload.run_as_root = true)",
                                      "server": "root (workload.run_as_root = true)"}


def test_an_experiment_folder_of_tmp_itself_is_read_and_tmp_stays_the_workloads_own(node, tmp_path):
    """An experiment file directly in /tmp exposes /tmp itself (a custom app's folder): the workload reads the
    host's files there and writes to /tmp (its HOME) into a layer of its own, which leaves nothing on the host;
    the results folder below /tmp is still the host's."""
    host_file = Path("/tmp") / f"continuum-probe-app-{os.getpid()}"
    host_file.write_text("app")
    written = Path("/tmp") / f"continuum-probe-written-{os.getpid()}"
    rw = tmp_path / "results"
    rw.mkdir()
    os.chown(rw, 65534, 65534)
    probe = ("import os, sys; print('PROBE', open(sys.argv[1]).read(), flush=True); open(sys.argv[2], 'w').write('w'); "
             "open(sys.argv[3] + '/out.txt', 'w').write('r'); print('PROBE', open(sys.argv[2]).read())")
    log = tmp_path / "probe.log"
    try:
        p = node.start([sys.executable, "-c", probe, str(host_file), str(written), str(rw)], log, cwd=Path("/tmp"),
                       sandbox=Sandbox("nobody", ro=(REPO, Path("/tmp")), rw=(rw,)))
        assert p.wait(30) == 0, log.read_text()
        assert [x for x in log.read_text().splitlines() if x.startswith("PROBE")] == ["PROBE app", "PROBE w"]
        assert not written.exists(), "what the workload wrote to /tmp stays in its own layer"
        assert (rw / "out.txt").read_text() == "r"
    finally:
        host_file.unlink()
        written.unlink(missing_ok=True)
