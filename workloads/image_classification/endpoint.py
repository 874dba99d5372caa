"""Endpoint side of W1.

The data bank is made here, never downloaded: seeded 298x224 pictures (smooth
colour gradients plus sensor-like noise), stored as JPEG. The noise level of
each picture is chosen so that the pre-processed request has the size drawn
from the experiment's payload distribution (default 10-100 KB, the thesis'
range): more noise, less compressible, larger request.

Pre-processing (M3) is what a MobileNetV2 client does: decode the JPEG,
resize to 224x224, normalise to [-1, 1]. The normalised tensor is sent
quantised to 8 bits and JPEG-compressed (float32 would be 600 KB, far from
what the reference sends); the server undoes the quantisation."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from workloads.contract import EndpointSettings
from workloads.payload import draw_sizes

SIDE = 224
DEFAULT_SIZES = (10_000, 100_000)
QUALITIES = (90, 95, 100)  # a higher quality when the target size needs it
MAX_NOISE = 400.0


SHAPE = (224, 298)  # a small 4:3 camera frame; pre-processing resizes it to 224x224


def picture(base: np.ndarray, unit_noise: np.ndarray, noise: float) -> np.ndarray:
    return np.clip(base + unit_noise * noise, 0, 255).astype(np.uint8)


def to_jpeg(img: np.ndarray, quality: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def preprocess(jpeg: bytes, quality: int) -> bytes:
    img = Image.open(io.BytesIO(jpeg)).convert("RGB").resize((SIDE, SIDE), Image.BILINEAR)
    x = np.asarray(img, dtype=np.float32) / 127.5 - 1.0  # MobileNetV2's input range
    q = np.clip(np.round((x + 1.0) * 127.5), 0, 255).astype(np.uint8)
    return to_jpeg(q, quality)


def make_item(seed: int, target: int) -> tuple[bytes, int]:
    """A bank picture (JPEG) and the quality whose pre-processed request is
    closest to target bytes: the lowest quality that can reach the target, then
    a bisection on the noise level."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0 : SHAPE[0], 0 : SHAPE[1]]
    base = np.stack([(xx * rng.uniform(0.1, 0.8) + yy * rng.uniform(0.1, 0.8) + rng.uniform(0, 255)) % 256
                     for _ in range(3)], -1)
    unit = rng.normal(0, 1, (*SHAPE, 3))

    def size(noise: float, quality: int) -> tuple[int, bytes]:
        jpeg = to_jpeg(picture(base, unit, noise), 100)
        return len(preprocess(jpeg, quality)), jpeg

    quality = next((q for q in QUALITIES if size(MAX_NOISE, q)[0] >= target), QUALITIES[-1])
    lo, hi = 0.0, MAX_NOISE
    best: tuple[int, bytes] | None = None
    for _ in range(8):
        noise = (lo + hi) / 2
        n, jpeg = size(noise, quality)
        if best is None or abs(n - target) < abs(best[0] - target):
            best = (n, jpeg)
        lo, hi = (noise, hi) if n < target else (lo, noise)
    assert best is not None
    return best[1], quality


class Endpoint:
    def __init__(self, s: EndpointSettings) -> None:
        n = int(s.params.get("bank_size", 16))
        rng = np.random.default_rng(s.seed)
        targets = draw_sizes(s.payload, n, rng, DEFAULT_SIZES)
        self.bank = [make_item(int(rng.integers(2**31)), t) for t in targets]

    def draw(self, seq: int) -> tuple[bytes, int]:
        return self.bank[seq % len(self.bank)]

    def preprocess(self, item: tuple[bytes, int]) -> bytes:
        return preprocess(*item)
