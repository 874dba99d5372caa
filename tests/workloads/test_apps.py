"""The workload apps' own pieces, without a network: payload sizes, the data
banks they build (real images and phrases of the sizes asked for), and the
congestion-control rule."""

from __future__ import annotations

import numpy as np
import pytest

from workloads import contract, payload
from workloads.congestion import CongestionControl
from workloads.image_classification import endpoint as w1
from workloads.translation import corpus


def test_payload_distributions_stay_in_bounds_and_are_seeded():
    for dist in ("uniform", "normal", "lognormal"):
        spec = {"distribution": dist, "min_bytes": 100, "max_bytes": 200, "mean_bytes": 150}
        a = payload.draw_sizes(spec, 500, np.random.default_rng(3), (1, 2))
        assert min(a) >= 100 and max(a) <= 200 and len(set(a)) > 20
        assert a == payload.draw_sizes(spec, 500, np.random.default_rng(3), (1, 2))
    assert set(payload.draw_sizes({"distribution": "fixed", "mean_bytes": 150, "min_bytes": 1, "max_bytes": 999},
                                  10, np.random.default_rng(1), (1, 2))) == {150}
    with pytest.raises(ValueError, match="valid: uniform"):
        payload.draw_sizes({"distribution": "zipf"}, 1, np.random.default_rng(1), (1, 2))


@pytest.mark.parametrize("target", [10_000, 40_000, 70_000, 95_000])
def test_w1_images_have_the_size_asked_for(target):
    jpeg, quality = w1.make_item(seed=target, target=target)
    sent = w1.preprocess(jpeg, quality)
    assert abs(len(sent) - target) <= 0.05 * target
    from PIL import Image
    import io

    img = Image.open(io.BytesIO(sent))
    assert img.size == (224, 224) and img.format == "JPEG"


def test_w2_phrases_have_the_exact_size_and_read_as_text():
    rng = np.random.default_rng(5)
    for n in range(40, 260):
        p = corpus.phrase(rng, n)
        assert len(p.encode()) == n, (n, p)
        assert p[0].isupper() and p.endswith(".") and ".." not in p


def test_messages_round_trip():
    header, body = contract.unpack(contract.pack({"request_id": "e-1-0", "t": 1}, b"\x00payload"))
    assert header == {"request_id": "e-1-0", "t": 1} and body == b"\x00payload"


def test_congestion_control_halves_while_slow_and_restores():
    cc = CongestionControl(base_rate=4.0, threshold_ms=500, factor=0.5, hold_s=1.0)
    assert cc.update(0.0, 100) is None and cc.rate == 4.0
    assert cc.update(1.0, 800) == "decrease" and cc.rate == 2.0
    assert cc.update(1.5, 900) is None and cc.rate == 2.0  # hold time
    assert cc.update(2.0, 900) == "decrease" and cc.rate == 1.0
    assert cc.update(3.0, 100) == "restore" and cc.rate == 4.0
    for restore, after in (("double", 2.0), ("additive", 1.4)):
        cc = CongestionControl(base_rate=4.0, restore=restore, hold_s=0)
        cc.update(0, 900), cc.update(1, 900)
        assert cc.rate == 1.0 and cc.update(2, 10) == "restore" and cc.rate == pytest.approx(after)
    cc = CongestionControl(base_rate=4.0, hold_s=0, min_rate=0.5)
    for t in range(10):
        cc.update(t, 5000)
    assert cc.rate == 0.5
    with pytest.raises(ValueError, match="valid: reset"):
        CongestionControl(base_rate=1, restore="slow")


def test_a_download_asks_for_a_file_by_number_and_gets_the_same_bytes_each_time():
    from types import SimpleNamespace

    from workloads.file_download import endpoint as dl_endpoint
    from workloads.file_download import server as dl_server

    ep = dl_endpoint.Endpoint(SimpleNamespace(params={"bank_size": 3, "file_bytes": 5000}))  # type: ignore[arg-type]
    requests = [ep.preprocess(ep.draw(seq)) for seq in range(6)]
    assert all(len(r) == dl_endpoint.REQUEST_BYTES for r in requests)
    assert requests[:3] == requests[3:] and len(set(requests)) == 3  # the catalogue in turn: a cache's key repeats
    store = dl_server.Server(SimpleNamespace(seed=1))  # type: ignore[arg-type]
    files = [store.process(r) for r in requests]
    assert all(len(f) == 5000 for f in files) and files[0] == files[3] and files[0] != files[1]
    assert dl_server.Server(SimpleNamespace(seed=2)).process(requests[0]) != files[0]  # type: ignore[arg-type]
