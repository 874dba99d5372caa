"""MOSAIC's six task classes as small real jobs (issue #20), sized so that
one takes on this 2-core machine roughly the share of its class's deadline
that the paper's take (SPEC-mosaic.md; measured times in docs/mosaic.md):

- inference_critical: torchvision's SSDlite320 detector on a 640x480 image
  (the paper: YOLOv5s on the CPU), seeded random weights unless COCO
  weights are in the model cache;
- dispatch_api: a burst of HTTP requests to a real aiohttp service on the
  node (the paper: FastAPI/Gunicorn), each a JSON route lookup;
- sensor_fusion: pipelined writes and reads against a real Redis server on
  the node (the paper: Redis driven by redis-benchmark), then a fusion of
  the readings;
- analytics_batch: a pandas group-by over generated rows;
- model_update: a few SGD steps of a small torch network;
- log_archive: generated log lines compressed with zstd, then gzip.

Each job takes a seed and returns a short summary (what it computed), so a
test can check that it did its work. The services (Redis, the HTTP API) are
started by `services.py`, once per node, and reached at the addresses the
worker is given."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
from typing import Any, Callable

SCALE = {  # per class: the job's size (rows, steps, requests ...), for this machine
    "inference_critical": 4,  # images per task
    "dispatch_api": 20,  # requests per burst
    "sensor_fusion": 4000,  # Redis operations
    "analytics_batch": 400_000,  # rows
    "model_update": 16,  # SGD steps
    "log_archive": 360_000,  # log lines (about 25 MB)
}


class Jobs:
    """The jobs of the classes a worker serves; what a class needs is loaded once."""

    def __init__(self, classes: list[str], redis_port: int = 0, api_port: int = 0, model_cache: str = "", scale: float = 1.0) -> None:
        self.redis_port, self.api_port, self.model_cache, self.scale = redis_port, api_port, model_cache, scale
        self.state: dict[str, Any] = {}
        self.run: dict[str, Callable[[int], dict]] = {}
        for c in classes:
            getattr(self, f"_load_{c}")()
            self.run[c] = getattr(self, c)

    def n(self, cls: str) -> int:
        return max(1, int(SCALE[cls] * self.scale))

    # inference_critical
    def _load_inference_critical(self) -> None:
        import numpy as np
        import torch
        import torchvision

        torch.set_num_threads(1)
        torch.manual_seed(0)
        model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
        from workloads.device import load_weights

        self.state["weights"] = load_weights(torch, model, self.model_cache, "ssdlite/ssdlite320_mobilenet_v3_large_coco-a79551df.pth", "coco", 0)
        self.state["model"], self.state["torch"], self.state["np"] = model.eval(), torch, np

    def inference_critical(self, seed: int) -> dict:
        torch, np = self.state["torch"], self.state["np"]
        rng = np.random.default_rng(seed)
        found = 0
        with torch.no_grad():
            for _ in range(self.n("inference_critical")):
                img = torch.from_numpy(rng.random((3, 480, 640), dtype=np.float32))
                out = self.state["model"]([img])[0]
                found += int((out["scores"] > 0.3).sum())
        return {"detections": found}

    # dispatch_api
    def _load_dispatch_api(self) -> None:
        import http.client

        self.state["http"] = http.client

    def dispatch_api(self, seed: int) -> dict:
        rng = random.Random(seed)
        conn = self.state["http"].HTTPConnection("127.0.0.1", self.api_port, timeout=10)
        routed = 0
        for _ in range(self.n("dispatch_api")):
            body = json.dumps({"unit": rng.randrange(1000), "x": rng.random() * 100, "y": rng.random() * 100})
            conn.request("POST", "/dispatch", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            routed += json.loads(r.read())["station"] >= 0
        conn.close()
        return {"routed": routed}

    # sensor_fusion
    def _load_sensor_fusion(self) -> None:
        import redis

        self.state["redis"] = redis.Redis(host="127.0.0.1", port=self.redis_port)

    def sensor_fusion(self, seed: int) -> dict:
        rng = random.Random(seed)
        r, ops = self.state["redis"], self.n("sensor_fusion")
        keys = [f"sensor:{os.getpid()}:{seed}:{i}" for i in range(ops // 2)]  # workers share one Redis
        pipe = r.pipeline(transaction=False)
        for i, k in enumerate(keys):
            pipe.set(k, f"{rng.gauss(20, 2):.3f}")
            if i % 100 == 99:
                pipe.execute()
        pipe.execute()
        values = []
        for i in range(0, len(keys), 100):
            values += [float(v) for v in r.mget(keys[i:i + 100])]
        r.delete(*keys)
        return {"fused": round(sum(values) / len(values), 3), "readings": len(values)}

    # analytics_batch
    def _load_analytics_batch(self) -> None:
        import numpy as np
        import pandas as pd

        self.state["pd"], self.state["np"] = pd, np

    def analytics_batch(self, seed: int) -> dict:
        pd, np = self.state["pd"], self.state["np"]
        rng = np.random.default_rng(seed)
        rows = self.n("analytics_batch")
        df = pd.DataFrame({"region": rng.integers(0, 200, rows), "kind": rng.integers(0, 12, rows),
                           "value": rng.random(rows), "latency": rng.exponential(50, rows)})
        agg = df.groupby(["region", "kind"]).agg(value=("value", "mean"), p95=("latency", lambda s: s.quantile(0.95)), n=("value", "size"))
        return {"groups": len(agg), "rows": int(agg["n"].sum())}

    # model_update
    def _load_model_update(self) -> None:
        import torch

        torch.set_num_threads(1)
        self.state["torch"] = torch

    def model_update(self, seed: int) -> dict:
        torch = self.state["torch"]
        torch.manual_seed(seed)
        nn = torch.nn
        net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        x, y = torch.rand(64, 3, 64, 64), torch.randint(0, 10, (64,))
        first = last = 0.0
        for step in range(self.n("model_update")):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            first, last = (float(loss) if step == 0 else first), float(loss)
        return {"loss_first": round(first, 4), "loss_last": round(last, 4)}

    # log_archive
    def _load_log_archive(self) -> None:
        import zstandard

        self.state["zstd"] = zstandard

    def log_archive(self, seed: int) -> dict:
        rng = random.Random(seed)
        levels, units = ("INFO", "WARN", "DEBUG", "ERROR"), ("dispatch", "fusion", "camera", "uplink", "storage")
        buf = io.StringIO()
        for i in range(self.n("log_archive")):
            buf.write(f"2026-11-23T09:{i // 6000 % 60:02d}:{i // 100 % 60:02d}.{i % 100:02d}Z {rng.choice(levels)} "
                      f"{rng.choice(units)}[{rng.randrange(64)}] request {rng.getrandbits(32):08x} took {rng.expovariate(0.02):.1f} ms\n")
        raw = buf.getvalue().encode()
        z = self.state["zstd"].ZstdCompressor(level=9).compress(raw)
        g = gzip.compress(raw, compresslevel=6)
        return {"raw_mb": round(len(raw) / 1e6, 2), "zstd_ratio": round(len(raw) / len(z), 2), "gzip_ratio": round(len(raw) / len(g), 2)}
