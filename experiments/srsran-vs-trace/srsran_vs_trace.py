"""The testbed's fidelity check against a real stack (issues #22, #58): the
quickstart's workload over srsRAN 4G (ZMQ radio), then the same stack
recorded with `continuum traces record` (its capacity: the heavy traces;
and, with --light, short packet trains from idle: the light traces), then
the recording replayed through mahimahi-link under the same workload, by
each replay arm; at several request rates, each point repeated; the latency
distributions side by side (table.md, cdf.png).

1. srsran:  configs/srsran-zmq.toml as shipped (only timing, rate and output changed).
2. record:  srsRAN's stack brought up alone (the same configuration files,
            the same code as a run: srsran_integration.stack), a far end on its
            SGi side, a control path around it; the saturatr recorder fills
            each direction for --record-s seconds, then the light recorder
            sends its trains (one-way delays: both ends share this machine's clock).
3. replay:  configs/quickstart.toml with the recorded traces (and no queue limit,
            as srsRAN's buffers are its own), per arm: "plain" (Mahimahi replay of
            the capacity) and "workload-aware" (the light traces in front of it).

What differs between 1 and 3 "plain" is what a capacity trace leaves out:
the stack's per-packet scheduling (SR, BSR, grants, HARQ), which a trace of
delivery opportunities cannot carry; "workload-aware" puts back what the
stack gave short bursts from idle."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE.parent))
from continuum import commands  # noqa: E402
from continuum.experiment import load  # noqa: E402
from continuum.runtime import Node, stop_process  # noqa: E402
from points import run_point  # noqa: E402
from continuum.results import tables  # noqa: E402
from srsran_integration import environment, kpis, lte, stack  # noqa: E402

CONTINUUM = REPO / ".venv" / "bin" / "continuum"
SRSRAN = REPO / "configs" / "srsran-zmq.toml"
QUICK = REPO / "configs" / "quickstart.toml"
NS = ("ctm-rec-epc", "ctm-rec-ue", "ctm-rec-far")  # ctm-: `continuum destroy` knows the prefix's namespaces
FAR_SGI, EPC_SGI, UE_CTL, FAR_CTL = "10.250.0.2", "10.250.0.1", "10.251.0.1", "10.251.0.2"
# The light recording's trains: W1's largest request (100 KB) is 70 full packets; an answer is one.
LIGHT_GAP_MS, LIGHT_UP_PACKETS, LIGHT_DOWN_PACKETS = 300, 70, 10
# Lone packets per size for the size offsets: an uplink packet waits 0-20 ms for an SR opportunity, so a
# median of 10 still wanders by +-5 ms (the first try); 30 bring that to about 2 ms (3 minutes).
SIZES_COUNT = 30
ARMS = {"plain": "recorded trace, plain replay", "workload-aware": "recorded trace, workload-aware replay",
        "active": "recorded trace, workload-aware replay, active-link floor",
        "access": "recorded trace + access procedure (lte-fdd-srsran: srsENB's SR/BSR/grants, fitted pipeline delays)",
        "active-loaded": "the active arm with the stack up and idle beside it (the edge's CPU as busy as with srsRAN)",
        "access-loaded": "the access arm with the stack up and idle beside it"}
# The "active" arm: the same light traces with an `active_ms` header (docs/link-replay.md): a burst lasts
# while the link holds packets, each packet then no sooner than this after it came. Uplink: a grant's
# lead time (4 ms, TS 36.213's n + 4) and the 1-ms TTI it is sent in; downlink: the recording's median
# base delay (a downlink has no access wait: its base delay is the stack's own latency, busy or not; the
# smallest, 8 ms, was tried first and put M2's median 2 ms low: README).
UPLINK_ACTIVE_MS = 5.0
# The "access" arm: [mobile] access = "lte-fdd-srsran" (continuum/config/presets.py gives each value's source):
# the plain capacity traces, the uplink's SR/BSR/k2 as srsENB sets them, and each direction's pipeline delay
# fitted on the light recording (presets.py says how).
SRSRAN_LABEL = "srsRAN 4G (ZMQ)"
# srsRAN's runs and its recording at paces further apart than this: the comparison is not a fair one.
PACE_MISMATCH = 0.05


# What every run of the comparison shares beyond the shipped files: the endpoints' and edge's TCP (the
# machine's default otherwise: BBR here, whose PROBE_RTT every 10 s of a quiet connection hit one request
# in ten at 1 req/s; docs/experiment-file.md "TCP: name it") and the arrivals (constant ones meet srsENB's
# 20-ms SR grid at one phase per run).
SHARED = {"tcp": "cubic", "arrivals": "poisson", "tcp_nodelay": False}


def timing(text: str, duration: float, rate: float) -> str:
    text = re.sub(r"(?m)^duration_s = .*$", f"duration_s = {duration:g}", text)
    text = re.sub(r"(?m)^rate = .*$", f"rate = {rate:g}", text, count=1)
    if SHARED["arrivals"] != "constant":
        text = text.replace("[workload]\n", f'[workload]\narrivals = "{SHARED["arrivals"]}"\n', 1)
    if SHARED["tcp_nodelay"]:
        text = text.replace("[workload]\n", "[workload]\ntcp_nodelay = true\n", 1)
    if SHARED["tcp"] != "default":
        for role in ("endpoint", "edge"):
            text = text.replace(f"[nodes.{role}]\n", f'[nodes.{role}]\ntcp_congestion_control = "{SHARED["tcp"]}"\n', 1)
    return re.sub(r"(?m)^warmup_s = .*$", "warmup_s = 5", text)


def srsran_config(out: Path, duration: float, rate: float) -> Path:
    text = timing(SRSRAN.read_text(), duration, rate).replace('output = "runs"', f'output = "{out / "runs"}"')
    path = out / "configs" / f"srsran-zmq-r{rate:g}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def replay_config(out: Path, duration: float, rate: float, up: Path, down: Path, arm: str) -> Path:
    """The quickstart with the recorded traces, replayed by `arm`; it and the srsRAN file differ only in [mobile] (checked)."""
    text = timing(QUICK.read_text(), duration, rate).replace('output = "runs"', f'output = "{out / "runs"}"')
    text = text.replace('name = "quickstart"', f'name = "srsran-{arm}"')
    mobile = f'uplink = "{up}"\ndownlink = "{down}"\n'
    if arm == "workload-aware":
        mobile += f'uplink_light = "{up}.light"\ndownlink_light = "{down}.light"\n'
    elif arm in ("active", "active-loaded"):
        ul, dl = active_light(out, up, UPLINK_ACTIVE_MS), active_light(out, down, None)
        mobile += f'uplink_light = "{ul}"\ndownlink_light = "{dl}"\n'
    else:
        mobile += 'replay = "plain"\n'
    text = re.sub(r'(?m)^downlink = .*\n', "", text)
    text = re.sub(r'(?m)^uplink = .*\n', mobile, text)
    text = re.sub(r'(?m)^uplink_queue.*\n', "", text)  # srsRAN's own buffers hold what waits; no extra limit here
    if arm in ("access", "access-loaded"):
        text = text.replace('replay = "plain"\n', 'replay = "plain"\naccess = "lte-fdd-srsran"\n', 1)
    path = out / "configs" / f"srsran-{arm}-r{rate:g}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    a, b = load(path, materialize=False), load(srsran_config(out, duration, rate), materialize=False)
    assert (a.workload, a.core, a.nodes, a.duration_s, a.warmup_s) == (b.workload, b.core, b.nodes, b.duration_s, b.warmup_s), \
        "the replay must differ from the srsRAN run in [mobile] only"
    assert (arm in ("workload-aware", "active", "active-loaded")) == (a.mobile.uplink_light is not None and a.mobile.downlink_light is not None)
    return path


def active_light(out: Path, trace: Path, active_ms: float | None) -> Path:
    """A copy of `trace`'s light part with an active_ms header: `active_ms`, or (None) its median base delay."""
    from continuum.tracearchive import light

    t = light.parse(Path(f"{trace}.light"))
    value = active_ms if active_ms is not None else float(statistics.median(ln.base_ms for ln in t.lines))
    why = ("k2 (4 ms) + the 1-ms TTI, presets.ACCESS lte-fdd-srsran" if active_ms is not None
           else "the recording's median base delay")
    path = out / "record" / "active" / Path(f"{trace}.light").name
    path.parent.mkdir(parents=True, exist_ok=True)
    if t.offsets is not None:  # the size offsets go with it
        shutil.copy(t.offsets, path.parent / t.offsets.name)
    light.write(path, t.lines, t.pdo_bytes, t.idle_ms, t.offsets.name if t.offsets else None,
                note=f"{trace}.light with active_ms: {why}", active_ms=value)
    return path


@contextlib.contextmanager
def stack_alone(folder: Path):
    """The stack alone, up: srsUE's tunnel in ue, srsRAN in epc, a far end on SGi's side and a control
    link ue <-> far around the stack; (epc, ue, far, the processes to stop), torn down on leaving."""
    spec = load(SRSRAN, materialize=False)
    s = spec.mobile.srsran
    assert s is not None
    cleanup()
    folder.mkdir(parents=True, exist_ok=True)
    procs: list = []
    try:
        for ns in NS:
            commands.run(["ip", "netns", "add", ns])
            commands.run(commands.in_netns(ns, ["ip", "link", "set", "lo", "up"]))
        epc, ue, far = (Node(n.split("-")[-1], n) for n in NS)
        commands.run(["ip", "link", "add", "sgi0", "netns", NS[0], "type", "veth", "peer", "name", "eth0", "netns", NS[2]])
        commands.run(["ip", "link", "add", "ctl0", "netns", NS[1], "type", "veth", "peer", "name", "ctl0", "netns", NS[2]])
        for node, dev, cidr in ((epc, "sgi0", f"{EPC_SGI}/24"), (far, "eth0", f"{FAR_SGI}/24"),
                                (ue, "ctl0", f"{UE_CTL}/24"), (far, "ctl0", f"{FAR_CTL}/24")):
            node.run(["ip", "addr", "add", cidr, "dev", dev])
            node.run(["ip", "link", "set", dev, "up"])
        epc.run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
        far.run(["ip", "route", "add", f"{lte.UE_POOL}.0/24", "via", EPC_SGI])
        started = stack.start(s, epc, ue, folder, lambda m: print("  " + m, flush=True), lambda p: procs.append(p.proc))
        assert len(started) == 3
        stack.route_endpoint(ue, "10.250.0.0/24")
        yield epc, ue, far, procs
    finally:
        for p in reversed(procs):
            stop_process(p, 10.0)
        cleanup()
        kpis.tti_samples(folder / "srsran", lte.PACE_PCAP)  # srsENB's MAC pcap (every PDU whole) to its TTI times


def record(out: Path, seconds: float, heavy: bool = True) -> tuple[Path, Path]:
    """The stack alone; the recorder's control connection goes ue <-> far directly (around the stack, as
    saturatr asks). Without `heavy`, only the light part (the capacity traces of an earlier recording kept)."""
    folder = out / "record"
    with stack_alone(folder) as (_epc, ue, far, procs):
        logs = folder / "logs"
        traces = folder / "traces"
        if heavy:
            server = far.start([str(CONTINUUM), "traces", "record", "serve", "--port", "9500", "--once"], logs / "record-serve.log")
            procs.append(server)
            time.sleep(1.0)  # the server's listening socket; the client retries its connection anyway
            client = ue.run([str(CONTINUUM), "traces", "record", "--peer", FAR_CTL, "--data-peer", FAR_SGI, "--port", "9500",
                             "--duration", f"{seconds:g}", "--direction", "both", "--queue-s", "0.05", "--name", "srsran-zmq",
                             "--out", str(traces)], timeout=4 * seconds + 120)
            (logs / "record.log").write_text(client.stdout + client.stderr)
            stop_process(server, 10.0)
        server = far.start([str(CONTINUUM), "traces", "record", "serve", "--port", "9500", "--once"], logs / "record-light-serve.log")
        procs.append(server)
        time.sleep(1.0)
        client = ue.run([str(CONTINUUM), "traces", "record", "--light", "--peer", FAR_CTL, "--data-peer", FAR_SGI, "--port", "9500",
                         "--duration", f"{seconds:g}", "--base", "owd", "--calibrate", "--gap-ms", str(LIGHT_GAP_MS),
                         "--up-packets", str(LIGHT_UP_PACKETS), "--down-packets", str(LIGHT_DOWN_PACKETS), "--sizes", "--sizes-count", str(SIZES_COUNT),
                         "--name", "srsran-zmq", "--out", str(traces)], timeout=4 * seconds + 300)
        (logs / "record-light.log").write_text(client.stdout + client.stderr)
    samples = kpis.tti_samples(folder / "srsran", lte.PACE_PCAP)
    if samples:  # the whole recording, heavy and light: the trains' delays are as true as its pace
        keep_pace(out, "record", kpis.pace(samples, samples[0][0], samples[-1][0]))
    return traces / "srsran-zmq.up", traces / "srsran-zmq.down"


def keep_pace(out: Path, what: str, pace: dict | None) -> None:
    """srsRAN's pace (its TTIs against the wall clock, srsran_integration.kpis.pace) while recording and in
    each srsRAN run, kept in pace.json: the reference is only srsRAN's if it kept real time."""
    if pace is None:
        return
    path = out / "pace.json"
    known = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**known, what: pace}, indent=1, sort_keys=True) + "\n")
    behind = pace["pace"] < tables.SRSRAN_PACE_FLOOR
    print(f"    srsRAN's pace: {100 * pace['pace']:.1f}% of real time" + (" (behind: this machine's CPU stretches its delays)" if behind else ""), flush=True)


def pace_note(out: Path) -> str:
    """A line under the table: srsRAN's pace while recording and over its runs, and a warning if it fell behind."""
    path = out / "pace.json"
    if not path.exists():
        return ""
    known = json.loads(path.read_text())
    runs = [v["pace"] for k, v in known.items() if k != "record"]
    parts = ([f"while recording {100 * known['record']['pace']:.1f}%"] if "record" in known else []) + \
            ([f"in its run {100 * runs[0]:.1f}%"] if len(runs) == 1 else
             [f"in its {len(runs)} runs {100 * min(runs):.1f}-{100 * max(runs):.1f}%"] if runs else [])
    text = f"srsRAN's pace (srsENB's TTIs against the wall clock, from its MAC pcap): {', '.join(parts)} of real time."
    if any(v["pace"] < tables.SRSRAN_PACE_FLOOR for v in known.values()):
        text += (f" **Below {100 * tables.SRSRAN_PACE_FLOOR:.0f}%: the stack fell behind real time on this machine, so its "
                 "delays are stretched by the machine's CPU.**")
    if "record" in known and runs and max(abs(r / known["record"]["pace"] - 1) for r in runs) > PACE_MISMATCH:
        text += (f" **The runs' pace differs from the recording's by more than {100 * PACE_MISMATCH:.0f}%: the replay "
                 "carries the stack's delays at one pace, srsRAN ran at another, so this is not a fair comparison.**")
    return text


def cleanup() -> None:
    from continuum.network.namespaces import delete_namespace, list_namespaces

    for ns in NS:
        if ns in list_namespaces():
            delete_namespace(ns)


def measured(requests: Path) -> pd.DataFrame:
    df = pd.read_csv(requests)
    return df[(df["phase"] == "measure") & (df["status"] == "ok")]


def _points(out: Path) -> dict[float, dict[str, list[pd.DataFrame]]]:
    """Per rate, per system (srsRAN, then each arm), the measured requests of each repetition
    (results/requests/SYSTEM-rRATE-REP.csv)."""
    found: dict[float, dict[str, list[pd.DataFrame]]] = {}
    for f in sorted((out / "requests").glob("*.csv")):
        m = re.fullmatch(r"(.+)-r([0-9.]+)-(\d+)\.csv", f.name)
        if m:
            found.setdefault(float(m[2]), {}).setdefault(m[1], []).append(measured(f))
    order = ["srsran", *ARMS]
    return {r: {k: found[r][k] for k in order if k in found[r]} for r in sorted(found)}


def label(system: str) -> str:
    return SRSRAN_LABEL if system == "srsran" else ARMS.get(system, system)


def stats(reps: list[pd.DataFrame], col: str) -> dict:
    """The pooled median and P99 of a part, and the repetitions' own medians and P99s (their spread)."""
    pooled = pd.concat(reps)[col]
    return {"median": float(pooled.median()), "p99": float(np.percentile(pooled, 99)), "n": len(pooled),
            "rep_medians": [float(r[col].median()) for r in reps], "rep_p99s": [float(np.percentile(r[col], 99)) for r in reps]}


def within(ours: dict, real: dict) -> dict:
    """Issue #58's bar: the median within 10% or 2 ms of srsRAN's (whichever is larger), the P99 within 25%."""
    dm, dp = ours["median"] - real["median"], ours["p99"] - real["p99"]
    return {"median_error_ms": dm, "median_error": dm / real["median"], "p99_error": dp / real["p99"],
            "median_ok": abs(dm) <= max(0.1 * real["median"], 2.0), "p99_ok": abs(dp) <= 0.25 * real["p99"]}


def table(points: dict[float, dict[str, list[pd.DataFrame]]]) -> str:
    """Per rate and system: M1 and M2 pooled P50 / P99 (the repetitions' medians' range), and each replay
    arm's error against srsRAN's."""
    rows = ["| rate (req/s) | link | reps | answered | M1 uplink P50 / P99 ms (reps' P50s) | M1 error P50, P99 "
            "| M2 downlink P50 / P99 ms (reps' P50s) | M2 error P50, P99 |", "|---" * 8 + "|"]
    for rate, systems in points.items():
        real = {c: stats(systems["srsran"], c) for c in ("uplink_ms", "downlink_ms")} if "srsran" in systems else None
        for name, reps in systems.items():
            cells = []
            for c in ("uplink_ms", "downlink_ms"):
                st = stats(reps, c)
                lo, hi = min(st["rep_medians"]), max(st["rep_medians"])
                cells.append(f"{st['median']:.1f} / {st['p99']:.1f} ({lo:.1f}-{hi:.1f})")
                if real is None or name == "srsran":
                    cells.append("")
                else:
                    w = within(st, real[c])
                    cells.append(f"{w['median_error']:+.0%}{'' if w['median_ok'] else ' ✗'}, {w['p99_error']:+.0%}{'' if w['p99_ok'] else ' ✗'}")
            rows.append(f"| {rate:g} | {label(name)} | {len(reps)} | {sum(len(r) for r in reps)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


PARTS = (("uplink_ms", "uplink M1"), ("downlink_ms", "downlink M2"))
STYLES = {"srsran": ("k", "-"), "plain": ("C0", "--"), "workload-aware": ("C3", "-."), "active": ("C1", "-"),
          "access": ("C2", ":"), "active-loaded": ("C4", "-"), "access-loaded": ("C5", ":")}


def cdf(points: dict[float, dict[str, list[pd.DataFrame]]], out: Path, shared: dict | None = None) -> Path:
    from points import plain_log_ticks

    rates = list(points)
    fig, axes = plt.subplots(len(rates), 2, figsize=(11, 3.4 * len(rates)), squeeze=False, sharex="col")
    for row, rate in zip(axes, rates):
        for (col, part), ax in zip(PARTS, row):
            for name, reps in points[rate].items():
                x = np.sort(pd.concat(reps)[col].to_numpy())
                color, style = STYLES.get(name, ("C2", ":"))
                ax.step(x, np.arange(1, len(x) + 1) / len(x), style, color=color, where="post", label=label(name))
            ax.set_xscale("log")
            plain_log_ticks(ax.xaxis)
            ax.set_xlabel(f"{part} (ms, log scale)")
            ax.set_ylabel("fraction of requests")
            ax.set_ylim(0, 1.01)
            ax.set_title(f"{part} at {rate:g} requests/s", fontsize=9)
            ax.grid(alpha=0.3, which="both")
    # one legend for every panel, below them (in a panel it hid the curves); each panel pools 3 runs per system
    handles, names = axes[0][0].get_legend_handles_labels()
    # two columns while the labels fit beside each other, else one (a label cut at the figure's edge says nothing)
    ncol = 2 if max(map(len, names)) <= 70 else 1
    fig.legend(handles, names, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig.suptitle("W1 over srsRAN 4G (ZMQ radio) vs. the same stack's recording replayed by mahimahi-link, per replay arm\n"
                 "(all measured on one 2-core machine; each CDF pools its repetitions"
                 + (f"; TCP {shared['tcp']} at the endpoint and edge, {shared['arrivals']} arrivals"
                    + (";\nMQTT without Nagle at the broker and the clients: [workload] tcp_nodelay" if shared.get("tcp_nodelay") else "") + ")"
                    if shared else ")"),
                 fontsize=10)
    legend_rows = -(-len(names) // ncol)
    fig.tight_layout(rect=(0, 0.01 + legend_rows * 0.16 / fig.get_figheight(), 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def report(out: Path) -> None:
    points = _points(out)
    text = table(points)
    if note := pace_note(out):
        text += "\n\n" + note
    print(text)
    (out / "table.md").write_text(text + "\n")
    acc = {f"{rate:g}": {arm: {c: within(stats(sy[arm], c), stats(sy["srsran"], c)) for c, _ in PARTS}
                         for arm in ARMS if arm in sy} for rate, sy in points.items() if "srsran" in sy}
    (out / "acceptance.json").write_text(json.dumps(acc, indent=1) + "\n")
    summary = out / "summary.json"
    shared = json.loads(summary.read_text()).get("shared") if summary.exists() else None
    print(f"figure: {cdf(points, out / 'cdf.png', shared)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one rate, one repetition, 20 s measured, 20 s recorded (~5 min)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--rates", default="1,2,4", help="requests/s per endpoint, comma-separated (W1's is 2)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each point")
    ap.add_argument("--first-rep", type=int, default=1, help="number the repetitions from this one (more of them beside "
                                                               "an earlier run's, with --skip-record)")
    ap.add_argument("--duration", type=float, default=30.0, help="seconds measured per run")
    ap.add_argument("--arms", default=",".join(ARMS), help=f"replay arms, of: {', '.join(ARMS)}")
    ap.add_argument("--record-s", type=float, default=None, help="seconds recorded per direction (default: 20 with --quick, else 60)")
    ap.add_argument("--skip-record", action="store_true", help="use --out's record/traces from an earlier run")
    ap.add_argument("--light-only", action="store_true", help="record the light part again (trains and size offsets), "
                                                               "keeping --out's capacity traces")
    ap.add_argument("--skip-srsran", action="store_true", help="run the replay arms only, beside --out's srsRAN runs")
    ap.add_argument("--replot", action="store_true", help="only redraw the table and figure from --out's requests/")
    ap.add_argument("--tcp", default=SHARED["tcp"], help="the endpoint's and edge's TCP congestion control in every run "
                                                         "(default cubic, Debian's and Android's; 'default': the machine's)")
    ap.add_argument("--tcp-nodelay", action="store_true",
                    help="MQTT without Nagle in every run ([workload] tcp_nodelay): M2's tail without the broker's wait "
                         "for the previous answer's ACK (use another --out)")
    ap.add_argument("--arrivals", default=SHARED["arrivals"], choices=("poisson", "constant"),
                    help="the workload's arrivals in every run (default poisson: the SR grid sampled at every phase)")
    a = ap.parse_args()
    SHARED.update(tcp=a.tcp, arrivals=a.arrivals, tcp_nodelay=a.tcp_nodelay)
    if a.replot:
        report(a.out)
        return
    rates = [2.0] if a.quick else [float(x) for x in a.rates.split(",")]
    reps, duration = (1, 20.0) if a.quick else (a.reps, a.duration)
    arms = [x for x in a.arms.split(",") if x]
    if bad := [x for x in arms if x not in ARMS]:
        raise SystemExit(f"--arms: {', '.join(bad)}: valid: {', '.join(ARMS)}")
    problems = environment.problems(load(SRSRAN, materialize=False).mobile.srsran.prefix, "zmq")  # type: ignore[union-attr]
    if problems:
        raise SystemExit("srsRAN 4G cannot run here:\n  - " + "\n  - ".join(problems))
    out = a.out
    (out / "requests").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    seconds = a.record_s or (20.0 if a.quick else 60.0)
    traces = out / "record" / "traces"
    if a.skip_record:
        up, down = traces / "srsran-zmq.up", traces / "srsran-zmq.down"
    else:
        print(f"1/3 recording the stack: {'' if a.light_only else f'its capacity, {seconds:g} s per direction, then '}"
              "its light trains and lone packets of each size", flush=True)
        up, down = record(out, seconds, heavy=not a.light_only)
    print(f"    {up}, {down} (+ .light)", flush=True)
    runs = {}
    for rep in range(a.first_rep, a.first_rep + reps):
        for rate in rates:
            for system in ([] if a.skip_srsran else ["srsran"]) + arms:
                what = "2/3 srsRAN" if system == "srsran" else f"3/3 {system} replay"
                print(f"{what}, {rate:g} requests/s, repetition {rep} ({reps} this time)", flush=True)
                cfg = srsran_config(out, duration, rate) if system == "srsran" else replay_config(out, duration, rate, up, down, system)
                with (stack_alone(out / "logs" / "background") if system.endswith("-loaded") else contextlib.nullcontext()):
                    run = run_point(cfg, out / "logs" / f"{system}-r{rate:g}-{rep}.log")
                shutil.copy(run / "requests.csv", out / "requests" / f"{system}-r{rate:g}-{rep}.csv")
                runs[f"{system}-r{rate:g}-{rep}"] = str(run)
                if system == "srsran":
                    keep_pace(out, f"srsran-r{rate:g}-{rep}", json.loads((run / "summary.json").read_text()).get("srsran", {}).get("pace"))
                if system == "srsran" and rate == 2.0 and rep == 1:
                    shutil.copy(run / "plots" / "srsran.png", out / "srsran-kpis.png")
    meta = {f: json.loads((traces / f).read_text()) for f in ("metadata.json", "light-metadata.json") if (traces / f).exists()}
    keep = a.first_rep > 1 or a.skip_srsran  # beside an earlier run's
    old = json.loads((out / "summary.json").read_text()) if keep and (out / "summary.json").exists() else {}
    (out / "summary.json").write_text(json.dumps({"runs": {**old.get("runs", {}), **runs}, "recorded": meta,
                                                  "rates": sorted(set(old.get("rates", [])) | set(rates)),
                                                  "reps_this_run": reps, "duration_s": duration, "shared": SHARED, "arms": sorted(set(old.get("arms", [])) | set(arms))},
                                                 indent=2, default=str) + "\n")
    report(out)


if __name__ == "__main__":
    main()
