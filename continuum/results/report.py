"""Turn a run folder's raw files (per-endpoint and per-server CSVs, link logs,
node samples) into requests.csv, summary.json, the printed table and plots.
The same function serves the end of `continuum run` and `continuum report`."""

from __future__ import annotations

from pathlib import Path

from continuum.errors import ContinuumError
from continuum.edge.registry import SYSTEMS
from continuum.results import apps, cell, events, html, load, plots, tables, timeline


def build(run_dir: Path) -> tuple[dict, list[Path]]:
    run_dir = Path(run_dir)
    raw = run_dir / "raw"
    if not raw.is_dir():
        raise ContinuumError(f"{run_dir} is not a run folder (no raw/ inside) nor an experiment's (README.md and a run script or "
                             "results/); give a folder under runs/ or experiments/")
    df = tables.merge(sorted(raw.glob("requests-*.csv")), sorted(raw.glob("server-*.csv")))
    for s in SYSTEMS.values():  # each edge system's per-request columns (from its records: no spec needed)
        df = s.add_records(run_dir, df)
    mix = apps.apps_of(run_dir)
    df = apps.label(df, mix)
    summary = tables.summarize(df)
    slow = tables.server_too_slow(summary, df, sorted(raw.glob("server-*.csv")))
    if slow is not None:
        summary["server_too_slow"] = slow
    per_app = apps.summarize(df, mix)
    if per_app is not None:
        summary["apps"] = per_app
    offered = load.summarize(run_dir, df)
    if offered is not None:
        summary["load"] = offered
    for s in SYSTEMS.values():
        own = s.summarize(run_dir, df) if s.summary_key else None
        if own is not None:
            summary[s.summary_key] = own
    c = cell.summarize(run_dir, df, timeline.of_requests(df))
    if c is not None:
        summary["cell"] = c
    changes = events.summarize(run_dir, df)
    if changes is not None:
        summary["timeline"] = changes
    ran = _srsran(run_dir, df)
    if ran is not None:
        summary["srsran"] = ran
    tables.write(df, summary, run_dir)
    made = plots.all_plots(run_dir, df, summary, more=lambda p: [j for s in SYSTEMS.values() for j in s.plots(p)])
    made.append(html.write_run(run_dir, df, summary))  # report.html: the page a browser opens, offline
    return summary, made


def _srsran(run_dir: Path, df) -> dict | None:
    """mobile.mode = "srsran": srsENB's KPIs over the measured requests' span."""
    report = run_dir / "srsran" / "enb-report.json"
    m = df[df["phase"] == "measure"] if len(df) else df
    if not report.exists() or not len(m):
        return None
    from srsran_integration import kpis, lte

    start, end = int(m["t_drawn"].min()), int(m["t_received"].max())
    out = kpis.summarize(kpis.enb_report(report), start, end)
    pace = kpis.pace(kpis.tti_samples(run_dir / "srsran", lte.PACE_PCAP), start, end)
    if out is not None and pace is not None:
        out["pace"] = pace
    return out
