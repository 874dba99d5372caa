"""Server side of W1: MobileNetV2 in TensorFlow/Keras, loaded once.

Pretrained ImageNet weights are used when the Keras weight file is in the
model cache ($CONTINUUM_MODEL_CACHE/mobilenet_v2/, see docs/workloads.md);
nothing is downloaded at run time. Otherwise the same architecture runs with
seeded random weights: the latency, which is what the testbed measures, is
the same, and `info["weights"]` says which ran. The first inferences (graph
tracing) happen before the server reports ready."""

from __future__ import annotations

import io
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from workloads.contract import ServerSettings  # noqa: E402

WEIGHTS = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_224.h5"


class Server:
    def __init__(self, s: ServerSettings) -> None:
        import tensorflow as tf

        try:
            tf.config.threading.set_intra_op_parallelism_threads(max(1, s.threads))
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:  # TensorFlow already started in this process (tests): keep its threads
            pass
        tf.keras.utils.set_random_seed(s.seed)
        cached = Path(s.model_cache) / "mobilenet_v2" / WEIGHTS if s.model_cache else None
        if cached and cached.is_file():
            model, weights = tf.keras.applications.MobileNetV2(weights=str(cached)), f"imagenet ({cached})"
        else:
            model, weights = tf.keras.applications.MobileNetV2(weights=None), f"random, seed {s.seed} (no {WEIGHTS} in the model cache)"
        self._infer = tf.function(lambda x: model(x, training=False))
        warm = np.zeros((1, 224, 224, 3), np.float32)
        for _ in range(3):
            self._infer(warm)
        self.info = {"app": "image_classification", "model": "MobileNetV2", "framework": "tensorflow",
                     "tensorflow": tf.__version__, "weights": weights, "threads": s.threads,
                     "parameters": int(model.count_params())}

    def process(self, payload: bytes) -> bytes:
        img = Image.open(io.BytesIO(payload)).convert("RGB")
        x = np.asarray(img, dtype=np.float32)[None] / 127.5 - 1.0
        probs = self._infer(x).numpy()[0]
        k = int(probs.argmax())
        return f"class {k} p={probs[k]:.3f}".encode()
