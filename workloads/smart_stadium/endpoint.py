"""Endpoint side of the smart stadium: a bank of H.264 chunks (MP4 fragments)
encoded here from the project's synthetic frames, at the camera's bitrate.
The camera encodes as it films, so the chunk is the request as is (no
pre-processing beyond what the bank holds)."""

from __future__ import annotations

import io

from workloads import media
from workloads.contract import EndpointSettings


def encode(frames: list, fps: int, bitrate: int) -> bytes:
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4", options={"movflags": "frag_keyframe+empty_moov"}) as out:
        stream = out.add_stream("libx264", rate=fps, options={"preset": "veryfast", "tune": "zerolatency", "threads": "1"})
        stream.width, stream.height, stream.pix_fmt, stream.bit_rate = frames[0].shape[1], frames[0].shape[0], "yuv420p", bitrate
        for f in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")))
        out.mux(stream.encode())
    return buf.getvalue()


class Endpoint:
    def __init__(self, s: EndpointSettings) -> None:
        p = s.params
        w, h, fps, n = int(p.get("width", 1280)), int(p.get("height", 720)), int(p.get("fps", 60)), int(p.get("chunk_frames", 6))
        bitrate = int(float(p.get("bitrate_mbps", 2.2)) * 1e6)
        self.bank = [encode(media.frames(s.seed * 1000 + i, w, h, n), fps, bitrate) for i in range(int(p.get("bank_size", 4)))]

    def draw(self, seq: int) -> bytes:
        return self.bank[seq % len(self.bank)]

    def preprocess(self, item: bytes) -> bytes:
        return item
