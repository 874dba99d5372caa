"""Two lanes on the project's two cores. The link tests (tests/mahimahi_link,
the trace recorder) wait on traces replayed in real time and leave the CPU
~85% idle for their ~250 s; the whole suite left it 55% idle. So a second
pytest process runs them, beside only the tests that neither time anything
nor load the edge (unit tests, static checks, the hosts provider's
provisioning, the campaign's bookkeeping, the faults' teardowns: each
checks what its own run left); every other test of this session starts
once that lane has finished, so no timing- or load-sensitive test shares
the machine with it. The link tests themselves passed under a CPU
hog pinned to one core.

The qemu provider's run (~125 s of TCG guests, which the TCG emulation
keeps busy: two VMs booting load both cores) goes first in the second lane,
before its link tests, beside the first lane's tests of that kind: the
VMs share the machine with no timing test, and its checks of what is left
on the host look at its own run only, as the tests beside it do.

The lane's output comes at the end of this session's, and its failures fail
the session. CONTINUUM_TEST_LANES=1 runs everything in one process, as does
a session that asked only for tests of one side."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LANE_ENV = "CONTINUUM_TEST_LANE"

# the second lane: wall-bound link tests
LINK_LANE = ("qemu/test_qemu_live.py", "mahimahi_link/", "mahimahi_patches/", "tracearchive/test_record.py")  # in this order
# what the first lane runs beside it: nothing here measures time or the edge's speed
BESIDE = (
    "experiments/", "hosts/", "k3s/", "playbooks/", "qemu/test_libvirt_domain.py",
    "mosaic/test_admission.py", "mosaic/test_admission_results.py",
    "orchestrator/test_calibration.py", "orchestrator/test_campaign_config.py", "orchestrator/test_campaign_live.py",
    "orchestrator/test_cell_notice.py", "orchestrator/test_compare.py",
    "orchestrator/test_config.py", "orchestrator/test_diskspace.py",
    "orchestrator/test_config_fuzz.py", "orchestrator/test_escaping.py", "orchestrator/test_faults.py", "orchestrator/test_outcomes.py",
    "orchestrator/test_facts.py", "orchestrator/test_layers.py", "orchestrator/test_plan.py", "orchestrator/test_queue_args.py", "orchestrator/test_results.py",
    "orchestrator/test_timeline_config.py", "orchestrator/test_trace_grammar.py",
    "smec_edge/test_policy.py", "smec_edge/test_timing.py", "smec_edge/test_gpu.py",
    "srsran/test_srsran_5g.py", "srsran/test_srsran_config.py", "srsran/test_srsran_mode.py",
    "tracearchive/test_archive_cli.py", "tracearchive/test_convert_and_checks.py", "tracearchive/test_drive.py",
    "workloads/test_apps.py", "workloads/test_model_cache.py",
)


def _rel(item: pytest.Item) -> str:
    try:
        return Path(str(item.path)).resolve().relative_to(TESTS).as_posix()
    except ValueError:
        return ""


def _in(item: pytest.Item, prefixes: tuple[str, ...]) -> bool:
    rel = _rel(item)
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in prefixes)


class LinkLane:
    """The second pytest process, and the wait for it before the first test that must run alone."""

    def __init__(self, config: pytest.Config, nodeids: list[str]):
        self.config = config
        self.count = len(nodeids)
        self.log = tempfile.NamedTemporaryFile(prefix="continuum-link-lane-", suffix=".log", delete=False)
        positional = {str(a) for a in config.invocation_params.args if _is_path(str(a), config.invocation_params.dir)}
        passed = [str(a) for a in config.invocation_params.args if str(a) not in positional]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", *passed, *nodeids], cwd=config.invocation_params.dir,
            env={**os.environ, LANE_ENV: "2"}, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        self.waited = False
        self.idle_s: float | None = None  # how long the first lane waited for this one: what the lanes leave unbalanced
        self.rc: int | None = None

    def wait(self, interrupted: bool = False) -> int:
        if interrupted and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # its fixtures tear their namespaces down
        try:
            rc = self.proc.wait(timeout=120 if interrupted else None)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        return rc


def _is_path(arg: str, cwd: Path) -> bool:
    if arg.startswith("-"):
        return False
    return (cwd / arg.split("::")[0]).exists()


_lane: LinkLane | None = None
_failed = ""  # a failed lane's last line, said again after the session's counts


def split(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """The collection hook: the link tests leave this session for the second lane, and the tests that may
    run beside it go first."""
    global _lane
    if os.environ.get(LANE_ENV) or os.environ.get("CONTINUUM_TEST_LANES") == "1" or config.option.collectonly:
        return
    lane = sorted((i for i in items if _in(i, LINK_LANE)), key=lambda i: next(k for k, p in enumerate(LINK_LANE) if _in(i, (p,))))
    rest = [i for i in items if not _in(i, LINK_LANE)]
    if not lane or not rest:
        return
    items[:] = [i for i in rest if _in(i, BESIDE)] + [i for i in rest if not _in(i, BESIDE)]
    _lane = LinkLane(config, [i.nodeid for i in lane])


def before(item: pytest.Item) -> None:
    """Before each test: one that may not share the machine waits for the link lane to finish."""
    if _lane is None or _lane.waited or _in(item, BESIDE):
        return
    _lane.waited = True
    t = time.monotonic()
    _lane.wait()
    _lane.idle_s = time.monotonic() - t


def finish(session: pytest.Session, exitstatus: int) -> None:
    """At the end of the session: wait for the lane; its failures are this session's."""
    if _lane is None:
        return
    stopped = exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop is not False
    _lane.rc = _lane.wait(interrupted=stopped)
    if _lane.rc not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def summary(terminalreporter) -> None:
    """The lane's output in this session's summary, its last line (the counts) last."""
    global _lane, _failed
    if _lane is None or _lane.rc is None:
        return
    lane, _lane = _lane, None
    lane.log.close()
    text = Path(lane.log.name).read_text(errors="replace")
    Path(lane.log.name).unlink(missing_ok=True)
    lines = text.rstrip("\n").splitlines() or ["(no output)"]
    terminalreporter.write_sep("=", f"link lane: {lane.count} tests in a second pytest process (exit {lane.rc})")
    terminalreporter.write("\n".join(lines[:-1]) + "\n")
    terminalreporter.write_line(f"link lane: {lines[-1].strip('= ')}")
    if lane.idle_s is not None:  # the tests beside it ended first: more of them would fit beside it
        terminalreporter.write_line(f"link lane: the first lane's tests that may run beside it ended {lane.idle_s:.0f} s before it did")
    if lane.rc not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED, pytest.ExitCode.INTERRUPTED):
        _failed = f"link lane: {lines[-1].strip('= ')} (above); this session fails with it"


def last_word(config: pytest.Config) -> None:
    """After the session's own counts: a failed link lane said again, where a reader looks last."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if _failed and tr is not None:
        tr.write_line(_failed, red=True, bold=True)
