"""SMEC's GPU path: which stream priority a request's budget calls for
(runs everywhere), and the streams themselves (only with a CUDA GPU; this
project's machine has none, so that test skips and the path is untested)."""

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
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU here: the GPU path is untested on this machine")
    from smec_edge.gpu import Streams

    s = Streams(torch)
    assert s.for_budget(1 * MS, 30 * MS).priority == s.greatest
    assert s.for_budget(None, 30 * MS).priority == s.least
