"""`python3 -m workloads calibrate APP`: how long the app's server takes per
request on the node it runs on, measured there (its cgroup's quota and
period, its threads, its package versions), so that a load can be stated
as a share of what the node can serve, not as requests per second that
mean overload on one machine and idling on the next.

Requests are the endpoint's own (drawn and pre-processed as a run's would
be, from the same seed) and go straight to the server's `process`, back to
back, from as many threads as the server runs requests at once: a closed
loop at saturation. Its throughput is the node's capacity for the app;
each request's time is kept (under a CFS quota most requests run at full
speed and some wait out a throttle, so the distribution, not one number,
is the service time). No network, no broker: the transport's cost is the
link's business, measured by the run.

Settings come as JSON in CONTINUUM_CALIBRATION (warmup_requests, requests,
min_s, max_s, concurrency, out); the app's own as in a run (CONTINUUM_PARAMS,
_PAYLOAD, _SEED, _THREADS, _WORKERS, _MODEL_CACHE, _ADMISSION). The result
is one JSON file at `out`, written whole."""

from __future__ import annotations

import importlib
import json
import os
import tempfile
import threading
import time
from pathlib import Path

from workloads.contract import EndpointSettings, Env, ServerSettings

SETTINGS = "CONTINUUM_CALIBRATION"
BANK = 64  # distinct requests drawn before timing: drawing is the endpoint's work, not the server's


def _settings() -> tuple[EndpointSettings, ServerSettings]:
    params = json.loads(os.environ.get(Env.PARAMS) or "{}")
    seed = int(os.environ.get(Env.SEED, "1"))
    common = {"broker_host": "", "broker_port": 0, "qos": 0, "seed": seed, "repetition": 0, "params": params}
    work = Path(tempfile.mkdtemp(prefix="calibration-"))  # what an app writes beside its log (edge_tasks' records)
    endpoint = EndpointSettings(**common, endpoint="calibration", payload=json.loads(os.environ.get(Env.PAYLOAD) or "{}"))
    server = ServerSettings(**common, threads=int(os.environ.get(Env.THREADS, "1")),
                            workers=int(os.environ.get(Env.WORKERS, "1")), server_log=str(work / "server.csv"),
                            ready_file=str(work / "ready.json"), model_cache=os.environ.get(Env.MODEL_CACHE, ""))
    return endpoint, server


def measure(app: str) -> dict:
    cfg = json.loads(os.environ[SETTINGS])
    es, ss = _settings()
    endpoint = importlib.import_module(f"workloads.{app}.endpoint").Endpoint(es)
    bank = [endpoint.preprocess(endpoint.draw(i)) for i in range(min(BANK, max(1, int(cfg["requests"]))))]
    t_load = time.monotonic()
    server = importlib.import_module(f"workloads.{app}.server").Server(ss)
    load_s = time.monotonic() - t_load
    concurrency = max(1, int(cfg.get("concurrency", 1)))
    warmup, wanted = int(cfg["warmup_requests"]), int(cfg["requests"])
    min_s, max_s = float(cfg["min_s"]), float(cfg["max_s"])

    lock = threading.Lock()
    samples: list[tuple[int, int, int]] = []  # (start ns, end ns, thread) of each measured request
    issued = [0]
    t_measure = [0]  # when the warm-up ended: the measured window starts there
    stop = threading.Event()

    def next_index() -> int | None:
        with lock:
            if stop.is_set():
                return None
            i = issued[0]
            issued[0] += 1
            return i

    def loop(thread: int) -> None:
        while (i := next_index()) is not None:
            t0 = time.monotonic_ns()
            server.process(bank[i % len(bank)])
            t1 = time.monotonic_ns()
            with lock:
                if i < warmup:
                    t_measure[0] = max(t_measure[0], t1)
                    if i == warmup - 1:
                        cpu_mark[0] = os.times()  # the measured requests' CPU time starts here
                    continue
                samples.append((t0, t1, thread))
                elapsed = (t1 - t_measure[0]) / 1e9
                if (len(samples) >= wanted and elapsed >= min_s) or elapsed >= max_s:
                    stop.set()

    cpu_mark = [os.times()]
    threads = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu0, cpu1 = cpu_mark[0], os.times()
    if hasattr(server, "close"):
        server.close()
    # The window: from the end of the warm-up (or the first measured start) to the last end.
    start = min(t_measure[0] or min(s for s, _, _ in samples), min(s for s, _, _ in samples))
    end = max(e for _, e, _ in samples)
    done = [s for s in samples if s[0] >= start]
    window_s = (end - start) / 1e9
    cpu_s = (cpu1.user + cpu1.system + cpu1.children_user + cpu1.children_system
             - cpu0.user - cpu0.system - cpu0.children_user - cpu0.children_system)
    n_all = len(samples)
    return {
        "app": app, "concurrency": concurrency, "warmup_requests": warmup, "requests": len(done),
        "window_s": round(window_s, 4), "capacity_rps": len(done) / window_s if window_s > 0 else None,
        "service_ms": [round((e - s) / 1e6, 3) for s, e, _ in done],
        # in-process CPU time per request (a server that runs its work in other processes, edge_tasks'
        # workers, shows only its own share here)
        "cpu_ms_per_request": round(cpu_s * 1000 / max(1, n_all), 3),
        "model_load_s": round(load_s, 2), "info": getattr(server, "info", {}),
    }


def main(app: str) -> int:
    out = Path(json.loads(os.environ[SETTINGS])["out"])
    result = measure(app)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(out)  # whole or absent
    print(f"calibrated {app}: {result['requests']} requests in {result['window_s']:.2f} s, "
          f"{result['capacity_rps']:.2f}/s at {result['concurrency']} at once", flush=True)
    return 0

