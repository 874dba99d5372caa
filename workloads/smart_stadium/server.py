"""Server side of the smart stadium: decode the chunk and encode it again at
each rendition (libx264, ultrafast, the CPU transcoding SMEC's edge does),
in this process through PyAV (FFmpeg's libraries): starting an ffmpeg per
chunk would cost ~80 ms here before any work. Answers each rendition's size."""

from __future__ import annotations

import io
import json

from workloads.contract import ServerSettings


class Server:
    def __init__(self, s: ServerSettings) -> None:
        import av

        self.av = av
        self.threads = max(1, s.threads)
        self.heights = [int(h) for h in str(s.params.get("renditions", "480,240")).split(",")]
        self.info = {"app": "smart_stadium", "model": f"H.264 transcoding to {'p, '.join(map(str, self.heights))}p (libx264 ultrafast)",
                     "weights": "none (no model)", "pyav": av.__version__, "threads": self.threads}

    def process(self, payload: bytes) -> bytes:
        av = self.av
        outs = []
        with av.open(io.BytesIO(payload)) as inp:
            src = inp.streams.video[0]
            rate = src.average_rate or 60
            for h in self.heights:
                buf = io.BytesIO()
                o = av.open(buf, "w", format="mp4", options={"movflags": "frag_keyframe+empty_moov"})
                st = o.add_stream("libx264", rate=rate, options={"preset": "ultrafast", "threads": str(self.threads)})
                st.height, st.pix_fmt = h, "yuv420p"
                st.width = round(h * src.codec_context.width / src.codec_context.height / 2) * 2
                outs.append((o, st, buf))
            for frame in inp.decode(src):
                for o, st, _ in outs:
                    o.mux(st.encode(frame.reformat(width=st.width, height=st.height, format="yuv420p")))
        sizes = []
        for o, st, buf in outs:
            o.mux(st.encode())
            o.close()
            sizes.append(len(buf.getvalue()))
        return json.dumps({f"{h}p": n for h, n in zip(self.heights, sizes)}).encode()
