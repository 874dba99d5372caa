"""`continuum compare RUN_A RUN_B`: how far two result folders of one
experiment diverge (netns against qemu, KVM against TCG, two machines),
metric by metric and app by app, with a verdict against a stated tolerance.

Why these figures: a median and a P99 ratio say how much slower a run is;
the two-sample Kolmogorov-Smirnov distance (the largest gap between the two
empirical CDFs, 0 to 1) says whether the whole distribution moved, which
two medians can hide. Percentiles are compared, never summed. Every figure
comes from the runs' requests.csv (the measured, answered requests) and
their manifests, so a comparison can be rebuilt from the folders alone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from continuum.errors import ContinuumError
from continuum.results.tables import METRICS

MIN_SAMPLES = 10  # fewer answered requests on either side: no verdict


@dataclass(frozen=True)
class Tolerance:
    """A metric agrees when its medians are within `median` of each other (a ratio) and
    its distributions within `ks` (the KS distance)."""

    median: float = 0.10
    ks: float = 0.20


@dataclass(frozen=True)
class Side:
    label: str
    folder: Path
    requests: pd.DataFrame  # measured requests, every status
    manifest: dict


def load(folder: Path) -> Side:
    folder = Path(folder)
    csv, man = folder / "requests.csv", folder / "manifest.json"
    if not csv.exists() or not man.exists():
        raise ContinuumError(f"{folder} is not a finished run folder (it needs requests.csv and manifest.json; "
                             f"`continuum report {folder}` rebuilds requests.csv from raw/)")
    df = pd.read_csv(csv)
    manifest = json.loads(man.read_text())
    owner = {e: name for name, a in manifest.get("apps", {}).items() for e in a.get("endpoints", [])}
    df = df[df["phase"] == "measure"].assign(app=df["endpoint"].map(owner) if owner else "all")
    return Side(f"{manifest.get('provider', '?')}: {folder.name}", folder, df, manifest)


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(stats.ks_2samp(a, b).statistic)


def metric_rows(a: pd.DataFrame, b: pd.DataFrame, group: str, tol: Tolerance) -> list[dict]:
    rows = []
    ok_a, ok_b = a[a["status"] == "ok"], b[b["status"] == "ok"]
    for col, label in METRICS.items():
        if col not in ok_a or col not in ok_b:
            continue
        x, y = ok_a[col].dropna().astype(float).to_numpy(), ok_b[col].dropna().astype(float).to_numpy()
        if len(x) == 0 and len(y) == 0:
            continue
        row: dict = {"group": group, "metric": col, "label": label.strip(), "n_a": len(x), "n_b": len(y)}
        for side, v in (("a", x), ("b", y)):
            row[f"median_{side}"] = float(np.median(v)) if len(v) else None
            row[f"p99_{side}"] = float(np.percentile(v, 99)) if len(v) else None
        row["median_ratio"] = _ratio(row["median_b"], row["median_a"])
        row["p99_ratio"] = _ratio(row["p99_b"], row["p99_a"])
        row["ks"] = ks_distance(x, y) if len(x) and len(y) else None
        if min(len(x), len(y)) < MIN_SAMPLES or row["median_ratio"] is None or row["ks"] is None:
            row["verdict"] = "too few"
        elif abs(row["median_ratio"] - 1) <= tol.median and row["ks"] <= tol.ks:
            row["verdict"] = "agrees"
        else:
            row["verdict"] = "diverges"
        rows.append(row)
    return rows


def _ratio(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None or a <= 0 else b / a


def _outcome_rows(a: pd.DataFrame, b: pd.DataFrame, group: str, slo_ms: float | None) -> dict:
    """Answered share, and the SLO share (every measured request counts: a lost or dropped one misses it)."""
    out: dict = {"group": group, "requests_a": len(a), "requests_b": len(b),
                 "answered_a": float((a["status"] == "ok").mean()) if len(a) else None,
                 "answered_b": float((b["status"] == "ok").mean()) if len(b) else None, "slo_ms": slo_ms}
    if slo_ms:
        for side, d in (("a", a), ("b", b)):
            out[f"slo_met_{side}"] = float(((d["status"] == "ok") & (d["e2e_ms"].astype(float) <= slo_ms)).mean()) if len(d) else None
        if out["slo_met_a"] is not None and out["slo_met_b"] is not None:
            out["slo_met_difference"] = out["slo_met_b"] - out["slo_met_a"]
    return out


def compare(a: Side, b: Side, tol: Tolerance = Tolerance()) -> dict:
    apps = a.manifest.get("apps") or {}
    groups = ["all"] + (sorted(set(a.requests["app"].dropna()) & set(b.requests["app"].dropna())) if len(apps) > 1 else [])
    metrics, outcomes = [], []
    for g in groups:
        ga = a.requests if g == "all" else a.requests[a.requests["app"] == g]
        gb = b.requests if g == "all" else b.requests[b.requests["app"] == g]
        metrics += metric_rows(ga, gb, g, tol)
        slo = apps.get(g, {}).get("slo_ms") if g != "all" else (next(iter(apps.values())).get("slo_ms") if len(apps) == 1 else None)
        outcomes.append(_outcome_rows(ga, gb, g, slo))
    return {"a": _describe(a), "b": _describe(b), "tolerance": {"median_ratio": tol.median, "ks": tol.ks,
                                                                 "min_samples": MIN_SAMPLES},
            "same_experiment": a.manifest.get("experiment") == b.manifest.get("experiment"),
            "metrics": metrics, "outcomes": outcomes}


def _describe(s: Side) -> dict:
    m = s.manifest
    facts = m.get("provider_facts") or {}
    emulator = ((m.get("mobile") or {}).get("emulator") or {}).get("name", "mahimahi-link")
    return {"folder": str(s.folder), "experiment": m.get("experiment"), "provider": m.get("provider"),
            "emulator": emulator, "accelerator": facts.get("accelerator"), "config_sha256": m.get("config_sha256"),
            "label": s.label}


def side_name(d: dict, other: dict) -> str:
    """What tells a side from the other: its provider, or (one provider) the emulator of its link, or
    (both the same) its own label: its folder, or the group of a campaign's runs it is."""
    if d["provider"] != other["provider"]:
        return str(d["provider"])
    if d.get("emulator") != other.get("emulator"):
        return f"{d['provider']}, emulator {d['emulator']}"
    return str(d.get("label") or d["provider"])


def markdown(c: dict) -> str:
    a, b, t = c["a"], c["b"], c["tolerance"]
    lines = [f"# {a['experiment']}: {side_name(a, b)} (A) against {side_name(b, a)} (B)", "",
             f"- A: `{a['folder']}` ({_where(a)})", f"- B: `{b['folder']}` ({_where(b)})"]
    if not c["same_experiment"]:
        lines.append(f"- **not one experiment**: A is {a['experiment']!r}, B is {b['experiment']!r}")
    lines += ["", f"A metric **agrees** when B's median is within ±{t['median_ratio']:.0%} of A's and the two-sample "
                  f"Kolmogorov-Smirnov distance (the largest gap between the two CDFs) is at most {t['ks']:g}; "
                  f"with fewer than {t['min_samples']} answered requests on a side there is no verdict. "
                  "Ratios are B / A; percentiles are compared, never summed.", "",
              "| group | metric | n A | n B | median A ms | median B ms | ratio | P99 A ms | P99 B ms | ratio | KS | verdict |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in c["metrics"]:
        lines.append(f"| {r['group']} | {r['label']} | {r['n_a']} | {r['n_b']} | {_f(r['median_a'])} | {_f(r['median_b'])} | "
                     f"{_f(r['median_ratio'], '{:.2f}')} | {_f(r['p99_a'])} | {_f(r['p99_b'])} | {_f(r['p99_ratio'], '{:.2f}')} | "
                     f"{_f(r['ks'], '{:.3f}')} | {r['verdict']} |")
    lines += ["", "| group | requests A | requests B | answered A | answered B | SLO ms | SLO met A | SLO met B | difference |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for o in c["outcomes"]:
        lines.append(f"| {o['group']} | {o['requests_a']} | {o['requests_b']} | {_f(o['answered_a'], '{:.1%}')} | "
                     f"{_f(o['answered_b'], '{:.1%}')} | {_f(o['slo_ms'], '{:g}')} | {_f(o.get('slo_met_a'), '{:.1%}')} | "
                     f"{_f(o.get('slo_met_b'), '{:.1%}')} | {_pp(o.get('slo_met_difference'))} |")
    return "\n".join(lines) + "\n"


def _where(d: dict) -> str:
    return ", ".join(x for x in (f"provider {d['provider']}", d.get("emulator") and f"emulator {d['emulator']}",
                                 d["accelerator"] and f"accelerator {d['accelerator']}") if x)


def _f(v, fmt: str = "{:.2f}") -> str:
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else fmt.format(v)


def _pp(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:+.1f} pp"


def figure(a: Side, b: Side, c: dict, out: Path) -> Path:
    """The CDF of each metric, A against B, one panel per metric (all requests), its KS distance in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from continuum.results.plots import latency_axis

    rows = [r for r in c["metrics"] if r["group"] == "all" and (r["n_a"] or r["n_b"])]
    cols = min(3, max(1, len(rows)))
    nrows = max(1, -(-len(rows) // cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(4.0 * cols, 3.0 * nrows), squeeze=False)
    for ax in axes.flat[len(rows):]:
        ax.set_visible(False)
    for ax, r in zip(axes.flat, rows):
        values, missing = [], []
        for side, colour in ((a, "tab:blue"), (b, "tab:orange")):
            name = "A" if side is a else "B"
            v = np.sort(side.requests.loc[side.requests["status"] == "ok", r["metric"]].dropna().astype(float).to_numpy())
            if len(v):
                values.append(v)
                me, other = (c["a"], c["b"]) if side is a else (c["b"], c["a"])
                ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", color=colour,
                        label=f"{name}: {side_name(me, other)} ({len(v)})")
            else:  # nothing answered on that side: said in the panel, not drawn as an empty curve
                missing.append(f"{name} ({side_name(*((c['a'], c['b']) if side is a else (c['b'], c['a'])))}): no request answered")
        if values:
            latency_axis(ax, min(v[0] for v in values), max(v[-1] for v in values))
        else:
            ax.set_xlabel("ms")
        ks = "-" if r["ks"] is None else f"{r['ks']:.2f}"
        ratio = "-" if r["median_ratio"] is None else f"{r['median_ratio']:.2f}"
        ax.set_title(f"{r['label']}: KS {ks}, median ratio {ratio}", fontsize=9)
        if missing:
            ax.text(0.5, 0.5, "\n".join(missing), transform=ax.transAxes, ha="center", va="center", fontsize=8,
                    color="tab:red", bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none"})
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    for row in axes:
        row[0].set_ylabel("share of answered requests")
    axes.flat[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"{c['a']['experiment']}: the answered requests' CDFs, A against B\n"
                 f"A = {side_name(c['a'], c['b'])}: {Path(c['a']['folder']).name}, "
                 f"B = {side_name(c['b'], c['a'])}: {Path(c['b']['folder']).name} (compare.md names the folders)", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def run(run_a: Path, run_b: Path, out: Path, tol: Tolerance = Tolerance()) -> tuple[dict, list[Path]]:
    """Compare, and write compare.md, compare.json and compare.png into `out`."""
    return run_sides(load(run_a), load(run_b), out, tol)


def run_sides(a: Side, b: Side, out: Path, tol: Tolerance = Tolerance()) -> tuple[dict, list[Path]]:
    """The same for two sides made otherwise (a campaign's groups of runs)."""
    c = compare(a, b, tol)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.md").write_text(markdown(c))
    (out / "compare.json").write_text(json.dumps(c, indent=2))
    return c, [out / "compare.md", out / "compare.json", figure(a, b, c, out / "compare.png")]


def render(c: dict):
    from rich.table import Table

    t = Table(title=f"{c['a']['experiment']}: A {side_name(c['a'], c['b'])} against B {side_name(c['b'], c['a'])} (ratios B/A; agrees: "
                    f"median within ±{c['tolerance']['median_ratio']:.0%}, KS ≤ {c['tolerance']['ks']:g})")
    for h in ("group", "metric", "median A", "median B", "ratio", "P99 A", "P99 B", "ratio", "KS", "verdict"):
        t.add_column(h, justify="left" if h in ("group", "metric", "verdict") else "right")
    for r in c["metrics"]:
        t.add_row(r["group"], r["label"], _f(r["median_a"]), _f(r["median_b"]), _f(r["median_ratio"]), _f(r["p99_a"]),
                  _f(r["p99_b"]), _f(r["p99_ratio"]), _f(r["ks"], "{:.3f}"), r["verdict"])
    return t
