"""mobile.segmentation = "kernel" (issue #23): the hosts keep their
segmentation offloads and mahimahi-link runs --gso. A request of 30 KB
leaves the endpoint as TCP super-frames; the link must still charge it
per MTU segment (no arrival in its log above 1504 bytes, the 21 segments'
serialization at 12 Mbit/s in its uplink time), and say it took
super-frames whole. `segmentation = "emulator"` is what every other test runs."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="continuum run needs root (namespaces, cgroups)")

CONFIG = """
[experiment]
name = "segmentation"
duration_s = 3
warmup_s = 1
output = "{out}"

[mobile]
uplink = "const-12mbps"
downlink = "const-48mbps"
segmentation = "kernel"

[workload]
app = "custom"
rate = 10

[workload.payload]
distribution = "fixed"
min_bytes = 30000
max_bytes = 30000

[workload.custom]
server_command = ["{{python}}", "app.py", "server"]
endpoint_command = ["{{python}}", "app.py", "endpoint"]
"""


def test_kernel_segmentation_still_charges_every_mtu_segment(tmp_path, continuum_run):
    shutil.copy(REPO / "workloads" / "example" / "app.py", tmp_path / "app.py")
    tmp_path.chmod(0o755)  # the app runs as nobody from this folder
    cfg = tmp_path / "seg.toml"
    cfg.write_text(CONFIG.format(out=tmp_path / "runs"))
    run = continuum_run(cfg, tmp_path, "segmentation")
    assert json.loads((run / "manifest.json").read_text())["mobile"] == {"mode": "emulated", "segmentation": "kernel"}
    up = json.loads((run / "links" / "stats.json").read_text())["links"][0]["uplink"]
    assert up["superframes"] > 0 and up["unsplittable_frames"] == up["oversize_frames"] == 0, up
    sizes = [int(line.split()[2]) for line in (run / "links" / "endpoint0.uplink.log").read_text().splitlines()
             if len(line.split()) >= 3 and line.split()[1] == "+"]
    assert sizes and max(sizes) <= 1504, max(sizes)
    df = pd.read_csv(run / "requests.csv")
    ok = df[(df["phase"] == "measure") & (df["status"] == "ok")]
    assert len(ok) >= 20 and len(ok) == len(df[df["phase"] == "measure"])
    # 30000 bytes + headers: >= 21 full segments of 1504 bytes at 12 Mbit/s = 21 ms, plus the 0.5 ms core delay
    assert 21 <= ok["uplink_ms"].median() <= 45, ok["uplink_ms"].describe()


def test_kernel_segmentation_is_refused_where_no_provider_builds_it(tmp_path):
    from continuum import config
    from continuum.errors import ConfigError

    f = tmp_path / "q.toml"
    f.write_text('[experiment]\nname = "q"\nduration_s = 5\n[provider]\nkind = "qemu"\n'
                 '[mobile]\nuplink = "const-12mbps"\ndownlink = "const-48mbps"\nsegmentation = "kernel"\n')
    with pytest.raises(ConfigError) as e:
        config.load(f, materialize=False)
    assert [i.key for i in e.value.issues] == ["mobile.segmentation"] and "netns" in e.value.issues[0].message
    f.write_text(f.read_text().replace('kind = "qemu"', 'kind = "netns"'))
    assert config.load(f, materialize=False).mobile.segmentation == "kernel"
    f.write_text(f.read_text() + '[cell]\nuplink = "pf"\n')  # the emulator's shared cell takes no super-frames yet
    with pytest.raises(ConfigError) as e:
        config.load(f, materialize=False)
    assert [i.key for i in e.value.issues] == ["mobile.segmentation"] and "[cell]" in e.value.issues[0].message
