#!/usr/bin/env bash
# The test suite: installs what it needs (idempotently, via setup.sh), then
# runs the Rust unit/property tests and the pytest suite (reference model,
# live namespace tests, workloads as processes and in Docker containers). Needs root:
# a sudo user gets it re-executed through sudo. Public traces are read from ../shared/traces
# when present; tests that need them skip with a message otherwise.
set -euo pipefail
cd "$(dirname "$0")"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then exec sudo -- "$PWD/$(basename "$0")" "$@"; fi
  echo "run-tests.sh: needs root (the tests create network namespaces) and sudo is not installed; run it as root" >&2
  exit 1
fi
./setup.sh --no-demo --test-builds
. mahimahi-link/toolchain.sh
# Docker and the workload images; if the engine cannot run on this host the
# container tests skip and say why, the rest of the suite still runs.
./setup.sh --no-demo --containers || echo "==> WARNING: containers unavailable here; the container tests will skip" >&2
# QEMU and the qemu provider's guest image (cached in ~/.cache/continuum/vm).
./setup.sh --no-demo --vms || echo "==> WARNING: the guest image could not be built; the qemu tests will skip" >&2
echo "==> linters: ruff, mypy (continuum/, workloads/, the edge systems, srsran-integration/), cargo clippy"
.venv/bin/ruff check .
.venv/bin/mypy  # the folders of pyproject.toml's [tool.mypy] files
(cd mahimahi-link && cargo clippy --all-targets --quiet -- -D warnings)
echo "==> cargo test (mahimahi-link)"
# The dev profile: with overflow checks, and 16 s to build where the release profile's LTO takes 43 s.
(cd mahimahi-link && cargo test --quiet 2>&1 | grep -E "^test result|FAILED|panicked|error" ; exit "${PIPESTATUS[0]}")
echo "==> pytest"
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 tests "$@"
