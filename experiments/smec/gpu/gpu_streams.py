"""SMEC's GPU path, measured: does an urgent request on the highest-priority
CUDA stream finish sooner while a neighbour floods the GPU at the lowest?

Runs the project's real AR server (SSDlite320 through workloads.device, the
code path `continuum run` uses) next to a GPU-heavy neighbour: ESPCN x2 at
its original width (64/32 channels) on batches of 1080p frames, the kind of
work SMEC's VC app puts on a shared GPU. Three placements:

- in-process: the neighbour is a thread of the same process (one CUDA
  context; stream priorities apply);
- two processes: the neighbour is another process (two contexts, time-sliced
  by the driver; priorities of one context do not reach the other);
- two processes under MPS (started here when nvidia-cuda-mps-control exists):
  one shared context, so priorities apply across processes, as SMEC runs it.

For each: the AR request's server time (JPEG decode + detector + answer)
alone, shared at the default priority, shared at SMEC's urgent priority, and
the neighbour's frames/s. Prints a table and writes JSON.

    python3 experiments/smec/gpu/gpu_streams.py --out results.json [--seconds 8]

Needs a CUDA GPU (torch.cuda); exits with a clear message without one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT, ROOT / "smec-edge"):
    sys.path.insert(0, str(p))

MS = 1_000_000
THRESHOLD_NS = 30 * MS  # AR's urgency threshold in configs/smec-mix.toml
URGENT_NS = 1 * MS  # a budget under the threshold: the highest priority
PERIOD_S = 0.030  # AR requests are paced, not back to back (about 33 frames/s at most)


def torch_or_exit():
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("gpu_streams: no CUDA GPU here (torch.cuda.is_available() is False); this benchmark needs one")
    return torch


class Neighbour:
    """ESPCN x2, 64/32 channels, on 1080p batches at the lowest stream priority;
    two batches in flight so the GPU never idles between them."""

    def __init__(self, torch, batch: int) -> None:
        from workloads.video_conferencing.server import espcn

        self.torch = torch
        least, _ = torch.cuda.Stream.priority_range()
        self.stream = torch.cuda.Stream(priority=least)
        self.model = espcn(torch, 2, (64, 32)).cuda().eval()
        self.x = torch.rand(batch, 3, 1080, 1920, device="cuda")
        self.batch, self.frames, self.stop = batch, 0, threading.Event()

    def step(self, pending: list) -> None:
        with self.torch.no_grad(), self.torch.cuda.stream(self.stream):
            self.model(self.x)
            ev = self.torch.cuda.Event()
            ev.record(self.stream)
        pending.append(ev)
        if len(pending) > 2:
            pending.pop(0).synchronize()
            self.frames += self.batch

    def run(self, seconds: float | None = None) -> float:
        pending: list = []
        t0 = time.perf_counter()
        while not self.stop.is_set() and (seconds is None or time.perf_counter() - t0 < seconds):
            self.step(pending)
        for ev in pending:
            ev.synchronize()
        return self.frames / (time.perf_counter() - t0)


def ar_server(torch):
    from workloads.augmented_reality.endpoint import Endpoint
    from workloads.augmented_reality.server import Server
    from workloads.contract import EndpointSettings, ServerSettings

    common = dict(broker_host="", broker_port=0, qos=0, seed=1, repetition=1, params={})
    server = Server(ServerSettings(**common))
    assert server.info["device"] == "cuda", server.info
    ep = Endpoint(EndpointSettings(**common))
    frames = [ep.preprocess(ep.draw(i)) for i in range(8)]
    return server, frames


def ar_times(server, frames, seconds: float, budget_ns: int | None) -> list[float]:
    """Server time per AR request (ms), requests paced every PERIOD_S."""
    out, t_end, i = [], time.perf_counter() + seconds, 0
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        server.process_with_budget(frames[i % len(frames)], budget_ns, THRESHOLD_NS)
        dt = time.perf_counter() - t0
        out.append(dt * 1000)
        i += 1
        time.sleep(max(0.0, PERIOD_S - dt))
    return out


def stats(ms: list[float]) -> dict:
    q = statistics.quantiles(ms, n=100)
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p99_ms": round(q[98], 2)}


def part_inprocess(seconds: float, batch: int) -> dict:
    torch = torch_or_exit()
    server, frames = ar_server(torch)
    ar_times(server, frames, 1.0, None)  # warm-up
    res = {"alone": stats(ar_times(server, frames, seconds, None))}
    res["neighbour_alone_fps"] = round(Neighbour(torch, batch).run(seconds / 2), 1)
    for label, budget in (("shared_default", None), ("shared_urgent", URGENT_NS)):
        nb = Neighbour(torch, batch)
        th = threading.Thread(target=nb.run)
        th.start()
        time.sleep(0.5)  # let its queue fill: what is measured is the steady state, not the start
        res[label] = stats(ar_times(server, frames, seconds, budget))
        nb.stop.set()
        th.join()
        res[label]["neighbour_fps"] = round(nb.frames / (seconds + 0.5), 1)
    return res


def part_neighbour(seconds: float, batch: int) -> None:
    torch = torch_or_exit()
    nb = Neighbour(torch, batch)
    nb.run(1.0)  # warm-up, then say so
    nb.frames = 0
    print("ready", flush=True)
    print(json.dumps({"fps": round(nb.run(seconds), 1)}), flush=True)


def part_twoprocess(seconds: float, batch: int) -> dict:
    torch = torch_or_exit()
    server, frames = ar_server(torch)
    ar_times(server, frames, 1.0, None)
    res = {"alone": stats(ar_times(server, frames, seconds, None))}
    for label, budget in (("shared_default", None), ("shared_urgent", URGENT_NS)):
        nb = subprocess.Popen([sys.executable, __file__, "--part", "neighbour", "--seconds", str(seconds + 1.5),
                               "--batch", str(batch)], stdout=subprocess.PIPE, text=True)
        assert nb.stdout is not None
        if nb.stdout.readline().strip() != "ready":
            raise SystemExit(f"the neighbour process did not start (exit {nb.wait()})")
        time.sleep(0.5)
        res[label] = stats(ar_times(server, frames, seconds, budget))
        res[label]["neighbour_fps"] = json.loads(nb.stdout.readline())["fps"]
        nb.wait(timeout=60)
    return res


def run_part(part: str, args, env=None) -> dict:
    r = subprocess.run([sys.executable, __file__, "--part", part, "--seconds", str(args.seconds), "--batch", str(args.batch)],
                       capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout)[-2000:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def with_mps(fn):
    """fn(env) with an MPS daemon of our own (smec_edge.mps), stopped afterwards."""
    from smec_edge import mps

    why = mps.unavailable()
    if why:
        return {"error": f"MPS cannot run here: {why}"}
    daemon = mps.Mps(Path(tempfile.mkdtemp(prefix="bench-")) / mps.MARK)
    daemon.start(owner="gpu_streams")
    try:
        return fn({**os.environ, **daemon.env})
    finally:
        daemon.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["all", "inprocess", "twoprocess", "neighbour"], default="all")
    ap.add_argument("--seconds", type=float, default=8.0, help="each measurement's length")
    ap.add_argument("--batch", type=int, default=4, help="the neighbour's 1080p frames per batch")
    ap.add_argument("--out", type=Path, help="write the results here as JSON")
    args = ap.parse_args()
    if args.part == "neighbour":
        return part_neighbour(args.seconds, args.batch)
    if args.part == "inprocess":
        return print(json.dumps(part_inprocess(args.seconds, args.batch)))
    if args.part == "twoprocess":
        return print(json.dumps(part_twoprocess(args.seconds, args.batch)))
    torch = torch_or_exit()
    least, greatest = torch.cuda.Stream.priority_range()
    results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "priorities": [least, greatest],
               "seconds": args.seconds, "neighbour_batch": args.batch}
    print(f"{results['gpu']}, torch {torch.__version__}, stream priorities {least}..{greatest}", flush=True)
    for part in ("inprocess", "twoprocess"):
        print(f"measuring {part} ...", flush=True)
        results[part] = run_part(part, args)
    print("measuring twoprocess under MPS ...", flush=True)
    results["twoprocess_mps"] = with_mps(lambda env: run_part("twoprocess", args, env))
    print(json.dumps(results, indent=1))
    print(f"\n{'placement':<16} {'AR alone P50/P99':>18} {'default P50/P99':>18} {'urgent P50/P99':>18} {'P99 ratio':>9}  neighbour fps (alone; default, urgent)")
    for part in ("inprocess", "twoprocess", "twoprocess_mps"):
        r = results[part]
        if "error" in r:
            print(f"{part:<16} error: {r['error'][-300:]}")
            continue
        a, d, u = r["alone"], r["shared_default"], r["shared_urgent"]
        print(f"{part:<16} {a['p50_ms']:>8.1f}/{a['p99_ms']:<8.1f} {d['p50_ms']:>8.1f}/{d['p99_ms']:<8.1f} "
              f"{u['p50_ms']:>8.1f}/{u['p99_ms']:<8.1f} {d['p99_ms'] / u['p99_ms']:>8.1f}x  "
              f"{r.get('neighbour_alone_fps', '-')}; {d['neighbour_fps']}, {u['neighbour_fps']}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
