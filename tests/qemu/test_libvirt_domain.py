"""The transient libvirt domains of `vm_manager = "libvirt"` (continuum/providers/libvirt.py),
without a daemon: the XML continuum writes is valid by libvirt's own schema (virt-xml-validate),
carries the run's label, and asks for the guest plain QEMU runs (its live run:
tests/qemu/test_qemu_live.py, opt-in). A file that asks for libvirt on another provider is refused by key."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from continuum import experiment
from continuum.errors import ConfigError
from continuum.providers import libvirt

HERE = Path(__file__).resolve().parents[1] / "orchestrator" / "configs"


def _xml(tmp_path: Path, accel: str = "tcg", cpu: str = "qemu64") -> str:
    return libvirt.domain_xml(libvirt.domain_name("0a1b2c3d", "edge0"), "0a1b2c3d", "edge0", accel, cpu, 2, 640,
                              tmp_path / "vmlinuz", tmp_path / "initrd.img", "root=/dev/vda rw console=ttyS0 continuum.key=QUJD",
                              tmp_path / "edge0.qcow2", tmp_path / "edge0.console", libvirt.tap_name("0a1b2c3d", 1),
                              "0a:0e:a2:af:00:2a", 40022)


@pytest.mark.parametrize("accel,cpu", [("tcg", "qemu64"), ("tcg", "max"), ("kvm", "host")])
def test_the_domain_is_valid_by_libvirts_schema(tmp_path, accel, cpu):
    if shutil.which("virt-xml-validate") is None or shutil.which("xmllint") is None:
        pytest.skip("virt-xml-validate needs libvirt-clients and libxml2-utils (./setup.sh --vms installs them)")
    f = tmp_path / "edge0.xml"
    f.write_text(_xml(tmp_path, accel, cpu))
    p = subprocess.run(["virt-xml-validate", str(f), "domain"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "validates" in p.stdout + p.stderr, p.stdout + p.stderr


def test_the_domain_is_labelled_by_its_run_and_asks_for_plain_qemus_guest(tmp_path):
    dom = ET.fromstring(_xml(tmp_path))
    assert dom.get("type") == "qemu" and dom.findtext("name") == "continuum-0a1b2c3d-edge0"
    run = dom.find(f"metadata/{{{libvirt.METADATA_NS}}}run")
    assert run is not None and run.get("id") == "0a1b2c3d" and run.get("node") == "edge0"
    assert dom.findtext("vcpu") == "2" and dom.find("memory").text == "640"  # type: ignore[union-attr]
    assert dom.find("cpu/model").text == "qemu64"  # type: ignore[union-attr]
    assert dom.find("features/acpi") is not None  # without ACPI the guest's clock ticked in 4-ms jiffies
    assert [dom.findtext(e) for e in ("on_poweroff", "on_reboot", "on_crash")] == ["destroy"] * 3
    nic = dom.find("devices/interface")
    assert nic is not None and nic.get("type") == "ethernet"
    target = nic.find("target")
    assert target is not None and target.get("dev") == "ctv0a1b2c3d1" and target.get("managed") == "no"
    assert len(target.get("dev", "")) <= 15  # a Linux interface name
    args = [a.get("value") for a in dom.iter(f"{{{libvirt.QEMU_NS}}}arg")]
    assert "user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:40022-:22" in args
    assert dom.find("seclabel/label").text == "+0:+0"  # type: ignore[union-attr]
    assert ET.fromstring(_xml(tmp_path, "kvm", "host")).find("cpu").get("mode") == "host-passthrough"  # type: ignore[union-attr]


def test_vm_manager_belongs_to_the_qemu_provider(tmp_path):
    f = tmp_path / "e.toml"
    f.write_text('[provider]\nkind = "netns"\nvm_manager = "libvirt"\n' + (HERE / "good-minimal.toml").read_text())
    with pytest.raises(ConfigError) as e:
        experiment.load(f, materialize=False)
    assert "provider.vm_manager" in str(e.value) and 'kind = "qemu"' in str(e.value), str(e.value)
    f.write_text('[provider]\nkind = "qemu"\nvm_manager = "virtualbox"\n' + (HERE / "good-minimal.toml").read_text())
    with pytest.raises(ConfigError) as e:
        experiment.load(f, materialize=False)
    assert "provider.vm_manager" in str(e.value) and "libvirt" in str(e.value), str(e.value)
