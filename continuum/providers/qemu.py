"""The qemu provider: each workload node (endpoint, edge, cloud) is a QEMU
virtual machine with its own Debian kernel; the ran and core namespaces,
and with them mahimahi-link, stay on this machine.

The network plan is the netns provider's: every node still has its
namespace holding its veth end, and the VM's experiment NIC is a tap in that
namespace, spliced to the veth by two tc mirred redirects (a wire: frames
pass both ways untouched). So an endpoint VM's traffic crosses mahimahi-link
on the host exactly once per direction. The guest has the node's address and
MAC; continuum configures it over SSH through a second NIC (QEMU's user
network, SSH forwarded to 127.0.0.1, nothing else reachable). The core delay
is tc netem inside the edge and cloud guests, on their egress and, through
ifb, their ingress (Debian's kernel has netem; this machine's may not),
applied by playbooks/roles/core_delay while provisioning them.

Why plain QEMU by default and not libvirt: a VM of a run lives exactly as long as its
QEMU process, which continuum starts and stops like any node process, with
its overlay disk in the run's folder under /var/lib/continuum/qemu; there is
no daemon whose objects could outlive a crash and no bridge on the host.
Labs that manage VMs with libvirt get the same guests as transient domains
([provider] vm_manager = "libvirt", continuum/providers/libvirt.py).
Accelerator: KVM when a bounded probe boots a kernel with it (nested KVM can
hang instead of failing), else TCG (software emulation, slow)."""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from continuum import commands, naming, playbooks, vmimage
from continuum.engines import containers
from continuum.errors import ProviderError
from continuum.network.plan import NODE_IF, Plan, PlanNode
from continuum.providers import libvirt
from continuum.providers.base import Deployment, Provider, register
from continuum.providers.remote import clock_offset, remote_cgroups, remote_problems, share_folder
from continuum.network.configure import configure
from continuum.network.namespaces import delete_namespace
from continuum.remote import SshHost
from continuum.runtime import Node

if TYPE_CHECKING:
    from continuum.config import ExperimentSpec

STATE = Path("/var/lib/continuum/qemu")  # <run id>/: overlays, pid files, consoles, the run's SSH key
VMLAUNCH = Path(__file__).resolve().parents[1] / "nodeside" / "vmlaunch.py"
TAP = "tap0"
OS_MEMORY = 384 << 20  # the guest's own kernel and services, on top of the node's memory
DOCKER_MEMORY = 256 << 20  # and dockerd with containerd, in a guest that runs a side in a container
BOOT_TIMEOUT_S = 900.0
_probed: dict[str, str] = {}
VERDICT = Path("/run/continuum/qemu-accelerator.json")  # /run: gone at the next boot, like the verdict's validity


def accelerator(image: vmimage.Image, say: Callable[[str], None], timeout_s: float = 8.0) -> str:
    """kvm if a kernel boots with it within the probe's time, else tcg (the reason said).
    With KVM a kernel reaches its init in 1-2 s; 8 s leaves room for a busy host.
    The verdict is kept for the rest of the host's boot (VERDICT, keyed by the kernel's
    boot id): where nested KVM hangs, every run would otherwise wait out the probe."""
    if "accel" in _probed:
        return _probed["accel"]
    kept = _kept_verdict()
    if kept is not None:
        _probed["accel"] = kept["accel"]
        say(f"accelerator: {kept['accel'].upper()} (probed at {kept['at']} in this boot of the host: {kept['why']})")
        return kept["accel"]
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        _probed["accel"] = "tcg"
        say("accelerator: TCG (no usable /dev/kvm; software emulation, floating-point code ~100x slower)")
        return "tcg"
    argv = ["qemu-system-x86_64", "-accel", "kvm", "-m", "256", "-kernel", str(image.kernel), "-initrd", str(image.initrd),
            "-append", "console=ttyS0 panic=-1 rdinit=/bin/false", "-no-reboot", "-nographic", "-nodefaults",
            "-serial", "stdio", "-display", "none"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    seen = b""
    deadline = time.monotonic() + timeout_s
    assert p.stdout is not None
    os.set_blocking(p.stdout.fileno(), False)
    while time.monotonic() < deadline and p.poll() is None and b"Run /bin/false" not in seen and b"Kernel panic" not in seen:
        chunk = p.stdout.read() or b""
        seen += chunk
        time.sleep(0.1)
    booted = b"Linux version" in seen and (b"Run /bin/false" in seen or b"Kernel panic" in seen)
    if p.poll() is None:
        p.kill()
    p.wait()
    _probed["accel"] = "kvm" if booted else "tcg"
    why = ("a KVM guest's kernel booted" if booted else f"a KVM guest's kernel did not boot within {timeout_s:.0f} s: "
           "nested KVM here hangs; TCG is software emulation, several times slower, floating-point code "
           "~100x (docs/experiment-file.md, vm_cpu)")
    say("accelerator: KVM" if booted else f"accelerator: TCG ({why})")
    _keep_verdict(_probed["accel"], why)
    return _probed["accel"]


def _boot_key() -> str:
    """This boot of the host, and whether /dev/kvm is usable (a kvm module loaded later changes it)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""
    return f"{boot} kvm-device={int(os.access('/dev/kvm', os.R_OK | os.W_OK))}"


def _kept_verdict() -> dict | None:
    try:
        doc = json.loads(VERDICT.read_text())
    except (OSError, ValueError):
        return None
    return doc if doc.get("key") == _boot_key() != "" and doc.get("accel") in ("kvm", "tcg") else None


def _keep_verdict(accel: str, why: str) -> None:
    key = _boot_key()
    if not key:
        return
    with contextlib.suppress(OSError):
        VERDICT.parent.mkdir(parents=True, exist_ok=True)
        tmp = VERDICT.with_suffix(f".{os.getpid()}")
        tmp.write_text(json.dumps({"key": key, "accel": accel, "why": why, "at": time.strftime("%H:%M:%S")}) + "\n")
        tmp.replace(VERDICT)


STEP = "import sys, time\ntime.clock_settime(time.CLOCK_REALTIME, time.clock_gettime(time.CLOCK_REALTIME) - float(sys.argv[1]) / 1e3)\n"


def _align_clocks(hosts: dict[str, SshHost], say: Callable[[str], None]) -> dict:
    """Step each guest's clock onto this machine's: a guest boots on its
    emulated real-time clock (whole seconds off, and under TCG it drifts), and
    uplink and downlink times are taken on two guests' clocks. Measured again
    after the step; both are recorded."""
    out = {}
    for name, h in hosts.items():
        before = clock_offset(h)
        h.run(["python3", "-c", STEP, str(before["offset_ms"])])
        out[name] = {**clock_offset(h), "before_step_ms": before["offset_ms"]}
    say("guest clocks stepped onto this machine's: " + ", ".join(
        f"{n} {c['before_step_ms']:+.1f} -> {c['offset_ms']:+.2f} ms (±{c['error_bound_ms']:.2f})" for n, c in out.items()))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sshd_greets(port: int, timeout_s: float = 2.0) -> bool:
    """Whether the guest's sshd sends its banner through QEMU's port forward. The
    forward accepts a connection before the guest can answer it, so an ssh attempt
    then waits out its whole ConnectTimeout (10 s): polled that way, a boot's
    measured time came in 11-second steps."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            return s.recv(4) == b"SSH-"
    except OSError:
        return False


def _mac(node: Node, dev: str) -> str:
    return json.loads(commands.run(node.argv(["ip", "-j", "link", "show", "dev", dev])).stdout)[0]["address"]


@register
class QemuProvider(Provider):
    kind = "qemu"
    # the daemons run on the offload node's machine (runtime.start_node_daemon), its child cgroups there
    node_verbs = frozenset({"node_daemon", "child_cgroups"})

    def check(self, spec: ExperimentSpec) -> list[str]:
        problems = []
        if os.geteuid() != 0:
            problems.append("the qemu provider needs root (namespaces, taps)")
        if (why := vmimage.problem()) is not None:
            problems.append(why)
        if (why := playbooks.problem()) is not None:
            problems.append(why)
        if not Path("/dev/net/tun").exists():
            problems.append("/dev/net/tun is missing: the VMs' NICs are taps (modprobe tun)")
        if spec.vm_manager == "libvirt" and (why := libvirt.problem()) is not None:
            problems.append(f"provider.vm_manager = \"libvirt\": {why}")
        unsupported = []
        if spec.core.mechanism == "mahimahi-link":
            unsupported.append("core.mechanism = \"mahimahi-link\" (VMs get the core delay by netem in the guests: \"auto\")")
        problems += remote_problems(spec, "qemu", unsupported)
        return problems

    def deploy(self, plan: Plan, run_id: str, undo: contextlib.ExitStack, say: Callable[[str], None]) -> Deployment:
        dep = Deployment(run_id)
        # the apps' own packages in it (no guest reaches a mirror), and Docker where a side runs in a container
        image = vmimage.build(say, plan.debian_packages + (tuple(containers.docker_packages()) if plan.docker_nodes else ()))
        accel = accelerator(image, say)
        state = STATE / run_id
        state.mkdir(parents=True, exist_ok=True)
        undo.callback(shutil.rmtree, state, True)
        key = state / "id_ed25519"
        commands.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"continuum-{run_id}", "-f", str(key)])
        vms = [n for n in plan.nodes if n.limits is not None]
        _namespaces(plan, dep, run_id, undo, say)
        how = f"transient libvirt {libvirt.version()} domains" if plan.vm_manager == "libvirt" else "QEMU"
        say(f"starting {len(vms)} VM(s) ({how}, {accel.upper()}, CPU model {cpu_model(plan.vm_cpu, accel)}): " + ", ".join(
            f"{n.name} {math.ceil(n.limits.cpus)} vCPU, {guest_memory(n, plan) >> 20} MiB" for n in vms if n.limits))
        started = {n.name: _start_vm(n, i, dep.nodes[n.name], image, accel, plan, state, key, run_id, undo)
                   for i, n in enumerate(vms)}
        boot = {name: _wait_booted(name, proc, host, t0, state) for name, (proc, host, t0) in started.items()}
        say("booted: " + ", ".join(f"{n} in {s:.0f} s" for n, s in boot.items()))
        dep.facts.update({"accelerator": accel, "cpu_model": cpu_model(plan.vm_cpu, accel), "boot_s": boot, "image": image.digest,
                          "vm_manager": plan.vm_manager if plan.vm_manager == "qemu" else f"libvirt {libvirt.version()}"})

        hosts = {name: h for name, (_, h, _) in started.items()}
        dep.facts["provisioning"] = _provision(plan, vms, hosts, image, state, say)
        for n in vms:  # under TCG a model loads tens of times slower (W1's TensorFlow: minutes)
            dep.nodes[n.name] = Node(n.name, "", n.address, host=hosts[n.name], load_timeout_s=1800.0 if accel == "tcg" else 300.0)
        configure(plan, dep, core_delay=False)  # the core delay: playbooks/roles/core_delay, while provisioning
        dep.facts["base_rtt_ms"] = self._stack_rtt(plan, dep)
        say("the guests' own round trip (each stack, emulated): " + ", ".join(f"{k} {v:.2f} ms" for k, v in dep.facts["base_rtt_ms"].items())
            + " (the verification expects the core delay plus this)")
        dep.facts["delay_mechanism"] = "netem in the guests"
        dep.facts["netem_available"] = True
        dep.facts["clock_offsets"] = _align_clocks(hosts, say)

        remote_cgroups(plan, dep, undo)
        return dep

    @staticmethod
    def _stack_rtt(plan: Plan, dep: Deployment) -> dict[str, float]:
        """Per edge/cloud VM: what an endpoint VM's round trip to it takes
        beyond the core delay. Measured from the core namespace to the guest
        (its RTT minus the netem delay both ways): one guest's stack; an
        endpoint's path crosses two such stacks."""
        out = {}
        for d in plan.core_delays:
            for name in {ns for ns, _ in d.netem_devices if ns != "core"}:
                p = dep.nodes["core"].run(["ping", "-n", "-c", "20", "-i", "0.05", "-W", "5", dep.nodes[name].address or ""],
                                          check=False, timeout=60)
                rtts = sorted(float(x) for x in re.findall(r"time=([0-9.]+) ms", p.stdout))
                if not rtts:
                    raise ProviderError(f"the core cannot reach {name}: {p.stdout.strip()[-200:]}")
                one = max(0.0, rtts[(len(rtts) - 1) // 4] - 2 * d.one_way_ms)
                out[name] = round(2 * one, 3)
        return out

    def share_run_folder(self, plan: Plan, dep: Deployment, run_dir: Path, undo: contextlib.ExitStack,
                         say: Callable[[str], None]) -> None:
        share_folder(plan, dep, run_dir, undo, say)
        state = STATE / dep.run_id
        for f in [state / "provision.log", *state.glob("*.console"), *state.glob("*.qemu.log")]:
            if f.exists():  # copied again at teardown: the consoles grow
                undo.callback(_copy, f, run_dir / "logs" / f"vm-{f.name}")

    def leftovers(self, run_id: str | None) -> list[str]:
        out = [f"libvirt domain {name}" for name in libvirt.domains(run_id)]
        out += [f"tap {tap} (of a libvirt domain, never moved into its namespace)" for tap in libvirt.taps(run_id)]
        for d in _runs(run_id):
            for pidfile in d.glob("*.pid"):
                if _alive(pidfile):
                    out.append(f"VM {pidfile.stem} of run {d.name} (QEMU pid {pidfile.read_text().strip()})")
            out.append(f"VM folder {d} (overlays, consoles)")
        return out

    def destroy(self, run_id: str | None, say: Callable[[str], None]) -> int:
        removed = 0
        for name in libvirt.domains(run_id):
            if libvirt.destroy(name):
                say(f"destroyed libvirt domain {name}")
                removed += 1
        for tap in libvirt.taps(run_id):
            libvirt.remove_tap(tap)
            removed += 1
        for d in _runs(run_id):
            for pidfile in d.glob("*.pid"):
                if _alive(pidfile):
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(pidfile.read_text().strip()), signal.SIGKILL)
                    say(f"stopped VM {pidfile.stem} of run {d.name}")
                    removed += 1
            shutil.rmtree(d, ignore_errors=True)
            removed += 1
        return removed


def _runs(run_id: str | None) -> list[Path]:
    if not STATE.is_dir():
        return []
    return [d for d in sorted(STATE.iterdir()) if d.is_dir() and naming.RUN_ID.match(d.name) and run_id in (None, d.name)]


def _alive(pidfile: Path) -> bool:
    try:
        pid = int(pidfile.read_text().strip())
        return b"qemu" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return False


def _stop_vm(proc: subprocess.Popen) -> None:
    """The undo of a VM: QEMU ends on SIGTERM (the guest is powered off; its overlay is thrown away)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _copy(src: Path, dst: Path) -> None:
    with contextlib.suppress(OSError):
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dst)


def _namespaces(plan: Plan, dep: Deployment, run_id: str, undo: contextlib.ExitStack, say: Callable[[str], None]) -> None:
    """The plan's namespaces (a VM's holds its tap, wired to the node's veth) and veths."""
    say(f"creating {len(plan.nodes)} namespaces (the VMs' taps, the link, the core)")
    for n in plan.nodes:
        ns = naming.netns(run_id, n.name)
        commands.run(["ip", "netns", "add", ns])
        undo.callback(delete_namespace, ns)
        commands.run(commands.in_netns(ns, ["ip", "link", "set", "lo", "up"]))
        dep.nodes[n.name] = Node(n.name, ns, n.address)
    for v in plan.veths:
        a, b = dep.nodes[v.a.namespace].netns, dep.nodes[v.b.namespace].netns
        commands.run(["ip", "link", "add", v.a.name, "netns", a, "type", "veth", "peer", "name", v.b.name, "netns", b])


def cpu_model(asked: str, accel: str) -> str:
    """[provider] vm_cpu as QEMU's -cpu. Under TCG "auto" is "max": TensorFlow's wheels are
    built for AVX, and on the plain qemu64 model (SSE2) its server died of SIGILL at import.
    qemu64 runs a TCG guest ~20% faster, for code that needs no AVX."""
    if asked == "auto":
        return "host" if accel == "kvm" else "max"
    return asked


def guest_memory(n: PlanNode, plan: Plan) -> int:
    """The VM's memory: the node's, and what the guest's own services take beside it."""
    assert n.limits is not None
    return n.limits.memory_bytes + OS_MEMORY + (DOCKER_MEMORY if n.name in plan.docker_nodes else 0)


def _start_vm(n: PlanNode, index: int, shell: Node, image: vmimage.Image, accel: str, plan: Plan, state: Path, key: Path,
              run_id: str, undo: contextlib.ExitStack) -> tuple[subprocess.Popen | libvirt.Domain, SshHost, float]:
    """One node's VM, its experiment NIC a tap wired to the node's veth in `shell` (its namespace),
    its management NIC QEMU's user network with SSH forwarded; returns QEMU (or its libvirt domain),
    the guest's SSH and the start time."""
    pub = base64.b64encode((state / "id_ed25519.pub").read_bytes().strip()).decode()
    assert n.limits is not None
    mac = _mac(shell, NODE_IF)  # the guest answers for the node's address with the veth's MAC
    overlay = state / f"{n.name}.qcow2"
    commands.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(image.rootfs), "-F", "raw", str(overlay)])
    port = _free_port()
    cpu, vcpus, memory = cpu_model(plan.vm_cpu, accel), max(1, math.ceil(n.limits.cpus)), guest_memory(n, plan) >> 20
    cmdline = f"root=/dev/vda rw console=ttyS0 net.ifnames=0 ipv6.disable=1 panic=-1 quiet continuum.key={pub}"
    vm: subprocess.Popen | libvirt.Domain
    if plan.vm_manager == "libvirt":
        tap = libvirt.tap_name(run_id, index)  # made here, where libvirt's QEMU opens it, then moved to the node
        commands.run(["ip", "tuntap", "add", tap, "mode", "tap"])
        undo.callback(libvirt.remove_tap, tap)  # (gone with the namespace once moved)
        name = libvirt.domain_name(run_id, n.name)
        xml = state / f"{n.name}.xml"
        xml.write_text(libvirt.domain_xml(name, run_id, n.name, accel, cpu, vcpus, memory, image.kernel, image.initrd, cmdline,
                                          overlay, state / f"{n.name}.console", tap, mac, port))
        with contextlib.suppress(OSError):  # QEMU's own log, where libvirt writes it
            (state / f"{n.name}.qemu.log").symlink_to(libvirt.LOGS / f"{name}.log")
        libvirt.create(xml)
        vm = libvirt.Domain(name)
        undo.callback(vm.stop)
        commands.run(["ip", "link", "set", tap, "netns", shell.netns])
        commands.run(shell.argv(["ip", "link", "set", tap, "name", TAP]))
        _wire(shell)
    else:
        commands.run(shell.argv(["ip", "tuntap", "add", TAP, "mode", "tap"]))
        _wire(shell)
        qemu = ["qemu-system-x86_64", "-name", f"continuum-{run_id}-{n.name}", "-accel", accel,
                "-cpu", cpu, "-smp", str(vcpus), "-m", str(memory), "-nodefaults", "-display", "none", "-no-reboot",
                "-kernel", str(image.kernel), "-initrd", str(image.initrd), "-append", cmdline,
                "-drive", f"file={overlay},if=virtio,format=qcow2",
                "-netdev", "tap,id=exp,fd={fd},vhost=off", "-device", f"virtio-net-pci,netdev=exp,mac={mac}",
                "-netdev", f"user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22",
                "-device", "virtio-net-pci,netdev=mgmt",
                "-serial", f"file:{state / (n.name + '.console')}", "-pidfile", str(state / f"{n.name}.pid")]
        vm = subprocess.Popen([sys.executable, "-I", "-S", str(VMLAUNCH), shell.netns, TAP, "--", *qemu],
                              stdout=open(state / f"{n.name}.qemu.log", "ab"), stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, start_new_session=True)
        undo.callback(_stop_vm, vm)
    host = SshHost(n.name, "127.0.0.1", "root", port, str(key), state / "known_hosts")
    undo.callback(host.close)
    return vm, host, time.monotonic()


def _wire(shell: Node) -> None:
    """The tap and the node's veth as one wire: two tc mirred redirects (frames pass both ways untouched)."""
    for dev in (NODE_IF, TAP):
        commands.run(shell.argv(["ip", "link", "set", dev, "up"]))
        commands.run(shell.argv(["tc", "qdisc", "add", "dev", dev, "ingress"]))
    for src, dst in ((NODE_IF, TAP), (TAP, NODE_IF)):
        commands.run(shell.argv(["tc", "filter", "add", "dev", src, "parent", "ffff:", "protocol", "all", "u32",
                                 "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", dst]))


def _wait_booted(name: str, proc: subprocess.Popen | libvirt.Domain, host: SshHost, t0: float, state: Path) -> float:
    """Seconds until the guest answered SSH; its QEMU log or console in the error when it did not."""
    deadline = t0 + BOOT_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise ProviderError(f"QEMU of {name} exited ({proc.returncode}): "
                                f"{(state / (name + '.qemu.log')).read_text(errors='replace')[-800:]}")
        if _sshd_greets(host.port) and subprocess.run(host.ssh_argv("true"), capture_output=True,
                                                     timeout=60).returncode == 0:
            return round(time.monotonic() - t0, 1)
        if time.monotonic() > deadline:
            raise ProviderError(f"{name} did not answer SSH within {BOOT_TIMEOUT_S:.0f} s; its console: "
                                f"{(state / (name + '.console')).read_text(errors='replace')[-800:]}")
        time.sleep(0.5)


def _provision(plan: Plan, vms: list[PlanNode], hosts: dict[str, SshHost], image: vmimage.Image, state: Path,
               say: Callable[[str], None]) -> dict:
    """playbooks/site.yml on the guests; the facts for the manifest."""
    say(f"provisioning {len(hosts)} VM(s) with playbooks/site.yml")
    groups = {r: [n.name for n in vms if n.role == r or (r == "endpoint" and n.role == "bulk")]
              for r in ("endpoint", "edge", "cloud")}
    groups["edge_manager"] = [plan.offload_target] if plan.edge_daemon else []  # roles/edge_manager: its checks
    # chrony: a guest reaches no time server; its clock is stepped onto this machine's below
    # packages_present: the guest image holds these already; the roles' apt tasks (seconds each under TCG) skip them
    # ansible_service_mgr: the guest image boots systemd; stated, it spares the play its fact gathering (10 s);
    # services_disabled: the image's, which the mosquitto role would otherwise stop and disable again (7-16 s)
    # sysctl_present: the image has the base role's kernel settings (its loop took 13 s under TCG)
    host_vars: dict[str, dict] = {name: {"base_time_sync": False, "packages_present": list(image.packages),
                                         "sysctl_present": vmimage.sysctl(),
                                         "services_disabled": vmimage.DISABLED_SERVICES,
                                         "ansible_service_mgr": "systemd"} for name in hosts}
    if plan.requirements:
        host_vars[plan.offload_target]["workload_requirements"] = list(plan.requirements)
    if plan.debian_packages:
        host_vars[plan.offload_target]["workload_app_packages"] = list(plan.debian_packages)
    # each tier's one-way core delay inside its guests (roles/core_delay: netem on eth0's egress, and on its
    # ingress through an ifb device, so both directions wait once); each run verifies the RTT it makes
    groups["netem"] = []
    for d in plan.core_delays:
        for name in sorted({ns for ns, _ in d.netem_devices if ns in hosts}):
            groups["netem"].append(name)
            host_vars[name].update({"core_delay_ms": d.one_way_ms, "core_delay_jitter_ms": d.jitter_ms, "core_delay_device": NODE_IF})
    # roles/workload_images: Docker, and the run's images from this machine's build, where a side runs in a container
    groups["docker_containers"] = [name for name in plan.docker_nodes if name in hosts]
    if groups["docker_containers"]:
        images = [{"name": i, "id": containers.image_id(i)} for i in plan.images]
        say(f"loading {len(images)} image(s) into the Docker of {', '.join(groups['docker_containers'])}: "
            + ", ".join(i["name"] for i in images))
        for name in groups["docker_containers"]:
            host_vars[name]["workload_images"] = images
    playbooks.ensure_wheels(list(plan.requirements), say)
    recap = playbooks.run("site.yml", playbooks.inventory(hosts, groups, host_vars), state / "provision.log", say)
    say(f"provisioned in {recap.seconds:.0f} s")
    return {"playbook": "playbooks/site.yml", "seconds": recap.seconds, "changed": recap.changed}
