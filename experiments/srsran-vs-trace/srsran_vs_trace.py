"""The testbed's fidelity check against a real stack (issue #22): the
quickstart's workload over srsRAN 4G (ZMQ radio), then the same stack's
capacity recorded with `continuum traces record`, then that recording
replayed through mahimahi-link under the same workload; the latency
distributions side by side (report.md, cdf.png).

1. srsran:  configs/srsran-zmq.toml as shipped (only timing and output changed).
2. record:  srsRAN's stack brought up alone (the same configuration files,
            the same code as a run: srsran_integration.stack), a far end on its
            SGi side, a control path around it; the saturatr recorder fills
            each direction for --record-s seconds.
3. replay:  configs/quickstart.toml with the recorded uplink and downlink as
            its traces (and no queue limit, as srsRAN's buffers are its own).

What differs between 1 and 3 is what a capacity trace leaves out: the
stack's per-packet scheduling (SR, BSR, grants, HARQ), which a trace of
delivery opportunities cannot carry."""

from __future__ import annotations

import argparse
import json
import re
import shutil
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
from srsran_integration import environment, lte, stack  # noqa: E402

CONTINUUM = REPO / ".venv" / "bin" / "continuum"
SRSRAN = REPO / "configs" / "srsran-zmq.toml"
QUICK = REPO / "configs" / "quickstart.toml"
NS = ("ctm-rec-epc", "ctm-rec-ue", "ctm-rec-far")  # ctm-: `continuum destroy` knows the prefix's namespaces
FAR_SGI, EPC_SGI, UE_CTL, FAR_CTL = "10.250.0.2", "10.250.0.1", "10.251.0.1", "10.251.0.2"


def timing(text: str, quick: bool) -> str:
    d, w = (20, 3) if quick else (60, 5)
    text = re.sub(r"(?m)^duration_s = .*$", f"duration_s = {d}", text)
    return re.sub(r"(?m)^warmup_s = .*$", f"warmup_s = {w}", text)


def srsran_config(out: Path, quick: bool) -> Path:
    text = timing(SRSRAN.read_text(), quick).replace('output = "runs"', f'output = "{out / "runs"}"')
    path = out / "configs" / "srsran-zmq.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def replay_config(out: Path, quick: bool, up: Path, down: Path) -> Path:
    """The quickstart with the recorded traces; it and the srsRAN file differ only in [mobile] (checked)."""
    text = timing(QUICK.read_text(), quick).replace('output = "runs"', f'output = "{out / "runs"}"')
    text = text.replace('name = "quickstart"', 'name = "srsran-replay"')
    text = re.sub(r'(?m)^uplink = .*$', f'uplink = "{up}"', text)
    text = re.sub(r'(?m)^downlink = .*$', f'downlink = "{down}"', text)
    text = re.sub(r'(?m)^uplink_queue.*\n', "", text)  # srsRAN's own buffers hold what waits; no extra limit here
    path = out / "configs" / "srsran-replay.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    a, b = load(path, materialize=False), load(srsran_config(out, quick), materialize=False)
    assert (a.workload, a.core, a.nodes, a.duration_s, a.warmup_s) == (b.workload, b.core, b.nodes, b.duration_s, b.warmup_s), \
        "the replay must differ from the srsRAN run in [mobile] only"
    return path


def record(out: Path, seconds: float) -> tuple[Path, Path]:
    """The stack alone: srsUE's tunnel in ue, srsRAN in epc, the far end on SGi's side; the recorder's
    control connection goes ue <-> far directly (around the stack, as saturatr asks)."""
    spec = load(SRSRAN, materialize=False)
    s = spec.mobile.srsran
    assert s is not None
    cleanup()
    folder = out / "record"
    folder.mkdir(parents=True, exist_ok=True)
    procs = []
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
        logs = folder / "logs"
        server = far.start([str(CONTINUUM), "traces", "record", "serve", "--port", "9500", "--once"], logs / "record-serve.log")
        procs.append(server)
        time.sleep(1.0)  # the server's listening socket; the client retries its connection anyway
        traces = folder / "traces"
        client = ue.run([str(CONTINUUM), "traces", "record", "--peer", FAR_CTL, "--data-peer", FAR_SGI, "--port", "9500",
                         "--duration", f"{seconds:g}", "--direction", "both", "--queue-s", "0.05", "--name", "srsran-zmq", "--out", str(traces)],
                        timeout=4 * seconds + 120)
        (logs / "record.log").write_text(client.stdout + client.stderr)
        return traces / "srsran-zmq.up", traces / "srsran-zmq.down"
    finally:
        for p in reversed(procs):
            stop_process(p, 10.0)
        cleanup()


def cleanup() -> None:
    from continuum.network.namespaces import delete_namespace, list_namespaces

    for ns in NS:
        if ns in list_namespaces():
            delete_namespace(ns)


def measured(requests: Path) -> pd.DataFrame:
    df = pd.read_csv(requests)
    return df[(df["phase"] == "measure") & (df["status"] == "ok")]


def _points(out: Path) -> dict[str, pd.DataFrame]:
    return {"srsRAN 4G (ZMQ)": measured(out / "requests-srsran.csv"),
            "recorded trace, replayed": measured(out / "requests-replay.csv")}


def table(points: dict[str, pd.DataFrame]) -> str:
    cols = [(c, n.split(" (")[0]) for c, n in PARTS]
    head = "| link | answered | " + " | ".join(f"{n} P50 / P99 ms" for _, n in cols) + " |"
    rows = [head, "|---" * (head.count("|") - 1) + "|"]
    for name, df in points.items():
        cells = [f"{df[c].median():.1f} / {np.percentile(df[c], 99):.1f}" for c, _ in cols]
        rows.append(f"| {name} | {len(df)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


PARTS = (("uplink_ms", "uplink M1"), ("downlink_ms", "downlink M2"), ("server_ms", "server M4 (inference on the same CPUs)"),
         ("e2e_ms", "end-to-end"))


def cdf(points: dict[str, pd.DataFrame], out: Path) -> Path:
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for (col, label), ax in zip(PARTS, axes.flat):
        for (name, df), style in zip(points.items(), ("-", "--")):
            x = np.sort(df[col].to_numpy())
            ax.step(x, np.arange(1, len(x) + 1) / len(x), style, where="post", label=f"{name} (n={len(x)})")
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(f"{label} (ms, log scale)")
        ax.set_ylabel("fraction of measured requests")
        ax.set_ylim(0, 1.01)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle("W1 over srsRAN 4G (ZMQ radio) vs. the same stack's recorded capacity replayed by mahimahi-link\n"
                 "(both measured on one 2-core machine; srsRAN's programs take CPU from the edge server too)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20 s measured per run, 20 s recorded per direction (~4 min)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--record-s", type=float, default=None, help="seconds recorded per direction (default: 20 with --quick, else 60)")
    ap.add_argument("--replot", action="store_true", help="only redraw the table and figure from --out's requests-*.csv")
    a = ap.parse_args()
    if a.replot:
        points = _points(a.out)
        print(table(points))
        (a.out / "table.md").write_text(table(points) + "\n")
        print(f"figure: {cdf(points, a.out / 'cdf.png')}")
        return
    problems = environment.problems(load(SRSRAN, materialize=False).mobile.srsran.prefix, "zmq")  # type: ignore[union-attr]
    if problems:
        raise SystemExit("srsRAN 4G cannot run here:\n  - " + "\n  - ".join(problems))
    out = a.out
    out.mkdir(parents=True, exist_ok=True)
    seconds = a.record_s or (20.0 if a.quick else 60.0)
    print("1/3 the workload over srsRAN 4G", flush=True)
    srs = run_point(srsran_config(out, a.quick), out / "srsran.log")
    print(f"    {srs}\n2/3 recording the stack's capacity, {seconds:g} s per direction", flush=True)
    up, down = record(out, seconds)
    print(f"    {up}, {down}\n3/3 the workload over the recording, replayed by mahimahi-link", flush=True)
    rep = run_point(replay_config(out, a.quick, up, down), out / "replay.log")
    for name, run in (("srsran", srs), ("replay", rep)):  # what the report reads, kept beside it (runs/ is not committed)
        shutil.copy(run / "requests.csv", out / f"requests-{name}.csv")
    shutil.copy(srs / "plots" / "srsran.png", out / "srsran-kpis.png")
    points = _points(out)
    fig = cdf(points, out / "cdf.png")
    meta = json.loads((up.parent / "metadata.json").read_text()) if (up.parent / "metadata.json").exists() else {}
    summary = {"srsran_run": str(srs), "replay_run": str(rep), "recorded": meta,
               "kpis": json.loads((srs / "summary.json").read_text()).get("srsran")}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out / "table.md").write_text(table(points) + "\n")
    print(table(points))
    print(f"figure: {fig}")


if __name__ == "__main__":
    main()
