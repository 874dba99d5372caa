"""Server side of VC: an ESPCN super-resolution network (x2), PyTorch,
answering the upscaled frame as JPEG.

No trained weights for this network are published; a state dict of it
(`espcn_x2.pt`, e.g. trained with the ESPCN recipe) in the model cache
($CONTINUUM_MODEL_CACHE/espcn/, see docs/workloads.md) is used when present.
Otherwise it runs with seeded random weights: the latency is the same (the
picture is not), and `info["weights"]` says which ran."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from workloads import media
from workloads.contract import ServerSettings
from workloads.device import Device, load_weights

WEIGHTS = "espcn_x2.pt"


def espcn(torch, scale: int = 2, channels: tuple[int, int] = (16, 16)):
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, channels[0], 5, padding=2), nn.Tanh(),
                         nn.Conv2d(channels[0], channels[1], 3, padding=1), nn.Tanh(),
                         nn.Conv2d(channels[1], 3 * scale * scale, 3, padding=1), nn.PixelShuffle(scale))


class Server:
    def __init__(self, s: ServerSettings) -> None:
        import torch

        torch.set_num_threads(max(1, s.threads))
        torch.manual_seed(s.seed)
        self.torch = torch
        model = espcn(torch)
        weights = load_weights(torch, model, s.model_cache, f"espcn/{WEIGHTS}", "trained", s.seed)
        self.device = Device(torch)
        self.model = self.device.to(model.eval())
        with torch.no_grad():
            self.device.run(self.model, torch.zeros(1, 3, 320, 480))
        self.info = {"app": "video_conferencing", "model": "ESPCN x2 (16/16 channels)", "framework": "pytorch",
                     "torch": torch.__version__, "weights": weights, "threads": s.threads, "device": self.device.name,
                     "parameters": sum(p.numel() for p in model.parameters())}

    def process(self, payload: bytes) -> bytes:
        return self.process_with_budget(payload, None, 0)

    def process_with_budget(self, payload: bytes, budget_ns: int | None, threshold_ns: int) -> bytes:
        """With a GPU, the request's CUDA stream follows its SMEC budget (workloads/device.py)."""
        x = self.torch.from_numpy(media.from_jpeg(payload).astype(np.float32) / 255.0).permute(2, 0, 1)[None]
        with self.torch.no_grad():
            y = self.device.run(self.model, x, budget_ns, threshold_ns)[0].clamp(0, 1).permute(1, 2, 0).cpu().numpy()
        buf = io.BytesIO()
        Image.fromarray((y * 255).astype(np.uint8)).save(buf, format="JPEG", quality=80)
        return buf.getvalue()
