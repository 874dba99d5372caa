"""One Mosquitto broker per remote node (edge, cloud), started inside that
node (its namespace and cgroup) with a config written into the run folder.
It drops root for Debian's `mosquitto` user (or `nobody`) once it has read
its config (a broker has no business running as root, and Mosquitto says
so); it logs to the file continuum opened for it."""

from __future__ import annotations

import pwd
import subprocess
from pathlib import Path

from continuum.network.plan import MQTT_PORT
from continuum.runtime import Node, wait_for


def broker_user() -> pwd.struct_passwd:
    for name in ("mosquitto", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("neither a mosquitto nor a nobody user exists on this host")


def config_text(user: str, tcp_nodelay: bool = False) -> str:
    return "\n".join([
        *(["set_tcp_nodelay true"] if tcp_nodelay else []),
        f"listener {MQTT_PORT} 0.0.0.0",
        "allow_anonymous true",
        "persistence false",
        f"user {user}",
        # To the log file continuum opened for it: after dropping root the
        # broker may not be able to reach the run folder itself.
        "log_dest stdout",
        "log_type error",
        "log_type warning",
        "log_type notice",
        "max_inflight_messages 0",
        "max_queued_messages 100000",
        "",
    ])


def start(node: Node, run_dir: Path, tcp_nodelay: bool = False) -> subprocess.Popen:
    conf = run_dir / "brokers" / f"{node.name}.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(config_text(broker_user().pw_name, tcp_nodelay))
    node.push([conf])
    proc = node.start(["mosquitto", "-c", str(conf)], run_dir / "logs" / f"mosquitto-{node.name}.log")

    def listening() -> bool:
        if proc.poll() is not None:
            from continuum.errors import ProviderError

            raise ProviderError(f"mosquitto on {node.name} exited with status {proc.returncode}; see {run_dir}/logs/mosquitto-{node.name}.log")
        out = node.run(["ss", "-Hltn", f"sport = :{MQTT_PORT}"], check=False).stdout
        return bool(out.strip())

    wait_for(listening, 15, f"mosquitto on {node.name}")
    return proc


def version() -> str:
    p = subprocess.run(["mosquitto", "-h"], capture_output=True, text=True)
    first = (p.stdout or p.stderr).splitlines()
    return first[0].strip() if first else "unknown"
