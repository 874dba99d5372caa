#!/usr/bin/env bash
# Install everything continuum needs on a fresh Debian/Ubuntu machine (system
# packages, the mahimahi-link build, the Python environment), then run the
# first experiment, configs/quickstart.toml. Idempotent: a second run only
# checks. Needs root (namespaces, cgroups, raw sockets, apt).
# --no-demo: install only (the test command uses this).
# --containers: also install and start the Docker engine (Debian's docker.io)
#   and build the workload images (continuum images build).
# --vms: also install QEMU and build the qemu provider's Debian guest image
#   (continuum images vm; mmdebstrap, a few minutes the first time).
# --test-builds: also build what the test command's clippy and cargo test
#   need, beside the Python environment, and install Debian's chromium (the
#   report.html tests open it headless; run-tests.sh passes it).
# --libvirt: also install and start libvirt (its daemons, QEMU driver) for
#   [provider] vm_manager = "libvirt". Not part of --vms: Debian's
#   libvirt-daemon-system brings libvirt's default NAT network (a bridge on
#   this machine), which continuum never uses.
set -euo pipefail
cd "$(dirname "$0")"
DEMO=1 CONTAINERS=0 VMS=0 TEST_BUILDS=0 LIBVIRT=0
for arg in "$@"; do
  case "$arg" in
    --no-demo) DEMO=0 ;;
    --containers) CONTAINERS=1 ;;
    --vms) VMS=1 ;;
    --test-builds) TEST_BUILDS=1 ;;
    --libvirt) LIBVIRT=1 VMS=1 ;;
    *) echo "setup.sh: unknown option $arg (valid: --no-demo, --containers, --vms, --libvirt, --test-builds)" >&2; exit 2 ;;
  esac
done

# Root is needed (namespaces, cgroups, raw sockets, apt). A bare root shell
# (no sudo installed) runs this directly; a sudo user gets it re-executed.
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then exec sudo -- "$PWD/$(basename "$0")" "$@"; fi
  echo "setup.sh: needs root (it creates network namespaces and installs packages) and sudo is not installed; run it as root" >&2
  exit 1
fi

APT_PACKAGES=(iproute2 iperf3 ethtool iptables iputils-ping python3 python3-venv python3-pip build-essential pkg-config
  mosquitto python3-paho-mqtt python3-rich python3-pandas python3-matplotlib python3-numpy python3-pil
  python3-torch python3-torchvision python3-av python3-scipy
  redis-server python3-redis python3-aiohttp python3-zstandard
  python3-protobuf python3-requests python3-six python3-packaging python3-astunparse python3-oauthlib
  python3-markupsafe python3-yaml python3-tomli-w python3-hypothesis
  ansible-core ansible-lint openssh-client rsync)
if [ "$CONTAINERS" = 1 ]; then APT_PACKAGES+=(docker.io mmdebstrap); fi
# iptables: the redirects of MECaNIC's NIC cache and pDCell's shims inside the nodes (docker.io pulled it in before)
# headless Chromium opens the runs' report.html in the tests (a reader needs only a browser)
if [ "$TEST_BUILDS" = 1 ]; then APT_PACKAGES+=(chromium); fi
# libvirt-clients, libxml2-utils: virt-xml-validate checks the libvirt domains continuum writes (tests/qemu)
if [ "$VMS" = 1 ]; then APT_PACKAGES+=(qemu-system-x86 qemu-utils mmdebstrap e2fsprogs libvirt-clients libxml2-utils); fi
if [ "$LIBVIRT" = 1 ]; then APT_PACKAGES+=(libvirt-daemon-system libvirt-daemon-driver-qemu); fi
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing system packages: ${missing[*]}"
  apt_install "${missing[@]}"
fi

# Rust >= 1.85 for mahimahi-link: a rustup toolchain of root or of the sudo
# user counts; otherwise Debian's: cargo-web/rustc-web on Debian 12 (its
# plain rustc is 1.63), cargo/rustc on newer releases.
. mahimahi-link/toolchain.sh
rust_minor() { rustc --version 2>/dev/null | sed -E 's/rustc 1\.([0-9]+).*/\1/;t;s/.*/0/'; }
if ! command -v cargo >/dev/null 2>&1 || [ "$(rust_minor)" -lt 85 ]; then
  if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
  if apt-cache show rustc-web >/dev/null 2>&1; then rust_pkgs=(cargo-web rustc-web rust-web-clippy); else rust_pkgs=(cargo rustc rust-clippy); fi
  echo "==> installing Rust: ${rust_pkgs[*]}"
  apt_install "${rust_pkgs[@]}"
  hash -r
fi
if [ "$(rust_minor)" -lt 85 ]; then
  echo "setup.sh: mahimahi-link needs Rust >= 1.85, found $(rustc --version 2>&1); install a newer toolchain (https://rustup.rs) and rerun" >&2
  exit 1
fi

# The release build (mostly one core: codegen-units = 1) runs while pip unpacks
# the ML stack: a fresh clone's setup 87 -> 78 s on 2 cores (pip also needs CPU).
# With --test-builds the same job then builds clippy's and the tests' targets
# (35 s more of one core); their failures are left for run-tests.sh to report.
echo "==> building mahimahi-link (release), beside the Python environment"
set -m  # the job in its own process group, so that the trap stops every cargo of it
(
  cd mahimahi-link
  cargo build --release --quiet
  if [ "$TEST_BUILDS" = 1 ]; then
    cargo clippy --all-targets --quiet -- -D warnings >/dev/null 2>&1 || true
    cargo test --no-run --quiet >/dev/null 2>&1 || true
  fi
) &
cargo_pid=$!
set +m
trap 'kill -- "-$cargo_pid" 2>/dev/null || true' EXIT

echo "==> Python environment (.venv, on Debian's python3 so it sees python3-torch and friends)"
if [ -x .venv/bin/python ] && ! grep -q "include-system-site-packages = true" .venv/pyvenv.cfg; then
  rm -rf .venv  # made by an older setup.sh without the system packages
fi
if [ ! -x .venv/bin/python ]; then /usr/bin/python3 -m venv --system-site-packages .venv; fi
# The ML stack (TensorFlow for W1, transformers for W2) is ~1.2 GB; pip only
# runs when a requirements file changed since the last install.
REQS=(requirements.txt workloads/requirements-tensorflow.txt workloads/requirements-transformers.txt)
if ! cat "${REQS[@]}" | cmp -s - .venv/.requirements.installed 2>/dev/null; then
  echo "==> Python packages (pinned; TensorFlow and transformers take a minute the first time)"
  # pip byte-compiles on one core; compileall on both after it: 80 -> 59 s
  # on this project's 2-core machine.
  .venv/bin/pip install --quiet --disable-pip-version-check --no-compile $(printf -- "-r %s " "${REQS[@]}")
  .venv/bin/python -m compileall -qq -j 0 "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    || echo "setup.sh: some installed Python files did not byte-compile (they compile on import instead)" >&2
  cat "${REQS[@]}" > .venv/.requirements.installed
fi
if ! cmp -s pyproject.toml .venv/.pyproject.installed 2>/dev/null || [ ! -x .venv/bin/continuum ]; then
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
  cp pyproject.toml .venv/.pyproject.installed
fi
# Plotly's JavaScript where the experiments' committed report.html pages load it
# (.local/, gitignored: third-party code is not committed; the run pages carry it)
.venv/bin/python -c 'from continuum.results import experiment_page; experiment_page.place_library()'

if ! wait "$cargo_pid"; then
  echo "setup.sh: building mahimahi-link failed (its errors are above)" >&2
  exit 1
fi
trap - EXIT

# `continuum` on the PATH: a launcher for this checkout's environment.
LAUNCHER=/usr/local/bin/continuum
want="#!/bin/sh
# continuum launcher written by $PWD/setup.sh
exec \"$PWD/.venv/bin/continuum\" \"\$@\""
if [ "$(cat "$LAUNCHER" 2>/dev/null)" != "$want" ]; then
  if [ -e "$LAUNCHER" ] && ! grep -q "continuum launcher written by" "$LAUNCHER"; then
    echo "setup.sh: $LAUNCHER exists and is not ours; leaving it (use $PWD/.venv/bin/continuum)" >&2
  else
    printf '%s\n' "$want" > "$LAUNCHER" && chmod 755 "$LAUNCHER"
    echo "==> continuum on the PATH: $LAUNCHER -> $PWD/.venv/bin/continuum"
  fi
fi

if [ "$CONTAINERS" = 1 ]; then
  if ! docker info >/dev/null 2>&1; then
    echo "==> starting the Docker engine"
    if command -v systemctl >/dev/null 2>&1 && systemctl start docker 2>/dev/null; then :; else
      (dockerd >/var/log/continuum-dockerd.log 2>&1 &)
    fi
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
    docker info >/dev/null 2>&1 || { echo "setup.sh: dockerd did not start; see /var/log/continuum-dockerd.log" >&2; exit 1; }
  fi
  echo "==> workload container images (the first build runs mmdebstrap: a few minutes)"
  .venv/bin/continuum images build
fi

if [ "$LIBVIRT" = 1 ] && ! virsh -c qemu:///system version >/dev/null 2>&1; then
  echo "==> starting libvirt"
  if command -v systemctl >/dev/null 2>&1 && systemctl start libvirtd virtlogd 2>/dev/null; then :; else
    { pgrep -x virtlogd >/dev/null || virtlogd -d; } && { pgrep -x libvirtd >/dev/null || libvirtd -d; }
  fi
  for _ in $(seq 1 40); do virsh -c qemu:///system version >/dev/null 2>&1 && break; sleep 0.5; done
  virsh -c qemu:///system version >/dev/null 2>&1 || { echo "setup.sh: libvirtd did not start" >&2; exit 1; }
fi

if [ "$VMS" = 1 ]; then
  echo "==> the qemu provider's Debian guest image (mmdebstrap the first time: a few minutes)"
  .venv/bin/continuum images vm
fi

if [ "$DEMO" = 0 ]; then exit 0; fi
echo "==> first experiment: configs/quickstart.toml (results go to runs/)"
exec .venv/bin/continuum run configs/quickstart.toml
