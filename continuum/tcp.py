"""Each node's TCP congestion control: set where the experiment file names one, recorded always.

Why: a node's TCP otherwise inherits the machine's default (CUBIC on a stock Debian, BBR on
some machines, this development machine among them), and it shapes what an upload of tens of
KB sees: BBR paces at its bandwidth estimate and, after 10 s without a lower RTT sample, drops
its window to 4 packets for 200 ms (PROBE_RTT), which once made one request in ten 80 ms slower
over srsRAN (experiments/srsran-vs-trace). A result is only reproducible with it named.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from continuum.errors import ProviderError
from continuum.runtime import Node

KEY = "net.ipv4.tcp_congestion_control"
ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def allow(cc: str, node: Node, undo: contextlib.ExitStack, what: str) -> bool:
    """A namespace may pick only the congestion controls this machine allows (reno and its default):
    another one available (cubic, where BBR is the default) is allowed for the run and the list
    restored at its end. `what` names the setting in errors. True where the list was widened."""
    if node.host is not None or not ALLOWED.exists():
        return False  # a VM or a machine of its own: its own kernel's list
    before = ALLOWED.read_text().split()
    if cc in before:
        return False
    available = AVAILABLE.read_text().split()
    if cc not in available:
        raise ProviderError(f"{what} = {cc!r}: this kernel has no {cc} (available: {', '.join(available)}; "
                            f"modprobe tcp_{cc} if it is a module)")
    ALLOWED.write_text(" ".join([*before, cc]))
    undo.callback(ALLOWED.write_text, " ".join(before))
    return True


def current(node: Node) -> str:
    return node.run(["sysctl", "-n", KEY]).stdout.strip()


def set_on(node: Node, cc: str, undo: contextlib.ExitStack, what: str) -> None:
    """`cc` for the node's new connections, the previous one back at the run's end (a machine of
    its own keeps nothing of the run; a namespace goes with it anyway)."""
    if node.host is None and not node.netns:
        raise ProviderError(f"{what} = {cc!r}: {node.name} is this machine's own network, whose default would change "
                            "for everything on it; leave the key out there")
    allow(cc, node, undo, what)
    before = current(node)
    if before == cc:
        return
    done = node.run(["sysctl", "-qw", f"{KEY}={cc}"], check=False)
    if done.returncode != 0:
        raise ProviderError(f"{what} = {cc!r}: {node.name} refused it ({(done.stderr or done.stdout).strip()}); "
                            f"the congestion controls this machine allows are in {ALLOWED}")
    undo.callback(node.run, ["sysctl", "-qw", f"{KEY}={before}"], check=False)


def apply(spec, nodes: dict[str, Node], undo: contextlib.ExitStack, phase: Callable[[str], None]) -> dict[str, str]:
    """Every node's congestion control for the run: the file's where it names one, the node's own
    default otherwise; what each node then uses, by name (for the manifest)."""
    out: dict[str, str] = {}
    for n in spec.nodes:
        node = nodes[n.name]
        if n.tcp_congestion_control:
            set_on(node, n.tcp_congestion_control, undo, f"nodes.{n.role}.tcp_congestion_control")
        out[n.name] = current(node)
    by: dict[str, list[str]] = {}
    for name, cc in out.items():
        by.setdefault(cc, []).append(name)
    named = {n.tcp_congestion_control for n in spec.nodes if n.tcp_congestion_control}
    phase("TCP congestion control: " + "; ".join(f"{cc} on {', '.join(names)}" for cc, names in by.items())
          + ("" if named else " (each node's default; nodes.<role>.tcp_congestion_control names one)"))
    return out
