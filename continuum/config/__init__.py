"""Experiment files: `raw` is the file as written, `resolve` turns it into the
frozen ExperimentSpec (`spec`) the rest of the orchestrator uses. This layer
imports neither the network plan nor the providers nor any edge system: the
caller (continuum/experiment.py) names the providers' kinds and hands in the
edge systems."""

from continuum.config.spec import AppSpec, CellMember, CellSpec, ExperimentSpec, Machine, NodeSpec

__all__ = ["AppSpec", "CellMember", "CellSpec", "ExperimentSpec", "Machine", "NodeSpec"]
