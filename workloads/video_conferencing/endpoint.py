"""Endpoint side of VC: a bank of synthetic 320p frames, JPEG at the quality
that makes about `frame_bytes`; the phone's encoder already made the
request, so pre-processing sends it as is."""

from __future__ import annotations

from workloads import media
from workloads.contract import EndpointSettings


class Endpoint:
    def __init__(self, s: EndpointSettings) -> None:
        w, h = int(s.params.get("width", 480)), int(s.params.get("height", 320))
        target = int(s.params.get("frame_bytes", 3300))
        self.bank = []
        for img in media.frames(s.seed, w, h, int(s.params.get("bank_size", 16)), noise=1.0):
            data = b""
            for q in (90, 80, 70, 60, 50, 40, 30, 20, 10):
                data = media.jpeg(img, q)
                if len(data) <= target:
                    break
            self.bank.append(data)

    def draw(self, seq: int) -> bytes:
        return self.bank[seq % len(self.bank)]

    def preprocess(self, item: bytes) -> bytes:
        return item
