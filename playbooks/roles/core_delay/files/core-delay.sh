#!/bin/sh
# core-delay.sh DEVICE present|absent [NETEM ARGS...]
# The one-way core delay on DEVICE's egress (root netem) and ingress (redirected
# through an ifb device with the same netem), so a packet waits once each way.
# One script, one Ansible task: under TCG each task of a role costs seconds.
# Prints "changed" when it changed anything; exit 3 when the kernel refuses netem.
set -u
dev=$1 state=$2
shift 2
args="$*"
ifb="ifb-$dev"
marker="/run/continuum/netem-$dev"
netem_on() { tc qdisc show dev "$1" root 2>/dev/null | grep -q netem; }

if [ "$state" = absent ]; then
  changed=0
  if netem_on "$dev"; then tc qdisc del dev "$dev" root && changed=1; fi
  if tc qdisc show dev "$dev" ingress 2>/dev/null | grep -q ingress; then tc qdisc del dev "$dev" ingress && changed=1; fi
  if ip link show "$ifb" >/dev/null 2>&1; then ip link del "$ifb" && changed=1; fi
  rm -f "$marker"
  [ "$changed" = 1 ] && echo changed
  exit 0
fi

if [ "$(cat "$marker" 2>/dev/null)" = "$args" ] && netem_on "$dev" && netem_on "$ifb"; then
  exit 0
fi
modprobe sch_netem 2>/dev/null
if ! err=$(tc qdisc replace dev "$dev" root netem $args 2>&1); then
  echo "$err" >&2
  exit 3
fi
ip link show "$ifb" >/dev/null 2>&1 || ip link add "$ifb" type ifb || exit 4
ip link set "$ifb" up || exit 4
tc qdisc del dev "$dev" ingress 2>/dev/null
tc qdisc add dev "$dev" ingress || exit 4
tc filter add dev "$dev" parent ffff: protocol all u32 match u32 0 0 action mirred egress redirect dev "$ifb" || exit 4
tc qdisc replace dev "$ifb" root netem $args || exit 4
mkdir -p /run/continuum && echo "$args" > "$marker"
echo changed
