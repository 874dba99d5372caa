"""The Debian guest of the qemu provider, built locally with mmdebstrap and
cached by the hash of what goes into it (suite, packages, the boot files
below): a root file system image (raw ext4, no partition table, shared
read-only by every VM through a qcow2 overlay), the kernel and initrd
Debian installed into it, booted directly by QEMU.

Why Debian's own kernel: it has sch_netem and ifb, so the edge and cloud
guests apply the core delay with tc netem, which this machine's kernel
cannot. Why no cloud-init: a per-run SSH key is all a guest needs, passed on
the kernel command line (continuum.key=BASE64) and installed by a small unit
before sshd starts; everything else is the playbooks' job over SSH."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from continuum import REPO, commands
from continuum.engines import containers
from continuum.errors import ProviderError

SUITE, MIRROR = containers.SUITE, containers.MIRROR
# Boot, SSH in, and what the playbooks' roles install (so provisioning works
# offline: guests have no mirror). kmod/udev: virtio modules, ifb; netem lives in the kernel package.
BOOT_PACKAGES = ["systemd-sysv", "udev", "kmod", "linux-image-amd64", "openssh-server", "iproute2", "ethtool",
                 "iputils-ping", "procps", "python3", "python3-apt", "ca-certificates"]
# Installed but not started at boot: continuum starts its own broker per run; the guest's clock is
# stepped by the provider (no NTP server is reachable). The playbooks are told (services_disabled).
DISABLED_SERVICES = ["mosquitto", "chrony"]
# A variant with Docker (container workloads) does not start it at boot either: playbooks/roles/workload_images
# sets its cgroup driver first, then starts it (a restart would cost seconds of a TCG guest's vCPU).
DOCKER_UNITS = ["docker.service", "docker.socket", "containerd.service"]
VENV = "/opt/continuum/venv"  # made at build time, where the workload role makes it
SIZE = "3G"  # the file system's size (sparse: a guest writes into its overlay)
EXTRA_SIZE = "6G"  # a variant's with apps' own packages (PyTorch: ~1.5 GB)

KEY_UNIT = """[Unit]
Description=continuum: the run's SSH key from the kernel command line
Before=ssh.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/continuum-key

[Install]
WantedBy=multi-user.target
"""
KEY_SCRIPT = """#!/bin/sh
# Install the SSH key continuum passed on the kernel command line (continuum.key=BASE64).
set -eu
for word in $(cat /proc/cmdline); do
  case "$word" in
    continuum.key=*) mkdir -p /root/.ssh && chmod 700 /root/.ssh
                     echo "${word#continuum.key=}" | base64 -d > /root/.ssh/authorized_keys
                     chmod 600 /root/.ssh/authorized_keys ;;
  esac
done
"""
# The management NIC (the second one, QEMU's user network) gets the address QEMU's
# user network gives its guest, set statically by a oneshot unit as soon as the NIC
# exists: no DHCP exchange and no systemd-networkd, whose start alone took ~7 s of the
# boot under TCG. No gateway, no DNS: only the link to QEMU's user network, so
# nothing of the experiment can leave through it (the verification step checks).
# The experiment NIC (eth0) is configured by continuum over SSH, like a namespace's.
MGMT_UNIT = """[Unit]
Description=continuum: the management NIC's address on QEMU's user network
BindsTo=sys-subsystem-net-devices-eth1.device
After=sys-subsystem-net-devices-eth1.device
Before=network.target ssh.service
Wants=network.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/sbin/ip addr replace 10.0.2.15/24 dev eth1
ExecStart=/sbin/ip link set eth1 up

[Install]
WantedBy=multi-user.target
"""
# What a guest does not need at boot. Under TCG each unit costs a second or more of the one
# vCPU, and the boot (~55 s to SSH) is a third of the qemu test: the periodic jobs, the
# console logins (the console is a log file), modules for hardware the VM has not got.
MASKED_UNITS = ["e2scrub_reap.service", "e2scrub_all.timer", "apt-daily.timer", "apt-daily-upgrade.timer",
                "dpkg-db-backup.timer", "fstrim.timer", "systemd-tmpfiles-clean.timer", "getty@tty1.service",
                "serial-getty@ttyS0.service", "getty-static.service", "systemd-binfmt.service", "systemd-pstore.service",
                "modprobe@dm_mod.service", "modprobe@efi_pstore.service", "modprobe@fuse.service", "modprobe@loop.service",
                "dev-hugepages.mount", "sys-kernel-debug.mount", "sys-kernel-tracing.mount", "sys-fs-fuse-connections.mount"]
BLACKLIST = "".join(f"blacklist {m}\n" for m in ["floppy", "pcspkr", "cfg80211", "kvm", "kvm_amd", "kvm_intel", "ccp", "ata_piix",
                                                   "ata_generic", "i2c_piix4", "psmouse", "serio_raw", "evdev"])
# The initrd needs only what mounts the root (a virtio disk, ext4): MODULES=most's 35 MB
# take seconds to unpack and probe under TCG.
INITRD_MODULES = ["virtio_pci", "virtio_blk", "ext4"]


@dataclass(frozen=True)
class Image:
    folder: Path
    rootfs: Path
    kernel: Path
    initrd: Path
    digest: str
    packages: tuple[str, ...]


def sysctl() -> dict[str, int | str]:
    """The base role's kernel settings (playbooks/roles/base: base_sysctl), baked into the image."""
    import yaml

    return dict(yaml.safe_load((REPO / "playbooks" / "roles" / "base" / "defaults" / "main.yml").read_text())["base_sysctl"])


def packages(extra: Iterable[str] = ()) -> list[str]:
    """The guest's Debian packages; `extra`: an app's own (its debian_packages), which make a variant of the image."""
    return sorted(set(BOOT_PACKAGES + containers.BASES["continuum/base"]) | set(extra))


def size(extra: Iterable[str] = ()) -> str:
    """The file system's size: PyTorch and its libraries take ~1.5 GB more."""
    return EXTRA_SIZE if set(extra) - set(packages()) else SIZE


def disabled_units(extra: Iterable[str] = ()) -> list[str]:
    """The units installed but not started at boot (Docker's only where the variant has it)."""
    return [s + ".service" for s in DISABLED_SERVICES] + (DOCKER_UNITS if "docker.io" in set(extra) else [])


def digest(extra: Iterable[str] = ()) -> str:
    h = hashlib.sha256(json.dumps([SUITE, packages(extra), KEY_UNIT, KEY_SCRIPT, MGMT_UNIT, size(extra), VENV, MASKED_UNITS, BLACKLIST,
                                   DISABLED_SERVICES, INITRD_MODULES, sysctl(), 3]
                                  + ([DOCKER_UNITS] if "docker.io" in set(extra) else [])).encode())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    return Path(os.environ.get("CONTINUUM_VM_CACHE", Path.home() / ".cache" / "continuum" / "vm"))


def cached(extra: Iterable[str] = ()) -> Image | None:
    d = cache_dir() / digest(extra)
    rootfs, kernel, initrd = d / "rootfs.raw", d / "vmlinuz", d / "initrd.img"
    if all(p.exists() for p in (rootfs, kernel, initrd, d / "done")):
        return Image(d, rootfs, kernel, initrd, digest(extra), tuple(packages(extra)))
    return None


def problem() -> str | None:
    for tool, package in (("mmdebstrap", "mmdebstrap"), ("mkfs.ext4", "e2fsprogs"), ("qemu-system-x86_64", "qemu-system-x86"),
                          ("qemu-img", "qemu-utils")):
        if shutil.which(tool) is None:
            return f"{tool} not found: install Debian's {package} (./setup.sh --vms does)"
    return None


def build(say: Callable[[str], None], extra: Iterable[str] = ()) -> Image:
    """The cached image, or a new one (a few minutes: mmdebstrap, then mkfs). With `extra`
    packages it is a variant of its own (apps whose servers need them: no guest reaches a mirror)."""
    extra = tuple(sorted(set(extra) - set(packages())))
    found = cached(extra)
    if found:
        return found
    if (why := problem()) is not None:
        raise ProviderError(why)
    d = cache_dir() / digest(extra)
    also = f", with {' '.join(extra)}" if extra else ""
    say(f"building the Debian guest image {digest(extra)} with mmdebstrap ({len(packages(extra))} packages{also}; a few minutes, once)")
    d.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="continuum-vm-") as tmp:
        root = Path(tmp) / "root"
        hooks = Path(tmp) / "hooks"
        hooks.mkdir()
        (hooks / "continuum-key.service").write_text(KEY_UNIT)
        (hooks / "continuum-key").write_text(KEY_SCRIPT)
        (hooks / "continuum-mgmt.service").write_text(MGMT_UNIT)
        (hooks / "continuum-vm.conf").write_text(BLACKLIST)
        customize = " && ".join([
            f'install -m 0755 {hooks}/continuum-key "$1/usr/local/sbin/continuum-key"',
            f'install -m 0644 {hooks}/continuum-key.service "$1/etc/systemd/system/continuum-key.service"',
            f'install -m 0644 {hooks}/continuum-mgmt.service "$1/etc/systemd/system/continuum-mgmt.service"',
            'ln -sf /etc/systemd/system/continuum-key.service "$1/etc/systemd/system/multi-user.target.wants/continuum-key.service"',
            'ln -sf /etc/systemd/system/continuum-mgmt.service "$1/etc/systemd/system/multi-user.target.wants/continuum-mgmt.service"',
            'echo continuum-vm > "$1/etc/hostname"',
            # the base role's kernel settings, as it writes them (it skips them when told the image has them)
            f'printf "%s\\n" {" ".join(f"{k}={v}" for k, v in sysctl().items())} > "$1/etc/sysctl.d/60-continuum.conf"',
            'echo "/dev/vda / ext4 defaults 0 1" > "$1/etc/fstab"',
            'chroot "$1" passwd -l root',
            # the workload role's environment, made as the role makes it (under TCG this alone takes ~40 s)
            f'chroot "$1" python3 -m venv --system-site-packages {VENV}',
            f'chroot "$1" systemctl disable {" ".join(disabled_units(extra))}',
            f'chroot "$1" systemctl mask {" ".join(MASKED_UNITS)}',
            f'install -m 0644 {hooks}/continuum-vm.conf "$1/etc/modprobe.d/continuum-vm.conf"',
            'mkdir -p "$1/etc/systemd/journald.conf.d" && printf "[Journal]\\nStorage=volatile\\n" > "$1/etc/systemd/journald.conf.d/continuum.conf"',
            'echo MODULES=list > "$1/etc/initramfs-tools/conf.d/continuum"',
            f'printf "%s\\n" {" ".join(INITRD_MODULES)} >> "$1/etc/initramfs-tools/modules"',
            'chroot "$1" update-initramfs -u -k all',
        ])
        commands.run(["mmdebstrap", "--quiet", "--variant=minbase", f"--include={','.join(packages(extra))}",
                      f"--customize-hook={customize}", SUITE, str(root), MIRROR], timeout=3600)
        kernel = sorted((root / "boot").glob("vmlinuz-*"))
        initrd = sorted((root / "boot").glob("initrd.img-*"))
        if not kernel or not initrd:
            raise ProviderError(f"the guest image has no kernel or initrd in /boot ({[p.name for p in (root / 'boot').iterdir()]})")
        shutil.copy(kernel[-1], d / "vmlinuz")
        shutil.copy(initrd[-1], d / "initrd.img")
        commands.run(["mkfs.ext4", "-q", "-F", "-L", "root", "-d", str(root), str(d / "rootfs.raw"), size(extra)], timeout=1800)
    os.chmod(d / "rootfs.raw", 0o444)  # shared by every VM's overlay: never written
    (d / "done").write_text(json.dumps({"suite": SUITE, "packages": packages(extra)}, indent=1))
    found = cached(extra)
    assert found is not None
    return found
