"""Experiment files: `raw` is the file as written, `resolve` turns it into the
frozen ExperimentSpec the rest of the orchestrator uses."""

from continuum.config.resolve import AppSpec, CellMember, CellSpec, ExperimentSpec, NodeSpec, load

__all__ = ["AppSpec", "CellMember", "CellSpec", "ExperimentSpec", "NodeSpec", "load"]
