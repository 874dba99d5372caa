"""The workloads continuum runs: W1 image classification (TensorFlow
MobileNetV2), W2 translation (PyTorch MarianMT) and the bring-your-own example.

This package never imports `continuum`: it is copied as-is into the workload
container images, and the only things it shares with the orchestrator are the
environment variables and the record columns defined in `contract.py`."""
