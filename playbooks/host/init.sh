#!/bin/sh
# Entry point of the continuum/host image. Docker mounts the cgroup
# hierarchies and /proc/sys read-only in a container that is not privileged,
# but a machine of the hosts provider makes a cgroup per node and sets its
# namespaces' sysctls (forwarding): mount them again, writable, inside the
# container's own cgroup namespace (docker run --cgroupns=private, with
# CAP_SYS_ADMIN), then serve SSH.
set -eu
mount -o remount,rw,bind /proc/sys
if awk '$2 == "/sys/fs/cgroup" && $3 == "cgroup2" { found = 1 } END { exit !found }' /proc/mounts; then
  umount /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup
else
  awk '$3 == "cgroup" && $2 ~ /^\/sys\/fs\/cgroup\// { print $2, $4 }' /proc/mounts | while read -r mnt opts; do
    controllers=$(echo "$opts" | tr ',' '\n' | grep -E '^(cpu|cpuacct|memory|pids|cpuset|blkio|devices|freezer|net_cls|net_prio|perf_event|hugetlb|rdma|misc|name=.*)$' | paste -sd, -)
    umount "$mnt" && mount -t cgroup -o "$controllers" cgroup "$mnt"
  done
fi
exec /usr/sbin/sshd -D -e
