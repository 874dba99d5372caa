"""What the experiment scripts share: running one point (an ordinary
`continuum run` of a config copy, its output kept in a log) and the finish
of their CDF figures."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

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


def flat(d: dict, prefix: str = "") -> dict:
    """A parsed config as dotted keys ("edge.admission.policy": ...), to compare point copies key by key."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(flat(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


def log_cdf(fig, ax, xlabel: str, ylabel: str, title: str, path: Path) -> Path:
    """The CDF figures' common finish: log x axis, labels, grid, legend, saved."""
    import matplotlib.pyplot as plt

    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def chosen(ap, option: str, given: str, valid) -> list[str]:
    """The comma-separated points asked for, each one checked (argparse's error otherwise)."""
    picked = [p for p in given.split(",") if p]
    bad = [p for p in picked if p not in valid]
    if bad:
        ap.error(f"{option}: {', '.join(bad)} unknown; valid: {', '.join(valid)}")
    return picked
