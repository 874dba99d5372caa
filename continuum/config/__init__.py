"""Experiment files: `raw` is the file as written, `resolve` turns it into the
frozen ExperimentSpec the rest of the orchestrator uses."""

from continuum.config.resolve import ExperimentSpec, NodeSpec, load

__all__ = ["ExperimentSpec", "NodeSpec", "load"]
