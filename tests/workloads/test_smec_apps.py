"""SMEC's four apps, each side for real but without a network: the
endpoint's bank and pre-processing make requests of the sizes the docs
state, and the server answers them with what the app promises (renditions
of a real H.264 chunk, detections, an upscaled frame, a digest)."""

from __future__ import annotations

import hashlib
import io
import json
from types import SimpleNamespace

import av
from PIL import Image

from workloads.augmented_reality import endpoint as ar_ep, server as ar_srv
from workloads.file_transfer import endpoint as ft_ep, server as ft_srv
from workloads.smart_stadium import endpoint as ss_ep, server as ss_srv
from workloads.video_conferencing import endpoint as vc_ep, server as vc_srv


def settings(**params):
    return SimpleNamespace(params=params, seed=3, payload={}, threads=1, model_cache="")


def test_smart_stadium_chunks_are_h264_and_come_back_as_each_rendition():
    ep = ss_ep.Endpoint(settings(bank_size=1))
    chunk = ep.preprocess(ep.draw(0))
    with av.open(io.BytesIO(chunk)) as c:
        v = c.streams.video[0]
        assert (v.codec_context.name, v.codec_context.width, v.codec_context.height) == ("h264", 1280, 720)
        assert sum(1 for _ in c.decode(v)) == 6
    assert 5_000 < len(chunk) < 100_000  # 100 ms of 720p60 at 2.2 Mbit/s is ~27 KB
    answer = json.loads(ss_srv.Server(settings()).process(chunk))
    assert set(answer) == {"480p", "240p"} and all(n > 1000 for n in answer.values())


def test_ar_frames_are_pre_processed_to_the_detector_input_and_detected():
    ep = ar_ep.Endpoint(settings(bank_size=1))
    frame = ep.draw(0)
    assert Image.open(io.BytesIO(frame)).size == (1920, 1080)
    request = ep.preprocess(frame)
    assert Image.open(io.BytesIO(request)).size == (224, 224) and len(request) < len(frame)
    srv = ar_srv.Server(settings())
    assert srv.info["weights"].startswith("random")  # no weights in an empty cache: said so
    answer = json.loads(srv.process(request))
    assert set(answer) == {"boxes", "labels", "scores"} and len(answer["boxes"]) == len(answer["scores"]) <= 20
    # SMEC's GPU path picks a CUDA stream by the budget; on a CPU the answer is the same either way
    assert srv.info["device"] == "cpu" and json.loads(srv.process_with_budget(request, 1_000_000, 30_000_000)) == answer


def test_vc_frames_come_back_twice_as_large():
    ep = vc_ep.Endpoint(settings(bank_size=2))
    frame = ep.preprocess(ep.draw(1))
    assert Image.open(io.BytesIO(frame)).size == (480, 320) and len(frame) < 8000
    out = Image.open(io.BytesIO(vc_srv.Server(settings()).process(frame)))
    assert out.size == (960, 640)


def test_file_transfer_files_have_the_drawn_sizes_and_their_digest_comes_back():
    ep = ft_ep.Endpoint(SimpleNamespace(params={"bank_size": 3}, seed=1,
                                        payload={"distribution": "fixed", "mean_bytes": 3_000_000, "min_bytes": 3_000_000, "max_bytes": 3_000_000}))
    data = ep.preprocess(ep.draw(2))
    assert len(data) == 3_000_000 and ep.draw(0) != ep.draw(1)
    assert ft_srv.Server(settings()).process(data) == hashlib.sha256(data).hexdigest().encode()


def test_vc_uses_a_state_dict_from_the_model_cache(tmp_path):
    import torch

    trained = vc_srv.espcn(torch)
    torch.nn.init.constant_(trained[0].bias, 0.25)  # weights no seed would draw
    (tmp_path / "espcn").mkdir()
    torch.save(trained.state_dict(), tmp_path / "espcn" / vc_srv.WEIGHTS)
    srv = vc_srv.Server(SimpleNamespace(params={}, seed=3, payload={}, threads=1, model_cache=str(tmp_path)))
    assert srv.info["weights"] == f"trained ({tmp_path / 'espcn' / vc_srv.WEIGHTS})"
    assert torch.equal(srv.model[0].bias, trained[0].bias)
