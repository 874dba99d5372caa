"""Server side of AR: torchvision's SSDlite320 (MobileNetV3-Large backbone)
at the endpoint's input size, answering the detections above 0.3 (boxes,
labels, scores as JSON).

COCO weights are used when torchvision's weight file is in the model cache
($CONTINUUM_MODEL_CACHE/ssdlite/, see docs/workloads.md); nothing is
downloaded at run time. Otherwise the same network runs with seeded random
weights: the latency is the same, and `info["weights"]` says which ran.
On a GPU (`info["device"]`) each request runs on the CUDA stream its SMEC
budget calls for (run on an H100: experiments/smec/gpu/README.md)."""

from __future__ import annotations

import io
import json

import numpy as np
from PIL import Image

from workloads.contract import ServerSettings
from workloads.device import Device, load_weights

WEIGHTS = "ssdlite320_mobilenet_v3_large_coco-a79551df.pth"


class Server:
    def __init__(self, s: ServerSettings) -> None:
        import torch
        import torchvision

        torch.set_num_threads(max(1, s.threads))
        torch.manual_seed(s.seed)
        self.torch = torch
        size = int(s.params.get("input", 224))
        model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
        weights = load_weights(torch, model, s.model_cache, f"ssdlite/{WEIGHTS}", "coco", s.seed)
        model.transform.fixed_size = (size, size)
        self.device = Device(torch)
        self.model = self.device.to(model.eval())
        with torch.no_grad():
            for _ in range(2):
                self.device.run(lambda x: self.model([x]), torch.zeros(3, size, size))
        self.info = {"app": "augmented_reality", "model": f"SSDlite320-MobileNetV3-Large at {size}x{size}",
                     "framework": "pytorch", "torch": torch.__version__, "torchvision": torchvision.__version__,
                     "weights": weights, "threads": s.threads, "device": self.device.name, "parameters": sum(p.numel() for p in model.parameters())}

    def process(self, payload: bytes) -> bytes:
        return self.process_with_budget(payload, None, 0)

    def process_with_budget(self, payload: bytes, budget_ns: int | None, threshold_ns: int) -> bytes:
        """With a GPU, the request's CUDA stream follows its SMEC budget (workloads/device.py)."""
        img = np.asarray(Image.open(io.BytesIO(payload)).convert("RGB"), dtype=np.float32) / 255.0
        x = self.torch.from_numpy(img).permute(2, 0, 1)
        with self.torch.no_grad():
            out = {k: v.cpu() for k, v in self.device.run(lambda t: self.model([t])[0], x, budget_ns, threshold_ns).items()}
        keep = out["scores"] > 0.3
        return json.dumps({"boxes": out["boxes"][keep][:20].round().tolist(), "labels": out["labels"][keep][:20].tolist(),
                           "scores": [round(float(v), 3) for v in out["scores"][keep][:20]]}).encode()
