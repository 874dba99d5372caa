"""The W1 server takes Keras weights from the model cache when the file is
there (the path a user with internet takes; docs/workloads.md). Real ImageNet
weights cannot be downloaded here, so the test writes a seeded weight file of
the right architecture under the expected name and checks it is the one used."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from workloads.contract import ServerSettings
from workloads.image_classification import server as w1


def test_w1_server_uses_weights_from_the_model_cache(tmp_path):
    import tensorflow as tf

    tf.keras.utils.set_random_seed(42)
    reference = tf.keras.applications.MobileNetV2(weights=None)
    (tmp_path / "mobilenet_v2").mkdir()
    reference.save_weights(str(tmp_path / "mobilenet_v2" / w1.WEIGHTS))

    settings = ServerSettings(broker_host="127.0.0.1", broker_port=1883, qos=0, seed=1, repetition=1, params={},
                              threads=1, server_log="", ready_file="", model_cache=str(tmp_path))
    cached = w1.Server(settings)
    assert cached.info["weights"].startswith("imagenet (") and str(tmp_path) in cached.info["weights"]

    img = np.random.default_rng(0).integers(0, 255, (224, 224, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=95)
    x = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"), dtype=np.float32)[None] / 127.5 - 1.0
    want = int(reference(x, training=False).numpy()[0].argmax())
    assert cached.process(buf.getvalue()).decode().startswith(f"class {want} ")

    random = w1.Server(ServerSettings(**{**vars(settings), "model_cache": str(tmp_path / "empty")}))
    assert random.info["weights"].startswith("random, seed 1")
