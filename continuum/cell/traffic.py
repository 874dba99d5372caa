"""What runs next to the workload in a shared cell: each bulk UE moves a
file as fast as the cell lets it (iperf3 TCP, a well-kept tool rather than a
hand-written sender), and under Tutti a notice agent on the offload target
tells the RAN when a request starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from continuum.config import ExperimentSpec
from continuum.errors import ProviderError
from continuum.network import plan as netplan
from continuum.runtime import Node, Sandbox, exit_status, wait_for


BULK_MARGIN_S = 60  # beyond warm-up, measurement and timeout: the endpoints' start, on the slowest machine


def bulk_server(target: Node, name: str, index: int, raw: Path, run_dir: Path, rep: int,
                sandbox: Sandbox | None) -> subprocess.Popen:
    """iperf3's server for bulk UE `index`, one connection, listening when this returns."""
    port = netplan.BULK_PORT + index
    proc = target.start(["iperf3", "-s", "-1", "-p", str(port), "-J", "--logfile", str(raw / f"bulk-server-{name}-r{rep}.json")],
                        run_dir / "logs" / f"bulk-server-{name}.log", sandbox=sandbox)

    def listening() -> bool:
        if proc.poll() is not None:
            raise ProviderError(f"iperf3 -s for {name} on {target.name} exited ({proc.returncode}); see {run_dir}/logs/bulk-server-{name}.log")
        return bool(target.run(["ss", "-Hltn", f"sport = :{port}"], check=False).stdout.strip())

    wait_for(listening, 15, f"iperf3 for {name} on {target.name}")
    return proc


def bulk_client(node: Node, index: int, target_address: str, spec: ExperimentSpec, raw: Path, run_dir: Path, rep: int,
                sandbox: Sandbox | None) -> subprocess.Popen:
    """The bulk UE's transfer, uplink (UE to target) or downlink (-R), its
    report in raw/bulk-NAME-rREP.json. It must load the cell for as long as
    the endpoints send, and they start later than it (their apps import, a
    loaded machine takes seconds longer) and send for warm-up, measurement
    and their last answers' timeout: a transfer of just warm-up plus
    measurement ended before the last measured requests (a fresh machine's
    test saw the upload offer 60% of its share, 2026-11-27). So its bound
    leaves room for all of that, and the runner stops it once the endpoints
    are done (iperf3 writes its report then too)."""
    assert spec.cell is not None
    seconds = max(1, round(spec.warmup_s + spec.duration_s + max(a.workload.timeout_s for a in spec.apps) + BULK_MARGIN_S))
    argv = ["iperf3", "-c", target_address, "-p", str(netplan.BULK_PORT + index), "-t", str(seconds), "-i", "1",
            "-J", "--logfile", str(raw / f"bulk-{node.name}-r{rep}.json")]
    if spec.cell.bulk_direction == "downlink":
        argv.append("-R")
    return node.start(argv, run_dir / "logs" / f"bulk-{node.name}.log", sandbox=sandbox)


def notice_agent(target: Node, run_dir: Path) -> subprocess.Popen:
    """Tutti's edge side on the offload target: watches requests arrive and
    tells the RAN (continuum/cell/notice.py). Infrastructure: it needs a raw
    socket, so it runs as root, apart from the workload."""
    log = run_dir / "raw" / "notices.csv"
    argv = [target.python, "-m", "continuum.cell.notice", "--iface", netplan.NODE_IF,
            "--mqtt-port", str(netplan.MQTT_PORT), "--notice-port", str(netplan.NOTICE_PORT), "--log", str(log)]
    proc = target.start(argv, run_dir / "logs" / f"notice-agent-{target.name}.log", {"PYTHONPATH": str(target.repo)},
                        cwd=target.repo)
    # on a VM or another machine each check is an SSH round trip, and a TCG guest imports slowly
    wait_for(lambda: _started(target, proc, log, run_dir), 15 if target.host is None else 120,
             f"the request-notice agent on {target.name}", poll=0.05 if target.host is None else 0.3)
    return proc


def _started(target: Node, proc: subprocess.Popen, log: Path, run_dir: Path) -> bool:
    if proc.poll() is not None:
        raise ProviderError(f"the request-notice agent on {target.name} exited ({exit_status(proc.returncode)}); "
                            f"see {run_dir}/logs/notice-agent-{target.name}.log")
    return target.exists(log)
