"""The apps an experiment can name in `workload.app`, with the model of their
own `[workload.params]` keys. The apps themselves live in the top-level
`workloads/` package (copied into the container images); this registry is the
orchestrator's view of them: how to start each side as a process or a
container, and what payload sizes they default to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

import workloads


@dataclass(frozen=True)
class WorkloadKind:
    name: str
    description: str
    params: type[BaseModel] | None  # None: free-form, handed to the app as JSON
    default_payload: tuple[int, int]  # min, max bytes when [workload.payload] does not say
    payload_limits: tuple[int, int] | None = None  # the sizes the app can make at all (None: any)
    payload_unit: str = "requests"  # what a payload is, for error messages
    builtin: bool = True  # runs as `python -m workloads endpoint|server NAME`
    images: tuple[str, str] = ("", "")  # endpoint, server image (continuum images build); empty: processes only
    requirements: str | None = None  # what the server image installs from the wheelhouse (workloads/requirements-*.txt)
    payload_from_params: bool = False  # request sizes follow the app's own params, not [workload.payload]
    # Debian packages its server needs beyond the workload role's common ones (workload_debian_packages):
    # the role installs them on the offload node's machine, the qemu guest image and continuum/host carry them
    debian_packages: tuple[str, ...] = ()
    # Its rate per endpoint from its own params, once the run's traces are made (None: [workload] rate as written):
    # (app, spec) -> (requests/s per endpoint, a line that says how), or None when the params give none
    rate_from_params: Callable[[Any, Any], tuple[float, str] | None] | None = None


REGISTRY: dict[str, WorkloadKind] = {}


def register(kind: WorkloadKind) -> WorkloadKind:
    if kind.builtin and kind.name not in workloads.apps():
        raise ValueError(f"{kind.name}: no workloads/{kind.name}/ with endpoint.py and server.py; built-in apps: {', '.join(workloads.apps())}")
    REGISTRY[kind.name] = kind
    return kind


def debian_packages() -> tuple[str, ...]:
    """Every built-in app's server packages (what a machine that may serve any app needs)."""
    return tuple(sorted({p for k in REGISTRY.values() for p in k.debian_packages}))


def images() -> dict[str, tuple[str, str | None]]:
    """Each built-in app's images: image -> (its Dockerfile, the requirements it installs)."""
    return {image: (f"workloads/{k.name}/{side}.Dockerfile", k.requirements if side == "server" else None)
            for k in REGISTRY.values() for side, image in zip(("endpoint", "server"), k.images) if image}


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
                      images=("continuum/w1-endpoint", "continuum/w1-server"), requirements="requirements-tensorflow.txt"))
register(WorkloadKind("translation", "W2: MarianMT (PyTorch) English-German translation over MQTT",
                      TranslationParams, (100, 200), (40, 2000), "phrases", images=("continuum/w2-endpoint", "continuum/w2-server"),
                      requirements="requirements-transformers.txt", debian_packages=("python3-torch",)))
class SmartStadiumParams(_Params):
    """SMEC's SS, scaled (workloads/smart_stadium): H.264 chunks transcoded to each rendition."""

    width: int = Field(default=1280, ge=64, le=3840)
    height: int = Field(default=720, ge=64, le=2160)
    fps: int = Field(default=60, ge=1, le=120)
    chunk_frames: int = Field(default=6, ge=1, le=120)
    bitrate_mbps: float = Field(default=2.2, gt=0, le=100)
    renditions: str = Field(default="480,240", pattern=r"^[0-9]{2,4}(,[0-9]{2,4})*$")
    bank_size: int = Field(default=4, ge=1, le=100)


class AugmentedRealityParams(_Params):
    """SMEC's AR, scaled (workloads/augmented_reality): 1080p frames, SSDlite at `input` x `input`."""

    input: int = Field(default=224, ge=96, le=640)
    frame_bytes: int = Field(default=33_000, ge=1000, le=2_000_000)
    bank_size: int = Field(default=8, ge=1, le=200)


class VideoConferencingParams(_Params):
    """SMEC's VC, scaled (workloads/video_conferencing): 320p frames upscaled x2 by ESPCN."""

    width: int = Field(default=480, ge=32, le=1920)
    height: int = Field(default=320, ge=32, le=1080)
    frame_bytes: int = Field(default=3300, ge=200, le=500_000)
    bank_size: int = Field(default=16, ge=1, le=500)


class FileTransferParams(_Params):
    """SMEC's FT: random files of [workload.payload]'s sizes."""

    bank_size: int = Field(default=4, ge=1, le=64)


register(WorkloadKind("smart_stadium", "SMEC's smart stadium: H.264 chunks transcoded to lower resolutions (PyAV, libx264)",
                      SmartStadiumParams, (1, 1), payload_from_params=True, debian_packages=("python3-av",)))
register(WorkloadKind("augmented_reality", "SMEC's AR: object detection (SSDlite, PyTorch) on camera frames",
                      AugmentedRealityParams, (1, 1), payload_from_params=True,
                      debian_packages=("python3-torch", "python3-torchvision")))
register(WorkloadKind("video_conferencing", "SMEC's VC: x2 super-resolution (ESPCN, PyTorch) of 320p frames",
                      VideoConferencingParams, (1, 1), payload_from_params=True, debian_packages=("python3-torch",)))
register(WorkloadKind("file_transfer", "SMEC's FT: best-effort file uploads (1 KB-10 MB), digested on the server",
                      FileTransferParams, (1000, 10_000_000), (1000, 100_000_000), "files"))
class FileDownloadParams(_Params):
    """A file download (workloads/file_download): `bank_size` files of `file_bytes`, asked for in turn."""

    bank_size: int = Field(default=4, ge=1, le=64)
    file_bytes: int = Field(default=4_000_000, ge=1, le=100_000_000)


register(WorkloadKind("file_download", "a file download: a 32-byte request, the file's bytes back (MECaNIC's caching evaluation)",
                      FileDownloadParams, (32, 32), payload_from_params=True, payload_unit="files"))


class EdgeTasksParams(_Params):
    """MOSAIC's edge tasks (workloads/edge_tasks): the policy and its settings are in [edge.admission]."""


register(WorkloadKind("edge_tasks", "MOSAIC's six task classes, queued and admitted on the edge node ([edge.admission])",
                      EdgeTasksParams, (1, 1), payload_from_params=True, payload_unit="tasks",
                      debian_packages=("redis-server", "python3-torch", "python3-torchvision")))
register(WorkloadKind("custom", "bring your own: images and/or commands named in [workload.custom]",
                      None, (1000, 1000), builtin=False))


class FlowsParams(_Params):
    """Flows to the UEs (workloads/flows, issue 41): sizes from a published CDF (workloads/flows/sizes.py) or fixed."""

    sizes: Literal["web-search", "data-mining"] = "web-search"
    max_bytes: int = Field(default=10_000_000, ge=1, le=1_000_000_000)  # the distribution cut here (its largest flows take minutes)
    size_bytes: int | None = Field(default=None, ge=1, le=1_000_000_000)  # every flow this size instead
    # the offered load as a share of the cell (its time shared equally: the mean of the UEs' downlink channels);
    # sets each endpoint's rate at the run's start (in place of [workload] rate)
    load: float | None = Field(default=None, gt=0, le=10)


def flows_rate(app: Any, spec: Any) -> tuple[float, str] | None:
    """`load` as requests per second per endpoint: load x the cell's capacity / (UEs x the mean flow size)."""
    from continuum.traces import mean_mbit
    from workloads.flows.sizes import mean_bytes

    p = app.workload.params
    if not p.get("load"):
        return None
    mean = float(p.get("size_bytes") or mean_bytes(str(p.get("sizes", "web-search")), int(p.get("max_bytes", 10_000_000))))
    rates: list[float] = []
    for e in app.endpoints:
        ref = spec.cell.channel(e, spec.cell.start(e), "downlink") if spec.cell is not None else None
        got = mean_mbit((ref or spec.mobile.downlink).path)
        if got is None:
            raise ValueError(f"workload.params.load: {e}'s downlink trace is not there to measure the cell's capacity")
        rates.append(got)
    capacity = sum(rates) / len(rates)
    rate = float(p["load"]) * capacity * 1e6 / 8 / mean / len(app.endpoints)
    return rate, (f"{app.name}: load {float(p['load']):g} of the cell's {capacity:.1f} Mbit/s (its time shared equally by "
                  f"{len(app.endpoints)} UEs), flows of {mean / 1000:.0f} KB on average: {rate:.3g} flows/s per UE")


register(WorkloadKind("flows", "flows to the UEs: a 24-byte request, a flow of a published size distribution back on its own TCP connection "
                      "(pDCell's evaluation; [transport])", FlowsParams, (24, 24), payload_from_params=True, payload_unit="flows",
                      rate_from_params=flows_rate))
