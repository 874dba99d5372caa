"""The edge-system interface: everything the orchestrator asks of an edge
system (SMEC's manager, MOSAIC's admission, Tutti's notices, MECaNIC's
ingress stage, pDCell's transport), so that nothing outside the system's
package needs to know it. The config half
(its [edge.*] table, settings, needs) is continuum/config/edge.py's
EdgeSection; this adds the run's half (daemons, the workload's environment,
calibration), the results' half (records, summary, tables, plots) and cleanup.
Every method has a do-nothing default: a system overrides what it uses."""

from __future__ import annotations

import contextlib
import importlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import pandas as pd
from pydantic import BaseModel

from continuum.config import AppSpec, ExperimentSpec
from continuum.config.edge import Draft
from continuum.config.validation import Issues
from continuum.runtime import Node

if TYPE_CHECKING:
    from continuum.network.plan import Plan
    from continuum.results.plots import Plot, PlotJob
    from continuum.results.timeline import Panel, Timeline


@dataclass
class EdgeRun:
    """What a system gets to start its parts in a run: the offload node (where the
    servers run) and the run's bookkeeping. `watch`: a process that must live
    while requests flow (its death ends the run, named, pointing at its log)."""

    spec: ExperimentSpec
    node: Node
    run_dir: Path
    run_id: str
    undo: contextlib.ExitStack
    phase: Callable[[str], None]
    watch: Callable[[str, subprocess.Popen, Path], None]
    note: Callable[[dict[str, Any]], None]  # merged into the system's manifest entry
    nodes: dict[str, Node] = field(default_factory=dict)  # every node of the run, by name (a system with parts beside the UEs)


class EdgeSystem:
    """One edge system, registered once (continuum/edge/registry.py); its settings are what its
    `resolve` returned, handed back to every other verb (ExperimentSpec.edge holds them)."""

    name: ClassVar[str] = ""
    section: ClassVar[str] = ""
    table: ClassVar[str] = ""
    title: ClassVar[str] = ""
    switch: ClassVar[str] = ""
    manages: ClassVar[str | None] = None
    model: ClassVar[type[BaseModel]] = BaseModel
    # Folders of the repository (beside continuum/) whose code the node-side processes import.
    node_code: ClassVar[tuple[str, ...]] = ()
    # Top-level keys it owns in manifest.json and in summary.json (None: none).
    manifest_key: ClassVar[str | None] = None
    summary_key: ClassVar[str | None] = None

    # the experiment file (continuum/config/edge.py)
    def slo_defaults(self, table: Any) -> tuple[float, float | None] | None:
        return None

    def resolve(self, table: Any, draft: Draft, ctx: Issues) -> Any | None:
        return None

    def needs(self, settings: Any) -> frozenset[str]:
        return frozenset()

    def stays_behind(self, settings: Any) -> str | None:
        """Every part of a system is taken to be tied to the offload node (a relocation with it is
        refused) unless the system says what moves."""
        return f"{self.title} ({f'[edge.{self.section}]' if self.section else self.switch}) runs on the offload node only"

    # before anything is built
    def host_problems(self, settings: Any, spec: ExperimentSpec) -> list[str]:
        """What this machine lacks for the system as configured (empty: ready)."""
        return []

    def describe(self, settings: Any, spec: ExperimentSpec) -> list[str]:
        """Its lines of `continuum run --dry-run`'s plan: what it will run, where, with what settings."""
        return [self.title]

    def manifest(self, settings: Any | None, spec: ExperimentSpec) -> dict[str, Any] | None:
        """Its entry in manifest.json under manifest_key (settings None: it does not run)."""
        return None

    # the run
    def link_args(self, settings: Any, spec: ExperimentSpec, plan: Plan, logs: Path) -> list[str]:
        """Its options of the emulator (mahimahi-link forward), whose logs go to `logs`."""
        return []

    def server_places(self, settings: Any, spec: ExperimentSpec) -> list[tuple[str, str]]:
        """(node, app) pairs: more nodes that serve an app besides the offload node (an origin the system fetches from)."""
        return []

    def start(self, settings: Any, run: EdgeRun) -> None:
        """Start its parts once the network is verified and the brokers run, before the servers."""

    def server_env(self, settings: Any, spec: ExperimentSpec, app: AppSpec, node: Node, raw: Path) -> dict[str, str]:
        return {}

    def endpoint_env(self, settings: Any, spec: ExperimentSpec, app: AppSpec, broker: str) -> dict[str, str]:
        return {}

    def drain_s(self, settings: Any) -> float:
        """Seconds to keep the servers up after the last answer (its own records' sake)."""
        return 0.0

    # calibration (continuum/calibration.py): an app's service time measured alone
    def concurrency(self, settings: Any, spec: ExperimentSpec, app: AppSpec) -> int | None:
        """How many requests the app's server runs at once under this system (None: no say)."""
        return None

    def calibration_env(self, settings: Any, app: AppSpec) -> dict[str, str]:
        return {}

    def code_files(self, repo: Path, app: AppSpec) -> list[Path]:
        """Files whose change invalidates a cached calibration of this app."""
        return []

    # cleanup
    def leftovers(self, run_id: str | None) -> list[str]:
        return []

    def destroy(self, run_id: str | None, say: Callable[[str], None]) -> int:
        return 0

    # results, from the run folder alone (`continuum report` has no spec)
    def queued_requests(self, manifest: dict) -> bool:
        """Whether it queued requests inside the servers in the run of this manifest.json: what
        the manifest's `server_queue` says since it has one, for the runs written before."""
        return False

    def add_records(self, run_dir: Path, df: pd.DataFrame) -> pd.DataFrame:
        """Its per-request columns beside requests.csv's."""
        return df

    # Where its results live, the one pattern every system's results follow: a package with results.py
    # (summarize(run_dir, df), render(part), optionally time_series(run_dir, df, tl)) and plots.py
    # (figures(p, part) -> the files written), imported only when a run's results are made (None: none).
    results_package: ClassVar[str | None] = None

    def summarize(self, run_dir: Path, df: pd.DataFrame) -> dict | None:
        """Its part of summary.json (under summary_key), None when the run has no records of it."""
        if self.results_package is None:
            return None
        return importlib.import_module(f"{self.results_package}.results").summarize(run_dir, df)

    def render(self, part: dict) -> Any | None:
        """Its part of the summary as a rich table (None: nothing to print)."""
        if self.results_package is None:
            return None
        return importlib.import_module(f"{self.results_package}.results").render(part)

    def time_series(self, run_dir: Path, df: pd.DataFrame, tl: Timeline) -> list[Panel]:
        """Its decisions over the run's time (report.html draws them under the requests and links):
        results.py's time_series(run_dir, df, tl) where its results package has one."""
        if self.results_package is None:
            return []
        made = getattr(importlib.import_module(f"{self.results_package}.results"), "time_series", None)
        return made(run_dir, df, tl) if made is not None else []

    def plots(self, p: Plot) -> list[PlotJob]:
        part = p.summary.get(self.summary_key) if self.summary_key else None
        if self.results_package is None or not part:
            return []
        figures = importlib.import_module(f"{self.results_package}.plots").figures
        return [lambda: figures(p, part)]

