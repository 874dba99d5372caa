"""What the experiment scripts share: running one point (an ordinary
`continuum run` of a config copy, its output kept in a log), writing and
reading an experiment's campaigns, and the finish of their CDF figures."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
CONTINUUM = REPO / ".venv" / "bin" / "continuum"


def run_point(cfg: Path, log: Path) -> Path:
    """`continuum run CFG`, output to LOG; the result folder, or exit naming the log."""
    with open(log, "w") as f:
        p = subprocess.run([str(CONTINUUM), "run", str(cfg)], stdout=f, stderr=subprocess.STDOUT, text=True)
    text = log.read_text()
    found = re.findall(r"(?m)^results: (.+)$", text)
    if p.returncode != 0 or not found:
        raise SystemExit(f"{cfg.name} failed ({p.returncode}); see {log}")
    return Path(found[-1].strip())


def write_campaign(path: Path, text: str, check: Callable[[Path], None]) -> Path:
    """An experiment's campaign file written, every point checked against what the experiment says it is
    (an AssertionError names the point), and its path printed for the run script."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    check(path)
    print(path)
    return path


def complete_points(folder: Path) -> list[dict]:
    """A campaign folder's complete points: campaign.json's entries, each with its run folder as "dir"
    (none: no campaign.json there yet)."""
    import json

    state_file = folder / "campaign.json"
    if not state_file.exists():
        return []
    return [{**e, "dir": folder / e["run"]} for e in json.loads(state_file.read_text())["points"] if e["status"] == "complete"]


def flat(d: dict, prefix: str = "") -> dict:
    """A parsed config as dotted keys ("edge.admission.policy": ...), to compare point copies key by key."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(flat(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


def log_cdf(fig, ax, xlabel: str, ylabel: str, title: str, path: Path, legend_loc: str = "upper left") -> Path:
    """The CDF figures' common finish: log x axis, labels, grid, legend, saved."""
    import matplotlib.pyplot as plt

    ax.set_xscale("log")
    plain_log_ticks(ax.xaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc=legend_loc)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plain_log_ticks(axis) -> None:
    """A log axis labelled at 1-2-5 steps in plain numbers (50, 100, 200 ms), not only at powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def chosen(ap, option: str, given: str, valid) -> list[str]:
    """The comma-separated points asked for, each one checked (argparse's error otherwise)."""
    picked = [p for p in given.split(",") if p]
    bad = [p for p in picked if p not in valid]
    if bad:
        ap.error(f"{option}: {', '.join(bad)} unknown; valid: {', '.join(valid)}")
    return picked


def _over_runs(values, fmt: str, centre) -> str:
    """ "centre [min-max]" of the runs' values (a single run: just its value; none: "-")."""
    vals = [v for v in values if v is not None]
    if not vals:
        return "-"
    if len(vals) == 1:
        return fmt.format(vals[0])
    return f"{fmt.format(centre(vals))} [{fmt.format(min(vals))}-{fmt.format(max(vals))}]"


def spread(values, fmt: str = "{:.1%}") -> str:
    """A share over repetitions: "mean [min-max]"."""
    import statistics

    return _over_runs(values, fmt, statistics.fmean)


def med_range(values, fmt: str = "{:.0f}") -> str:
    """A percentile over repetitions: the median of the runs' own values [min-max], never their mean."""
    import statistics

    return _over_runs(values, fmt, statistics.median)


def seed_list(ap, given: str) -> list[int]:
    """--seeds 1,2,3 as integers (argparse's error otherwise)."""
    try:
        seeds = [int(s) for s in given.split(",") if s]
    except ValueError:
        ap.error(f"--seeds: {given!r} is not a comma-separated list of integers, e.g. 1,2,3")
    if not seeds:
        ap.error("--seeds: give at least one, e.g. 1,2,3")
    return seeds


def set_timing(text: str, duration_s: int | None, warmup_s: int | None = None) -> str:
    """A config copy's measured window (and warm-up) replaced, as each script's --duration asks."""
    if duration_s is not None:
        text = re.sub(r"(?m)^duration_s = .*$", f"duration_s = {duration_s}", text, count=1)
    if warmup_s is not None:
        text = re.sub(r"(?m)^warmup_s = .*$", f"warmup_s = {warmup_s}", text, count=1)
    return text


def arms_from_files(base: dict, files: dict[str, dict], own: tuple[str, ...]) -> dict[str, dict]:
    """Shipped point files as a campaign's named arms over one of them (BASE, parsed): each arm sets the
    dotted keys its file gives otherwise and unsets what only BASE has (a whole table when its file has
    none of it). Keys under OWN (prefixes: the campaign's name, folder, timing) are left to the campaign."""
    fb = flat(base)
    arms = {}
    for name, data in files.items():
        fd = flat(data)
        arm: dict = {k: v for k, v in fd.items() if fb.get(k) != v and not k.startswith(own)}
        unset: list[str] = []
        for k in fb:
            if k in fd or k.startswith(own):
                continue
            parts = k.split(".")
            # the highest table of the key that the file lacks entirely
            top = next((".".join(parts[:i]) for i in range(1, len(parts)) if not any(
                f == ".".join(parts[:i]) or f.startswith(".".join(parts[:i]) + ".") for f in fd)), k)
            if top not in unset:
                unset.append(top)
        if unset:
            arm["unset"] = unset
        arms[name] = arm
    return arms


def check_arm_changes(path: Path, base: dict, changes: dict[str, tuple[str, ...]], what: str,
                      ignore: tuple[str, ...] = ()) -> list[str | None]:
    """Every point of the campaign file PATH is BASE (parsed) but for the keys its arm may change (CHANGES: arm ->
    dotted keys or table prefixes) and IGNORE; an AssertionError names the point and what it changes of WHAT.
    Returns the points' arms in order."""
    import tomllib

    from continuum.campaign import sweep

    shipped = flat(base)
    seen = []
    for p in sweep.points(path):
        got = flat(tomllib.loads(p.text))
        diff = sorted(k for k in set(shipped) | set(got) if k not in ignore and shipped.get(k) != got.get(k))
        bad = [k for k in diff if not k.startswith(changes[p.arm or ""])]
        assert not bad, f"{path} point {p.index} (arm {p.arm}) changes {bad} of {what}"
        seen.append(p.arm)
    return seen
