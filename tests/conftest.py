"""Shared fixtures: the built emulator, the public traces beside the
repository, and root/namespace prerequisites (skipped with a reason when
missing; CI installs and runs everything as root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import lanes
import pytest

ROOT = Path(__file__).resolve().parents[1]

# Tests never write to the user's trace cache: every session gets its own,
# inherited by the CLI and experiment processes the tests start.
TEST_TRACE_CACHE = Path(tempfile.mkdtemp(prefix="continuum-test-traces-"))
os.environ["CONTINUUM_TRACE_CACHE"] = str(TEST_TRACE_CACHE)


# Nor to the user's calibration cache: each session measures what it needs once (and a test
# that must measure under its own conditions, a CPU hog say, asks for --recalibrate).
TEST_CALIBRATION_CACHE = Path(tempfile.mkdtemp(prefix="continuum-test-calibration-", dir=Path.home()))
os.environ["CONTINUUM_CALIBRATION_CACHE"] = str(TEST_CALIBRATION_CACHE)


def pytest_collection_modifyitems(session, config, items):
    lanes.split(session, config, items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    lanes.before(item)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    lanes.finish(session, exitstatus)


def pytest_terminal_summary(terminalreporter):
    lanes.summary(terminalreporter)


def pytest_unconfigure(config):
    lanes.last_word(config)
    shutil.rmtree(TEST_TRACE_CACHE, ignore_errors=True)
    shutil.rmtree(TEST_CALIBRATION_CACHE, ignore_errors=True)

SHARED_TRACES = ROOT.parent / "shared" / "traces"
MML_DIR = ROOT / "mahimahi-link"
MML_BIN = MML_DIR / "target" / "release" / "mahimahi-link"


@pytest.fixture(scope="session")
def mml() -> Path:
    """The release binary, built once per session if it is missing or stale."""
    if shutil.which("cargo") is None and not MML_BIN.exists():
        pytest.skip("cargo is not installed and mahimahi-link is not built; run ./setup.sh")
    if shutil.which("cargo") is not None:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=MML_DIR, check=True)
    return MML_BIN


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    if not (SHARED_TRACES / "mahimahi").is_dir():
        pytest.skip(f"public traces not found at {SHARED_TRACES} (clone the repository beside ../shared to run trace tests)")
    return SHARED_TRACES


@pytest.fixture(scope="session")
def root_netns():
    """Live tests create namespaces and raw sockets: they need root and iproute2."""
    if os.geteuid() != 0:
        pytest.skip("live network tests need root (network namespaces, AF_PACKET)")
    for tool in ("ip", "iperf3", "ping"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed; run ./setup.sh")



@pytest.fixture(scope="session", autouse=True)
def stress_hog():
    """CONTINUUM_TEST_STRESS=hog (tests/stress.py): a CPU hog on one core for the whole session."""
    from stress import STRESS

    if STRESS != "hog":
        yield None
        return
    from cpuhog import cpu_hog

    with cpu_hog() as proc:
        yield proc


@pytest.fixture(scope="session")
def continuum_run():
    """`continuum run CONFIG` from a folder, as a user would: returns a
    function giving the result folder of the run called NAME (the test
    fails with the run's output if the run failed). Under
    CONTINUUM_TEST_STRESS=half-speed the file's edge runs at speed 0.5
    (tests/stress.py)."""
    import sys

    from stress import edge_config

    def run(config: Path, cwd: Path, name: str, *args: str) -> Path:
        config.write_text(edge_config(config.read_text()))
        p = subprocess.run([sys.executable, "-m", "continuum", "run", str(config), *args], capture_output=True, text=True,
                           cwd=cwd, timeout=600)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        return sorted((cwd / "runs").glob(f"*-{name}"))[-1]

    return run
