"""How much a run folder will hold, and the run's stop before its disk fills.

A study runs for hours, and its folder grows the whole time by one line per
trace delivery opportunity per link and direction (mm-link's log format,
which the link plots and the reports read): a 48 Mbit/s downlink is 4000
lines a second, ~3 MB a minute. The other files are small beside that
(records, node samples) or fixed (plots, report.html). So the estimate is
the plan's opportunity rate times the emulator's lifetime, plus the rest;
`continuum run --dry-run` prints it beside the disk's free space, and a run
whose estimate does not fit is refused before anything is created.

While a run measures, the runner checks the disk every second: below
`reserve_bytes` (what the results still need to be written) it ends the
measurement early, keeps what was measured and says why, rather than
letting a write fail mid-record (shared disks fill for other reasons too)."""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from continuum.config import ExperimentSpec
from continuum.network import link
from continuum.network.plan import Plan

# The emulator runs from before the network checks to the teardown: per repetition the servers' model
# loads, the endpoints' starts and the checks besides the measured window (the quickstart's W1: ~12 s; the
# soak's AR and W1 side by side on one CPU: 55 s with 8 UEs, 150 s with 64 at 0.1 CPU each); a long
# study is dominated by the window. Fitted on those runs.
SETUP_S_PER_REPETITION = 10.0
SETUP_S_PER_APP = 15.0
SETUP_S_PER_ENDPOINT = 1.7
# Fixed files: report.html (its plotly bundle, ~2 MB), the plots, manifest and summaries.
FIXED_BYTES = 2.5e6
PLOT_BYTES_PER_LINK = 0.15e6  # a link plot per endpoint
RECORD_BYTES = 600  # a request's row, in raw/ and again in requests.csv
NODE_SAMPLE_BYTES = 90  # a node's row of nodes.csv, one a second
MSS = 1448
CELL_BUSY_UPLINK, CELL_BUSY_DOWNLINK = 0.67, 0.45  # a shared cell's slots that log a line (the soak's, measured)
# Below this the measurement stops: the results and plots still to be written, and room for the logs'
# last buffers. A run's own estimate of them raises it.
MIN_RESERVE_BYTES = 32 * 2**20


@dataclass(frozen=True)
class Estimate:
    parts: dict[str, float]  # bytes by what holds them
    lifetime_s: float  # how long the emulator writes its logs

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def reserve_bytes(self) -> float:
        """Free space the results still need once the measurement ends."""
        return max(MIN_RESERVE_BYTES, 2 * (self.parts.get("plots and report", 0.0) + self.parts.get("request records", 0.0)))

    def what(self) -> str:
        parts = ", ".join(f"{k} {mb(v)}" for k, v in self.parts.items() if v >= 0.05e6)
        return f"about {mb(self.total)} for the run folder ({parts}; the emulator logging for ~{self.lifetime_s / 60:.1f} min)"

    def describe(self, free: float | None) -> str:
        """The --dry-run line."""
        return f"disk: {self.what()}" + (f"; {mb(free)} free there" if free is not None else "")


def mb(b: float) -> str:
    return f"{b / 1e9:.1f} GB" if b >= 1e9 else f"{b / 1e6:.1f} MB"


def opportunities_per_s(path: Path | None) -> float:
    """A Mahimahi trace's delivery opportunities a second over its period (the unshaped
    delay-stage trace, and a missing file: one a millisecond)."""
    if path is None or not path.is_file():
        return 1000.0
    ms = path.read_text().split()
    return len(ms) * 1000.0 / max(int(ms[-1]), 1) if ms else 0.0


def _line_bytes(lifetime_s: float) -> float:
    """A log line "T # 1504" or "T + 1504": T in ms, its mean digit count over the run, plus 8."""
    return len(str(int(max(lifetime_s, 1.0) * 500))) + 8.0


def estimate(spec: ExperimentSpec, plan: Plan) -> Estimate:
    reps = spec.repetitions
    window_s = spec.warmup_s + spec.duration_s
    setup_s = SETUP_S_PER_REPETITION + SETUP_S_PER_APP * len(spec.apps) + SETUP_S_PER_ENDPOINT * len(spec.role("endpoint"))
    lifetime = reps * (window_s + setup_s)
    per_line = _line_bytes(lifetime)
    unshaped = Path("/nonexistent/unshaped")  # link.unshaped_trace: one opportunity a millisecond
    opp = sum(opportunities_per_s(up) + opportunities_per_s(down) for up, down in link.link_traces(spec, plan, lambda: unshaped))
    if plan.mahimahi and spec.mobile.uplink is not None and spec.mobile.downlink is not None:  # mm-link's own logs
        opp += len(plan.cell_links) * (opportunities_per_s(spec.mobile.uplink.path) + opportunities_per_s(spec.mobile.downlink.path))
    # The requests' packets: a line as each enters the link and one as it leaves, each way; the answers and
    # ACKs are counted as a packet per request and per two request segments.
    requests = packets = 0.0
    for app in spec.apps:
        w = app.workload
        if w.utilisation is not None:
            continue  # its rate is the calibration's, unknown before it
        mean_bytes = float(w.payload.get("mean_bytes") or (w.payload.get("min_bytes", 0) + w.payload.get("max_bytes", 0)) / 2)
        segs = max(1.0, math.ceil(mean_bytes / MSS))
        n = len(app.endpoints) * w.rate * max(1, w.burst) * spec.duration_s * reps
        requests += n + len(app.endpoints) * w.rate * max(1, w.burst) * spec.warmup_s * reps
        packets += (n / max(spec.duration_s, 1e-9)) * (segs + 1 + segs / 2)
    bulk = len(spec.role("bulk"))
    if bulk:  # a bulk UE fills its direction's every opportunity, and ACKs it the other way
        per_link = opp / max(1, len(plan.cell_links))
        packets += bulk * per_link * 0.75
    # A shared cell's scheduler log: a line per slot with traffic in that direction (the slot, each member's
    # blocks and bytes seen: mostly zeros, ~4 bytes a member). In the soak's runs (8 and 64 UEs, AR and W1):
    # 47 and 271 bytes a line, lines in 2/3 of the uplink's slots (requests, SR/BSR) and 1/2 of the downlink's.
    cell = plan.cell
    cell_bytes = 0.0
    if cell is not None:
        busy = (CELL_BUSY_UPLINK if cell.uplink else 0.0) + (CELL_BUSY_DOWNLINK if cell.downlink else 0.0)
        cell_bytes = busy * (1e6 / cell.slot_us) * (15 + 4 * len(cell.members)) * lifetime
    parts = {
        "link logs": opp * lifetime * per_line + packets * 2 * window_s * reps * per_line + cell_bytes,
        "request records": requests * RECORD_BYTES,
        "node samples": len(spec.nodes) * lifetime * NODE_SAMPLE_BYTES,
        "plots and report": FIXED_BYTES + PLOT_BYTES_PER_LINK * len(plan.cell_links),
    }
    return Estimate(parts, lifetime)


def free_bytes(folder: Path) -> float | None:
    """Free space on the disk that holds `folder` (its nearest existing parent); None if unknown."""
    p = folder.resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return float(shutil.disk_usage(p).free)
    except OSError:
        return None
