"""Workloads register here under an app name, with the model of their own
`[workload.params]` keys. Each has a server side (runs on the remote node next
to its MQTT broker) and an endpoint side (runs on every endpoint), both plain
`python -m` entry points so the orchestrator can start them in any node."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    description: str
    params: type[BaseModel]
    server_module: str
    endpoint_module: str


REGISTRY: dict[str, WorkloadKind] = {}


def register(kind: WorkloadKind) -> WorkloadKind:
    REGISTRY[kind.name] = kind
    return kind


class ImageClassificationParams(BaseModel):
    """W1: an image is pre-processed on the endpoint (resize, JPEG), sent to the
    remote node and classified by MobileNetV2; ~20 bytes come back."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    resolution: int = Field(default=224, ge=32, le=1024)
    jpeg_quality: int = Field(default=90, ge=10, le=100)
    bank_size: int = Field(default=16, ge=1, le=1000)
    qos: int = Field(default=0, ge=0, le=1)


register(
    WorkloadKind(
        name="image_classification",
        description="W1: MobileNetV2 image classification over MQTT",
        params=ImageClassificationParams,
        server_module="continuum.workloads.image_classification.server",
        endpoint_module="continuum.workloads.image_classification.endpoint",
    )
)
