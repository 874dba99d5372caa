"""The workloads continuum runs: W1 image classification (TensorFlow
MobileNetV2), W2 translation (PyTorch MarianMT) and the bring-your-own example.

This package never imports `continuum`: it is copied as-is into the workload
container images, and the only things it shares with the orchestrator are the
environment variables and the record columns defined in `contract.py`."""

from pathlib import Path


def apps() -> tuple[str, ...]:
    """The built-in apps: each a folder here with its two sides (endpoint.py, server.py). The folder is
    the one definition of the name; continuum's catalog (continuum/workloads) registers these."""
    here = Path(__file__).parent
    return tuple(sorted(p.name for p in here.iterdir() if (p / "endpoint.py").is_file() and (p / "server.py").is_file()))
