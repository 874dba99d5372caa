"""continuum: one experiment file -> emulated endpoint/edge/cloud nodes behind a
trace-driven cellular link -> a result folder with tables, plots and a manifest."""

from pathlib import Path

__version__ = "0.1.0"
REPO = Path(__file__).resolve().parent.parent  # the checkout: configs, workloads, the emulator build
