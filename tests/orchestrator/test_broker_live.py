"""The broker's side of `[workload] tcp_nodelay` (issue #58): with Mosquitto's
default (Nagle on) a small message that follows another to the same client
waits until that client acknowledges the first; with set_tcp_nodelay it
leaves at once. Measured through mahimahi-link with a 20-ms base delay each
way (light traces), a subscriber on the UE side and two messages published
5 ms apart on the core side by a client connected as the workloads connect,
with CONTINUUM_TCP_NODELAY=1 (the clients' side of the setting: this paho
leaves Nagle on, and without it the second message would wait ~40 ms for the
broker's delayed ACK, with or without the broker's setting)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mahimahi-link" / "lab"))
from netlab import CORE_IP, Lab, wait_listening  # noqa: E402

from continuum import broker  # noqa: E402
from continuum.network.plan import MQTT_PORT  # noqa: E402
from workloads.contract import Env  # noqa: E402

pytestmark = pytest.mark.usefixtures("root_netns")
PY = str(Path(sys.executable).absolute())
REPO = Path(__file__).resolve().parents[2]
BASE_MS = 20

SUBSCRIBER = """
import sys, time, paho.mqtt.client as mqtt
got = []
c = mqtt.Client(client_id="sub", clean_session=True)
c.on_subscribe = lambda *a: print("ready", flush=True)
c.on_connect = lambda cl, *a: cl.subscribe("t", 0)
c.on_message = lambda cl, u, m: got.append(time.monotonic())
c.connect(sys.argv[1], int(sys.argv[2]))
c.loop_start()
t0 = time.monotonic()
while len(got) < 2 and time.monotonic() - t0 < 20:
    time.sleep(0.001)
c.loop_stop()
print("gap_ms", (got[1] - got[0]) * 1000 if len(got) == 2 else -1, flush=True)
"""

PUBLISHER = """
import sys, time, paho.mqtt.client as mqtt
from workloads.driver import connect
c = mqtt.Client(client_id="pub", clean_session=True)
connect(c, sys.argv[1], int(sys.argv[2]))
c.loop_start()
time.sleep(0.3)  # the subscriber's link idle again after the connection's packets
sent = []
for k in range(2):
    sent.append(time.monotonic())
    c.publish("t", b"x" * 200, qos=0)
    time.sleep(0.005)
time.sleep(0.2)
c.loop_stop()
print("pub_gap_ms", (sent[1] - sent[0]) * 1000, flush=True)
"""


def gap_ms(lab: Lab, tmp_path: Path, nodelay: bool) -> tuple[float, float]:
    """The gap between the subscriber's two messages, and between their two publish calls (5 ms asked; a
    busy machine's sleep can take longer, and the gap at the subscriber is at least that)."""
    conf = tmp_path / f"mosquitto-{nodelay}.conf"
    conf.write_text(broker.config_text(broker.broker_user().pw_name, nodelay))
    b = lab.popen(lab.core, "mosquitto", "-c", str(conf), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(lab.core, MQTT_PORT, b)
        sub = lab.popen(lab.ue, PY, "-c", SUBSCRIBER, CORE_IP, str(MQTT_PORT), stdout=subprocess.PIPE)
        assert sub.stdout is not None and sub.stdout.readline().strip() == "ready"
        pub = lab.run(lab.core, "env", f"PYTHONPATH={REPO}", f"{Env.TCP_NODELAY}=1", PY, "-c", PUBLISHER, "127.0.0.1",
                      str(MQTT_PORT), timeout=30)
        out, _ = sub.communicate(timeout=30)
        return float(out.split()[-1]), float(pub.stdout.split()[-1])
    finally:
        b.terminate()
        b.wait(timeout=10)


def test_an_answer_that_follows_another_waits_for_its_ack_unless_nodelay(mml, tmp_path):
    heavy = tmp_path / "c12"
    heavy.write_text("1\n")  # an opportunity every ms: 12 Mbit/s
    for d in ("up", "down"):  # every burst from idle waits BASE_MS (the ACK of the first message too)
        (tmp_path / f"{d}.light").write_text("".join(f"{t} {BASE_MS} 0 1 2 3\n" for t in (0, 1000, 2000)))
    with Lab(mml, tmp_path) as lab:
        lab.start_emulator(heavy, heavy, link_keys=f",up-light={tmp_path / 'up.light'},down-light={tmp_path / 'down.light'}")
        (nagle, _), (nodelay, published) = gap_ms(lab, tmp_path, False), gap_ms(lab, tmp_path, True)
        assert lab.stop_emulator() == 0
    # published ~5 ms apart: with Nagle the second waits for the first's ACK, a trip up (BASE_MS) at least;
    # without, it follows the first as it was published (however long this machine's 5-ms sleep took)
    assert published < BASE_MS, f"the premise: two publishes {published:.1f} ms apart, not 5 (a machine too busy)"
    assert nagle >= BASE_MS and 0 <= nodelay < published + BASE_MS / 2, (nagle, nodelay, published)
