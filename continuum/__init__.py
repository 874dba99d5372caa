"""continuum: one experiment file -> emulated endpoint/edge/cloud nodes behind a
trace-driven cellular link -> a result folder with tables, plots and a manifest."""

__version__ = "0.1.0"
