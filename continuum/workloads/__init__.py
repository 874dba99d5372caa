"""The apps an experiment can name in `workload.app`, with the model of their
own `[workload.params]` keys. The apps themselves live in the top-level
`workloads/` package (copied into the container images); this registry is the
orchestrator's view of them: how to start each side as a process or a
container, and what payload sizes they default to."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    description: str
    params: type[BaseModel] | None  # None: free-form, handed to the app as JSON
    default_payload: tuple[int, int]  # min, max bytes when [workload.payload] does not say
    payload_limits: tuple[int, int] | None = None  # the sizes the app can make at all (None: any)
    payload_unit: str = "requests"  # what a payload is, for error messages
    builtin: bool = True  # runs as `python -m workloads endpoint|server NAME`
    images: tuple[str, str] = ("", "")  # endpoint, server image (continuum images build)


REGISTRY: dict[str, WorkloadKind] = {}


def register(kind: WorkloadKind) -> WorkloadKind:
    REGISTRY[kind.name] = kind
    return kind


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ImageClassificationParams(_Params):
    """W1: images are pre-processed on the endpoint (decode, resize to 224x224,
    normalise) and classified by MobileNetV2 (TensorFlow) on the remote node."""

    bank_size: int = Field(default=16, ge=1, le=1000)


class TranslationParams(_Params):
    """W2: phrases translated by MarianMT (opus-mt-en-de architecture, PyTorch), greedy decoding."""

    bank_size: int = Field(default=64, ge=1, le=10000)
    max_output_tokens: int = Field(default=128, ge=1, le=512)
    max_output_ratio: float = Field(default=1.3, gt=0, le=10)


register(WorkloadKind("image_classification", "W1: MobileNetV2 (TensorFlow) image classification over MQTT",
                      ImageClassificationParams, (10_000, 100_000), (1000, 100_000),
                      images=("continuum/w1-endpoint", "continuum/w1-server")))
register(WorkloadKind("translation", "W2: MarianMT (PyTorch) English-German translation over MQTT",
                      TranslationParams, (100, 200), (40, 2000), "phrases", images=("continuum/w2-endpoint", "continuum/w2-server")))
register(WorkloadKind("custom", "bring your own: images and/or commands named in [workload.custom]",
                      None, (1000, 1000), builtin=False))
