"""Endpoint side of AR: a bank of synthetic 1080p camera frames (JPEG, the
quality chosen so a frame is about `frame_bytes`); pre-processing decodes a
frame, resizes it to the detector's input and sends it as JPEG (quality 90)."""

from __future__ import annotations

import io

from PIL import Image

from workloads import media
from workloads.contract import EndpointSettings


def frame_near(seed: int, target: int) -> bytes:
    img = media.frames(seed, 1920, 1080, 1, noise=1.5)[0]
    best = b""
    for q in (95, 90, 80, 70, 60, 50, 40, 30, 20):
        best = media.jpeg(img, q)
        if len(best) <= target:
            break
    return best


class Endpoint:
    def __init__(self, s: EndpointSettings) -> None:
        self.size = int(s.params.get("input", 224))
        target = int(s.params.get("frame_bytes", 33_000))
        self.bank = [frame_near(s.seed * 1000 + i, target) for i in range(int(s.params.get("bank_size", 8)))]

    def draw(self, seq: int) -> bytes:
        return self.bank[seq % len(self.bank)]

    def preprocess(self, item: bytes) -> bytes:
        img = Image.open(io.BytesIO(item)).convert("RGB").resize((self.size, self.size), Image.BILINEAR)
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=90)
        return buf.getvalue()
