#!/usr/bin/env bash
# Install everything continuum needs on a fresh Debian/Ubuntu machine, build
# mahimahi-link, and run a first emulated link. Idempotent: a second run only
# checks. Needs root (namespaces, raw sockets, apt).
set -euo pipefail
cd "$(dirname "$0")"

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: run as root (sudo ./setup.sh): the testbed creates network namespaces" >&2
  exit 1
fi

APT_PACKAGES=(iproute2 iperf3 ethtool iputils-ping python3 python3-venv python3-pip build-essential pkg-config)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v cargo >/dev/null 2>&1; then missing+=(cargo rustc); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing system packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

rust_minor=$(rustc --version | sed -E 's/rustc 1\.([0-9]+).*/\1/')
if [ "$rust_minor" -lt 85 ]; then
  echo "setup.sh: mahimahi-link needs Rust >= 1.85, found $(rustc --version); install a newer toolchain (https://rustup.rs) and rerun" >&2
  exit 1
fi

echo "==> building mahimahi-link (release)"
(cd mahimahi-link && cargo build --release --quiet)

echo "==> Python environment (.venv)"
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
if ! cmp -s requirements.txt .venv/.requirements.installed 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
  cp requirements.txt .venv/.requirements.installed
fi

if [ "${1:-}" = "--no-demo" ]; then exit 0; fi
echo "==> first run: TCP through an emulated 48 Mbit/s link (configs/traces/const-48mbps)"
iperf3 -s -1 -p 5299 >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 0.3
mahimahi-link/target/release/mahimahi-link configs/traces/const-48mbps configs/traces/const-48mbps \
  -- sh -c 'ping -c 3 -q $MAHIMAHI_BASE | tail -1; iperf3 -c $MAHIMAHI_BASE -p 5299 -t 3 -f m | grep -E "sender|receiver"'
echo "==> done: see README.md for what to run next"
