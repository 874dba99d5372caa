"""An experiment's HTML twin (experiments/NAME/report.html): its markdown
reports, as the repository shows them, with their figures, then its runs'
distributions overlaid per arm, interactive. Built by the same code for
every experiment, from the same files the markdown was written from (the
results/ folder: figures, tables, and the run folders of each arm).

Two forms. In the repository the page carries neither Plotly (third-party
code is not committed) nor the PNGs (they are beside it): it loads the
library from .local/share/continuum/, which `place_library` fills (setup.sh
and every `continuum report` of an experiment do), and each figure says so
where it is missing. `--self-contained` writes a page that carries both, one
file to pass on with a paper's artifact."""

from __future__ import annotations

import base64
import mimetypes
import os
import re
import shutil
from pathlib import Path

import markdown
import numpy as np
import pandas as pd
import plotly
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from continuum.errors import ContinuumError
from continuum.results import compare, html
from continuum.results.tables import METRICS

REPO = Path(__file__).resolve().parents[2]
LIBRARY = f"plotly-{plotly.__version__}.min.js"
SHOWN = ("e2e_ms", "uplink_ms", "server_ms", "downlink_ms")
OVER_TIME_POINTS = 2000  # requests drawn per arm over time
CDF_POINTS = 400  # points per drawn CDF (evenly spaced quantiles): the runs' CSVs keep every request


def is_experiment(folder: Path) -> bool:
    """An experiment's folder (a README and a run script or a results folder), not a run's."""
    folder = Path(folder)
    return not (folder / "raw").is_dir() and (folder / "README.md").exists() and \
        ((folder / "run").exists() or (folder / "results").is_dir())


def library_path(root: Path = REPO) -> Path:
    return root / ".local" / "share" / "continuum" / LIBRARY


def place_library(root: Path = REPO) -> Path:
    """Plotly's JavaScript, from the installed package, where the repository's pages load it (gitignored)."""
    target = library_path(root)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
        tmp = target.with_suffix(".part")
        shutil.copyfile(source, tmp)
        tmp.replace(target)
    return target


def write(folder: Path, out: Path | None = None, self_contained: bool = False) -> Path:
    """FOLDER/report.html (or OUT) for the experiment in FOLDER."""
    folder = Path(folder).resolve()
    if not is_experiment(folder):
        raise ContinuumError(f"{folder} is not an experiment folder (one with README.md and a run script or results/, "
                             "as under experiments/) nor a run folder (one with raw/)")
    out = (out or folder / "report.html").resolve()
    title = _title(folder)
    reports = [p for p in [folder / "report.md", *sorted((folder / "results").glob("*.md"))] if p.exists()]
    body = [f"<h1>{html.esc(title)}</h1>",
            f"<p class='note'>The HTML twin of {html.esc(', '.join(str(p.relative_to(folder)) for p in reports) or 'README.md')} "
            f"in {html.esc(folder.name)}/ (written by <code>continuum report {html.esc(_shown(folder))}</code>): the same "
            "text and figures, then the runs' distributions per arm, interactive.</p>",
            "<nav>" + "".join(f"<a href='#{_anchor(p, folder)}'>{html.esc(str(p.relative_to(folder)))}</a>" for p in reports)
            + "<a href='#runs'>runs</a><a href='#about'>README</a></nav>"]
    for md in reports:
        body.append(f"<section id='{_anchor(md, folder)}' class='markdown'><h2 class='file'>{html.esc(str(md.relative_to(folder)))}"
                    f"</h2>{_render(md, out.parent, self_contained)}</section>")
    body.append(_runs(folder))
    body.append(f"<section id='about'><h2>README.md</h2><details><summary>how the experiment runs</summary>"
                f"{_render(folder / 'README.md', out.parent, self_contained)}</details></section>")
    library = None
    if not self_contained:
        library = os.path.relpath(place_library(), out.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html.page(title, body, library=library))
    return out


def _title(folder: Path) -> str:
    for line in (folder / "README.md").read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return folder.name


def _shown(folder: Path) -> str:
    try:
        return str(folder.relative_to(REPO))
    except ValueError:
        return str(folder)


def _anchor(path: Path, folder: Path) -> str:
    return "md-" + re.sub(r"[^a-z0-9]+", "-", str(path.relative_to(folder)).lower()).strip("-")


def _render(md: Path, page_dir: Path, self_contained: bool) -> str:
    """A markdown file as HTML, its relative links and images pointing where they are from the page
    (or, self-contained, the images inlined)."""
    text = markdown.markdown(md.read_text(), extensions=["tables", "fenced_code"])

    def fix(m: re.Match) -> str:
        attr, target = m.group(1), m.group(2)
        if re.match(r"^([a-z]+:|#|/)", target):
            return m.group(0)
        where = (md.parent / target).resolve()
        if self_contained and attr == "src" and where.exists():
            kind = mimetypes.guess_type(where.name)[0] or "application/octet-stream"
            return f'{attr}="data:{kind};base64,{base64.b64encode(where.read_bytes()).decode()}"'
        if self_contained and attr == "href":
            return f'{attr}="{html.esc(_shown(where))}" title="a file of the repository"'
        return f'{attr}="{html.esc(os.path.relpath(where, page_dir))}"'

    return re.sub(r'(src|href)="([^"]+)"', fix, text)


def _differences(pooled: dict[str, pd.DataFrame]) -> str:
    """Each arm against the first of its set (arms in one folder: lte/mahimahi against
    lte/mahimahi-link; top-level arms against the first of them), as `continuum compare`
    judges two runs: per metric the median and P99 ratios and the KS distance, with the verdict."""
    sets: dict[str, list[str]] = {}
    for arm in pooled:
        sets.setdefault(arm.rpartition("/")[0], []).append(arm)
    pairs = [(arms[0], arm) for arms in sets.values() for arm in arms[1:]]
    if not pairs:
        return ""
    tol = compare.Tolerance()
    head = ("<table><tr><th class='l'>arm</th><th class='l'>against</th>"
            + "".join(f"<th>{html.esc(METRICS[m].strip())} median ×</th><th>P99 ×</th><th>KS</th>" for m in SHOWN) + "</tr>")
    rows = []
    for base, arm in pairs:
        got = {r["metric"]: r for r in compare.metric_rows(pooled[base], pooled[arm], "all", tol)}
        cells = []
        for m in SHOWN:
            r = got.get(m)
            if r is None or r.get("ks") is None:
                cells.append("<td>-</td><td>-</td><td>-</td>")
                continue
            verdict = "ok" if r["verdict"] == "agrees" else "bad" if r["verdict"] == "diverges" else ""
            cells.append(f"<td>{_num(r['median_ratio'])}</td><td>{_num(r['p99_ratio'])}</td>"
                         f"<td class='{verdict}' title='{html.esc(r['verdict'])}' data-arm='{html.esc(arm)}' data-metric='{m}' "
                         f"data-stat='ks'>{r['ks']:.3f}</td>")
        rows.append(f"<tr><td class='l'>{html.esc(arm)}</td><td class='l'>{html.esc(base)}</td>{''.join(cells)}</tr>")
    return ("<p class='note'>Each arm against the first arm of its folder: ratios arm / that arm; KS: the two-sample "
            f"Kolmogorov-Smirnov distance, green where the metric agrees (median within ±{tol.median:.0%}, KS at most "
            f"{tol.ks:g}), red where it diverges, as <code>continuum compare</code> judges.</p>" + head + "".join(rows) + "</table>")


def _num(v: float | None) -> str:
    return "-" if v is None or not np.isfinite(v) else f"{v:.2f}"


def _runs(folder: Path) -> str:
    """Every run folder under results/, grouped by the folder holding it (an arm), its requests'
    distributions overlaid per metric, with each arm's count, median and P99."""
    arms: dict[str, list[pd.DataFrame]] = {}
    results = folder / "results"
    for csv in sorted(results.rglob("requests.csv")) if results.is_dir() else []:
        if not (csv.parent / "manifest.json").exists():
            continue
        arm = "/".join(p for p in csv.parent.parent.relative_to(results).parts if p != "runs") or "runs"
        df = pd.read_csv(csv, usecols=lambda c: c in {"phase", "status", "t_drawn", *SHOWN})
        df = df[df["phase"] == "measure"]
        if "t_drawn" in df and len(df):  # each run on its own axis: seconds since its first measured request
            df = df.assign(t_s=(df["t_drawn"] - df["t_drawn"].min()) / 1e9)
        arms.setdefault(arm, []).append(df)
    head = "<section id='runs'><h2>Runs</h2>"
    if not arms:
        return (head + "<p class='note'>No run folders under results/ here: they are not committed (each is megabytes of "
                "logs). The experiment's run script makes them, and this page then shows their distributions.</p></section>")
    pooled = {arm: pd.concat(frames, ignore_index=True) for arm, frames in arms.items()}
    rows = []
    for arm, df in pooled.items():
        ok = df[df["status"] == "ok"]
        cells = "".join(
            f"<td data-arm='{html.esc(arm)}' data-metric='{m}' data-stat='{q}'>"
            f"{np.percentile(ok[m].dropna(), p):.2f}</td>" if m in ok and ok[m].notna().any() else "<td>-</td>"
            for m in SHOWN for q, p in (("median", 50), ("p99", 99)))
        rows.append(f"<tr><td class='l'>{html.esc(arm)}</td><td>{len(arms[arm])}</td>"
                    f"<td data-arm='{html.esc(arm)}' data-stat='answered'>{len(ok)}</td><td>{len(df)}</td>{cells}</tr>")
    table = ("<table><tr><th class='l'>arm</th><th>runs</th><th>answered</th><th>measured</th>"
             + "".join(f"<th>{html.esc(METRICS[m].strip())} {q} ms</th>" for m in SHOWN for q in ("median", "P99"))
             + "</tr>" + "".join(rows) + "</table>")
    palette = html.PALETTE if len(pooled) <= len(html.PALETTE) else plotly.colors.qualitative.Dark24
    table += _differences(pooled)
    fig = make_subplots(rows=2, cols=2, subplot_titles=[METRICS[m].strip() for m in SHOWN], vertical_spacing=0.12)
    for k, m in enumerate(SHOWN):
        for i, (arm, df) in enumerate(pooled.items()):
            x = df.loc[df["status"] == "ok", m].dropna().astype(float).to_numpy() if m in df else np.array([])
            if not len(x):
                continue
            q = np.linspace(0, 1, min(CDF_POINTS, len(x)))
            fig.add_trace(go.Scatter(x=np.quantile(x, q), y=q, mode="lines", name=arm, legendgroup=arm, showlegend=k == 0,
                                     line={"shape": "hv", "color": palette[i % len(palette)]},
                                     hovertemplate=f"{arm}: " + "%{x:.2f} ms, %{y:.1%} at or below"), row=k // 2 + 1, col=k % 2 + 1)
        fig.update_xaxes(type="log", title_text="ms (log)", row=k // 2 + 1, col=k % 2 + 1)
    fig.update_yaxes(range=[0, 1])
    fig.update_layout(height=760, margin={"t": 40, "b": 40, "l": 50, "r": 20}, legend={"font": {"size": 10}})
    return (head + f"<p class='note'>{sum(len(f) for f in arms.values())} run folders under results/ in {len(arms)} arms "
            "(an arm: the folder holding its runs; its repetitions pooled). Measured requests; the percentiles are of "
            f"answered ones, each of its own metric. CDFs drawn at up to {CDF_POINTS} quantiles; the runs' requests.csv "
            "keep every request.</p>" + table + html.figure_html(fig, "runs") + _over_time(pooled, palette) + "</section>")


def _over_time(pooled: dict[str, pd.DataFrame], palette: list[str]) -> str:
    """Each arm's end-to-end latency over its runs' own time (a run's repetitions overlaid), at most
    OVER_TIME_POINTS per arm, evenly spaced in time."""
    fig = go.Figure()
    for i, (arm, df) in enumerate(pooled.items()):
        ok = df[(df["status"] == "ok") & df["e2e_ms"].notna()] if "t_s" in df and "e2e_ms" in df else df.iloc[0:0]
        if not len(ok):
            continue
        ok = ok.sort_values("t_s")
        if len(ok) > OVER_TIME_POINTS:
            ok = ok.iloc[np.linspace(0, len(ok) - 1, OVER_TIME_POINTS).round().astype(int)]
        fig.add_trace(go.Scatter(x=ok["t_s"], y=ok["e2e_ms"], mode="markers", name=arm, marker={"size": 3, "color": palette[i % len(palette)]},
                                 hovertemplate=f"{arm}: " + "%{y:.1f} ms at %{x:.1f} s"))
    if not fig.data:
        return ""
    fig.update_yaxes(type="log", title_text="end-to-end ms (log)")
    fig.update_xaxes(title_text="s since each run's first measured request")
    fig.update_layout(height=420, margin={"t": 20, "b": 40, "l": 60, "r": 20}, legend={"font": {"size": 10}})
    return (f"<p class='note'>End-to-end latency over time, each run on its own axis (at most {OVER_TIME_POINTS} "
            "requests per arm drawn, evenly spaced).</p>" + html.figure_html(fig, "runs-over-time"))
