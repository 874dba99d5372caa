"""The qemu provider's VMs as transient libvirt domains (`[provider]
vm_manager = "libvirt"`), for labs whose VMs libvirt manages: the same
guests, network and provisioning as when continuum starts QEMU itself.

Why transient: a domain created from XML, never defined, exists only while
it runs, so nothing of a run outlives its destroy. Each is named
continuum-RUN-NODE and carries the run id in its metadata: `continuum
destroy RUN` finds those of a crashed run by that label.

The experiment NIC: libvirt's QEMU opens its tap in this machine's network
namespace (`<interface type='ethernet'>`, managed='no'), so continuum makes
the tap here, lets the domain open it, then moves it into the node's
namespace and wires it to the node's veth as under plain QEMU (an open tap
keeps working across the move). The management NIC (QEMU's user network,
SSH forwarded to 127.0.0.1) comes through `<qemu:commandline>`: libvirt 9
forwards ports of `<interface type='user'>` only with passt. QEMU runs as
root (a static DAC label, no relabelling), as plain QEMU does here: the
shared guest image stays root's, read-only."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from continuum import naming
from continuum.errors import ProviderError

URI = "qemu:///system"
PREFIX = "continuum-"
METADATA_NS = "https://continuum.invalid/run"  # the run label's XML namespace (a name, never fetched)
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
LOGS = Path("/var/log/libvirt/qemu")


def problem() -> str | None:
    """Why libvirt cannot run the VMs here (None: its QEMU driver answers)."""
    if shutil.which("virsh") is None:
        return "virsh not found: install Debian's libvirt-daemon-system and libvirt-clients (./setup.sh --vms does)"
    p = _virsh(["version"], check=False)
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or ["no answer"])[-1]
        return (f"libvirt does not answer at {URI} ({why}): start libvirtd and virtlogd "
                "(systemctl start libvirtd, or `libvirtd -d; virtlogd -d` without systemd), or use vm_manager = \"qemu\"")
    return None


def version() -> str:
    m = re.search(r"Using library: libvirt ([0-9.]+)", _virsh(["version"], check=False).stdout)
    return m.group(1) if m else "?"


def domain_name(run_id: str, node: str) -> str:
    return f"{PREFIX}{run_id}-{node}"


def tap_name(run_id: str, index: int) -> str:
    """The tap's name while it is in this machine's namespace (15 characters at most)."""
    return f"ctv{run_id}{index}"


def cpu_element(model: str) -> ET.Element:
    """QEMU's -cpu as libvirt's <cpu>: host-passthrough, maximum, or a named model."""
    if model == "host":
        return ET.Element("cpu", mode="host-passthrough")
    if model == "max":
        return ET.Element("cpu", mode="maximum", check="none")
    cpu = ET.Element("cpu", mode="custom", match="exact", check="none")
    ET.SubElement(cpu, "model", fallback="forbid").text = model
    return cpu


def domain_xml(name: str, run_id: str, node: str, accel: str, cpu_model: str, vcpus: int, memory_mib: int,
               kernel: Path, initrd: Path, cmdline: str, overlay: Path, console: Path, tap: str, mac: str,
               ssh_port: int) -> str:
    """A transient domain: the plain QEMU command line's guest, its NICs as above."""
    ET.register_namespace("qemu", QEMU_NS)
    ET.register_namespace("continuum", METADATA_NS)
    dom = ET.Element("domain", type="kvm" if accel == "kvm" else "qemu")
    ET.SubElement(dom, "name").text = name
    meta = ET.SubElement(dom, "metadata")
    ET.SubElement(meta, f"{{{METADATA_NS}}}run", id=run_id, node=node)
    ET.SubElement(dom, "memory", unit="MiB").text = str(memory_mib)
    ET.SubElement(dom, "vcpu").text = str(vcpus)
    os_ = ET.SubElement(dom, "os")
    ET.SubElement(os_, "type", arch="x86_64", machine="pc").text = "hvm"
    ET.SubElement(os_, "kernel").text = str(kernel)
    ET.SubElement(os_, "initrd").text = str(initrd)
    ET.SubElement(os_, "cmdline").text = cmdline
    features = ET.SubElement(dom, "features")  # as plain QEMU's machine has them: without ACPI the guest
    ET.SubElement(features, "acpi")            # finds no HPET or ACPI PM timer and counts time in jiffies
    ET.SubElement(features, "apic")            # (4-ms steps: a run's latencies came out in multiples of 4 ms)
    dom.append(cpu_element(cpu_model))
    for event in ("on_poweroff", "on_reboot", "on_crash"):  # -no-reboot: whatever ends the guest ends the domain
        ET.SubElement(dom, event).text = "destroy"
    dev = ET.SubElement(dom, "devices")
    ET.SubElement(dev, "emulator").text = shutil.which("qemu-system-x86_64") or "/usr/bin/qemu-system-x86_64"
    disk = ET.SubElement(dev, "disk", type="file", device="disk")
    ET.SubElement(disk, "driver", name="qemu", type="qcow2")
    ET.SubElement(disk, "source", file=str(overlay))
    ET.SubElement(disk, "target", dev="vda", bus="virtio")
    nic = ET.SubElement(dev, "interface", type="ethernet")
    ET.SubElement(nic, "mac", address=mac)
    ET.SubElement(nic, "target", dev=tap, managed="no")
    ET.SubElement(nic, "model", type="virtio")
    serial = ET.SubElement(dev, "serial", type="file")
    ET.SubElement(serial, "source", path=str(console))
    ET.SubElement(serial, "target", port="0")
    ET.SubElement(dev, "controller", type="usb", model="none")
    ET.SubElement(dev, "memballoon", model="none")
    label = ET.SubElement(dom, "seclabel", type="static", model="dac", relabel="no")
    ET.SubElement(label, "label").text = "+0:+0"
    cmd = ET.SubElement(dom, f"{{{QEMU_NS}}}commandline")
    for arg in ("-netdev", f"user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:{ssh_port}-:22",
                "-device", "virtio-net-pci,netdev=mgmt,bus=pci.0,addr=0x1f"):  # a slot libvirt leaves free
        ET.SubElement(cmd, f"{{{QEMU_NS}}}arg", value=arg)
    ET.indent(dom)
    return ET.tostring(dom, encoding="unicode") + "\n"


def create(xml_file: Path) -> None:
    p = _virsh(["create", str(xml_file)], check=False, timeout=300)
    if p.returncode != 0:
        raise ProviderError(f"libvirt did not start the domain of {xml_file}: {p.stderr.strip()[-1500:]}")


class Domain:
    """A running domain, as the provider watches a QEMU process: poll() is None while it runs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and _virsh(["domstate", self.name], check=False).stdout.strip() != "running":
            self.returncode = 1
        return self.returncode

    def stop(self) -> None:
        """The undo of a VM: destroy ends a transient domain (its overlay is thrown away with the run's folder)."""
        destroy(self.name)
        self.returncode = 1


def destroy(name: str) -> bool:
    """Whether a domain of that name was running and is gone now."""
    p = _virsh(["destroy", name], check=False, timeout=60)
    return p.returncode == 0


def domains(run_id: str | None) -> list[str]:
    """The running domains of a run (of every continuum run: None), by their names' label."""
    if shutil.which("virsh") is None:
        return []
    p = _virsh(["list", "--name"], check=False)
    out = []
    for name in p.stdout.split():
        m = re.match(rf"^{PREFIX}([^-]+)-", name)
        if m and naming.RUN_ID.match(m.group(1)) and run_id in (None, m.group(1)):
            out.append(name)
    return out


def taps(run_id: str | None) -> list[str]:
    """Taps of a run still in this machine's namespace (a crash between making one and moving it)."""
    p = subprocess.run(["ip", "-o", "link", "show", "type", "tun"], capture_output=True, text=True)
    names = [line.split(":")[1].strip().split("@")[0] for line in p.stdout.splitlines() if line.count(":") >= 2]
    return [n for n in names if n.startswith("ctv") and (run_id is None or n.startswith(f"ctv{run_id}"))]


def remove_tap(name: str) -> None:
    with contextlib.suppress(OSError):
        subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=30)


def _virsh(args: list[str], check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    p = subprocess.run(["virsh", "-q", "-c", URI, *args], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise ProviderError(f"virsh {' '.join(args)}: {p.stderr.strip()[-800:]}")
    return p
