"""MobileNetV2 from torchvision: ImageNet weights when they are already in the
local torch hub cache (nothing is downloaded at run time), otherwise the same
architecture with random weights. Latency, which is what the testbed measures,
is the same either way; which one ran is recorded in the manifest."""

from __future__ import annotations

import os
from pathlib import Path


def load(threads: int):
    import torch
    import torchvision
    from torchvision.models import MobileNet_V2_Weights

    torch.set_num_threads(max(1, threads))
    weights = MobileNet_V2_Weights.IMAGENET1K_V1
    cached = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(weights.url)
    if cached.exists():
        model, which = torchvision.models.mobilenet_v2(weights=weights), f"imagenet1k_v1 ({cached})"
    else:
        model, which = torchvision.models.mobilenet_v2(weights=None), "random (no cached ImageNet weights)"
    model.eval()
    info = {
        "model": "mobilenet_v2",
        "weights": which,
        "framework": "pytorch",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "threads": torch.get_num_threads(),
    }
    return model, info


def classify(model, jpeg: bytes, resolution: int) -> int:
    """Decode, normalise (ImageNet mean/std) and run the model; the class index."""
    import io

    import numpy as np
    import torch
    from PIL import Image

    img = Image.open(io.BytesIO(jpeg)).convert("RGB")
    if img.size != (resolution, resolution):
        img = img.resize((resolution, resolution))
    x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    with torch.no_grad():
        return int(model(((x - mean) / std).unsqueeze(0)).argmax())
