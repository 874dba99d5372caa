"""SMEC's GPU path: which stream priority a request's budget calls for
(runs everywhere), and the streams themselves (only with a CUDA GPU; this
project's machine has none, so those skip; they passed on a lent H100)."""

from __future__ import annotations

import pytest

from smec_edge.gpu import stream_priority

MS = 1_000_000


def test_urgent_requests_get_the_highest_priority_relaxed_ones_the_default():
    least, greatest = 0, -5  # an H100's range
    assert stream_priority(5 * MS, 30 * MS, least, greatest) == greatest
    assert stream_priority(-1, 30 * MS, least, greatest) == greatest  # spent: the most urgent of all
    assert stream_priority(60 * MS, 30 * MS, least, greatest) == least
    assert stream_priority(None, 30 * MS, least, greatest) == least  # nothing known: nothing promised
    between = [stream_priority(b * MS, 30 * MS, least, greatest) for b in (59, 50, 40, 31, 30)]
    assert between == sorted(between, reverse=True) and greatest < min(between) and max(between) <= least
    assert stream_priority(5 * MS, 30 * MS, 0, 0) == 0  # a device without priorities


def test_streams_exist_at_every_level_of_the_device():
    torch = cuda_torch()
    from smec_edge.gpu import Streams

    s = Streams(torch)
    assert s.for_budget(1 * MS, 30 * MS).priority == s.greatest
    assert s.for_budget(None, 30 * MS).priority == s.least



def cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here (these passed on an H100 on 2026-11-23)")
    return torch


def test_urgent_work_overtakes_a_low_priority_flood():
    """The reason for the GPU path: while a neighbour's convolutions over 1080p
    batches fill the GPU at the lowest priority (ESPCN at its original width,
    as in experiments/smec/gpu/gpu_streams.py), a request of many small kernels
    (like a detector's) waits behind each of them on a default stream, but
    runs between their blocks on the highest-priority stream."""
    torch = cuda_torch()
    import time

    from workloads.video_conferencing.server import espcn

    least, greatest = torch.cuda.Stream.priority_range()
    if least == greatest:
        pytest.skip("this GPU has no stream priorities")
    flood = torch.cuda.Stream(priority=least)
    neighbour, frames = espcn(torch, 2, (64, 32)).cuda().eval(), torch.rand(4, 3, 1080, 1920, device="cuda")
    small = torch.rand(1, 16, 64, 64, device="cuda")
    conv = torch.nn.Conv2d(16, 16, 3, padding=1).cuda().eval()

    def request_ms(priority: int) -> float:
        s = torch.cuda.Stream(priority=priority)
        with torch.no_grad():
            with torch.cuda.stream(flood):
                for _ in range(8):
                    neighbour(frames)
            t0 = time.perf_counter()
            with torch.cuda.stream(s):
                x = small
                for _ in range(20):
                    x = torch.tanh(conv(x))
            s.synchronize()
            dt = (time.perf_counter() - t0) * 1000
        flood.synchronize()
        return dt

    request_ms(least), request_ms(greatest)  # warm-up
    default = sorted(request_ms(least) for _ in range(5))[2]
    urgent = sorted(request_ms(greatest) for _ in range(5))[2]
    print(f"a 40-kernel request beside a flood of 1080p ESPCN batches: default priority {default:.2f} ms, urgent {urgent:.2f} ms")
    assert urgent < 0.5 * default, f"urgent {urgent:.2f} ms vs default {default:.2f} ms: the priority did not help"


def test_mps_serves_a_process_and_leaves_nothing_behind(tmp_path):
    """The daemon SMEC's mixes run under on a GPU (smec_edge.mps): a CUDA
    process with its environment is served by it, `continuum destroy` finds
    it by its run, and stopping it (twice) leaves no MPS process."""
    from smec_edge import mps

    why = mps.unavailable()
    if why:
        pytest.skip(f"CUDA MPS cannot run here: {why}")
    cuda_torch()
    import os
    import subprocess
    import sys

    daemon = mps.Mps(tmp_path / mps.MARK)
    daemon.start(owner="run1")
    try:
        assert mps.leftovers("run1") == [daemon.folder] and mps.leftovers("run2") == []
        r = subprocess.run([sys.executable, "-c", "import torch; print(torch.ones(4, device='cuda').sum().item())"],
                           env={**os.environ, **daemon.env}, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == "4.0", r.stderr
        assert daemon.ask("get_server_list").split(), "no MPS server was started for the CUDA process"
    finally:
        daemon.stop()
    assert mps._daemons(daemon.folder) == [] and mps.leftovers("run1") == []
    daemon.stop()
