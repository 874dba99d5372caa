"""Synthetic camera pictures for SMEC's apps (smart stadium, AR, video
conferencing): made here from a seed, never downloaded. A frame is a moving
colour field with a few bright blocks (something for a detector and an
encoder to work on) plus sensor-like noise; consecutive frames of a clip
move, so a video encoder sees motion as it would in a stadium feed."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def frames(seed: int, width: int, height: int, count: int, noise: float = 6.0) -> list[np.ndarray]:
    """`count` consecutive RGB frames (uint8, height x width x 3)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    tilt = rng.uniform(0.05, 0.4, (3, 2)) * 1280 / width
    phase = rng.uniform(0, 255, 3)
    blocks = [(rng.uniform(0, width), rng.uniform(0, height), rng.uniform(0.05, 0.2) * width,
               rng.uniform(-0.01, 0.01) * width, rng.uniform(-0.01, 0.01) * height, rng.uniform(0, 255, 3)) for _ in range(5)]
    out = []
    for t in range(count):
        img = np.stack([(xx * tilt[c, 0] + yy * tilt[c, 1] + phase[c] + 4 * t) % 256 for c in range(3)], -1)
        for x0, y0, size, dx, dy, colour in blocks:
            x, y = int((x0 + dx * t) % width), int((y0 + dy * t) % height)
            img[y:y + int(size * 0.6), x:x + int(size)] = colour
        img += rng.normal(0, noise, img.shape).astype(np.float32)
        out.append(np.clip(img, 0, 255).astype(np.uint8))
    return out


def jpeg(img: np.ndarray, quality: int = 90) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def from_jpeg(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
