#!/usr/bin/env python3
"""Fuzz the experiment-file loader (`continuum validate`'s path) with
Hypothesis: documents built from a valid file by setting, deleting and
retyping keys (with the values that break loaders: huge and negative
numbers, nan, NUL bytes, `~user` paths, commas, unicode), and some with
their text damaged so the TOML parser rejects them.

Every document must either load, or raise ConfigError whose every issue
names this file, a key path inside the file (or `(syntax)`), and says what
is wrong. Anything else (another exception, an issue without a key) is a
crash, printed with the document. Nothing is materialized: the loader runs
with materialize=False, as `continuum validate` does.

    experiments/reliability/fuzz_config.py --cases 1000000 [--jobs 2] [--seed 1]

tests/orchestrator/test_config_fuzz.py runs the same check on a few hundred
cases in the test command; docs/reliability.md has the million-case figures.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import tempfile
import time
import tomllib
import traceback
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from continuum import experiment  # noqa: E402
from continuum.config import raw  # noqa: E402
from continuum.edge.registry import SYSTEMS  # noqa: E402
from continuum.errors import ConfigError  # noqa: E402

BASE = tomllib.loads((REPO / "tests" / "orchestrator" / "configs" / "good-full.toml").read_text())
SECTIONS = (*raw.ExperimentFile.model_fields, *(s.table for s in SYSTEMS.values() if s.table))

# Every key the schema knows, as paths, plus a few it does not.
def _paths(model: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, field in model.model_fields.items():
        ann = field.annotation
        out.append((*prefix, name))
        if isinstance(ann, type) and issubclass(ann, raw.BaseModel):
            out += _paths(ann, (*prefix, name))
    return out


KEY_PATHS = _paths(raw.ExperimentFile) + [("workload", "custom", k) for k in raw.Custom.model_fields]
# [edge.*]: each table is an edge system's (continuum/edge/registry.py), not raw's
KEY_PATHS += [p for s in SYSTEMS.values() if s.section for p in [("edge", s.section), *_paths(s.model, ("edge", s.section))]]
# and a top-level table an edge system owns ([transport])
KEY_PATHS += [p for s in SYSTEMS.values() if s.table for p in [(s.table,), *_paths(s.model, (s.table,))]]
KEY_PATHS += [("experiment", "duraton"), ("nodes", "router"), ("mobile", "uplink", "x"), ("bogus",), ("workload", "params", "bank_size")]

ODD_STRINGS = [
    "", " ", "0", "-1", "1e999", "nan", "512M", "1.5G", "15M", "9999999999G", "abc", "const-12mbps", "const-48mbps",
    "const_12_48", "lte_nl_kpn_mahimahi", "base_edge", "us_east_1", "edge", "cloud", "process", "container",
    "image_classification", "translation", "custom", "droptail", "codel", "packets=100", "target=5, interval=100",
    "packets=-1", "bytes=x", "10.202.0.0/16:22", "300.1.1.1", "[fd00::/64]:22", "a,b=c", "x,netns=foo", "a:b",
    "{name}", "line\nbreak", "tab\t", "quote\"'", "nul\x00byte", "~nosuchuser/t", "~/t", "/", ".", "..", "/dev/zero",
    "/etc/hostname", "../../../../etc/passwd", "runs", "é", "\u202e", "x" * 300, "reset", "additive", "lognormal",
]

scalars = st.one_of(
    st.sampled_from(ODD_STRINGS),
    st.text(max_size=12),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([0, 1, -1, 2, 16 << 20, 2**31, 2**63 - 1, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 0.5, 1.0, 1e-9, 86400.0, 86401.0, -0.0]),
    st.booleans(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "count", "x", "name"]), inner, max_size=3)),
    max_leaves=5,
)


def _set(doc: dict, path: tuple[str, ...], value: Any) -> None:
    d = doc
    for k in path[:-1]:
        nxt = d.get(k)
        if not isinstance(nxt, dict):
            nxt = d[k] = {}
        d = nxt
    d[path[-1]] = value


def _delete(doc: dict, path: tuple[str, ...]) -> None:
    d: Any = doc
    for k in path[:-1]:
        d = d.get(k) if isinstance(d, dict) else None
    if isinstance(d, dict):
        d.pop(path[-1], None)


mutation = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(KEY_PATHS), values),
    st.tuples(st.just("delete"), st.sampled_from(KEY_PATHS + [(s,) for s in SECTIONS]), st.none()),
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    doc = tomllib.loads(tomli_w.dumps(BASE))  # a deep copy
    for op, path, value in draw(st.lists(mutation, max_size=6)):
        if op == "set":
            _set(doc, path, value)
        else:
            _delete(doc, path)
    try:
        text = tomli_w.dumps(doc)
    except (TypeError, ValueError):  # a value TOML cannot hold (tomli_w refuses e.g. None)
        text = tomli_w.dumps(BASE)
    if draw(st.integers(0, 9)) == 0:  # damage the text: the TOML syntax path
        at = draw(st.integers(0, max(0, len(text) - 1)))
        cut = draw(st.integers(0, 20))
        text = text[:at] + draw(st.sampled_from(["", "=", "[", "]]", '"', "\n[experiment]\n", "\x00", "\\u"])) + text[at + cut:]
    return text


class Counts:
    loaded = 0
    rejected = 0
    issues = 0


def check(text: str, path: Path) -> None:
    """Load one document; raise AssertionError on anything but a clear outcome."""
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        spec = experiment.load(path, materialize=False)
    except ConfigError as e:
        Counts.rejected += 1
        Counts.issues += len(e.issues)
        assert e.issues, "ConfigError without issues"
        for i in e.issues:
            assert i.file == str(path), f"issue names another file: {i}"
            head = i.key.split(".")[0]
            assert i.key in ("(syntax)", "(file)") or head in SECTIONS or head in tomllib.loads(text), f"issue names no key: {i}"
            assert len(i.message) > 8, f"unclear issue: {i}"
        return
    Counts.loaded += 1
    numbers = [spec.duration_s, spec.warmup_s, spec.core.edge_ms, spec.core.cloud_ms, spec.core.jitter_ms,
               spec.workload.rate, spec.workload.timeout_s, *(n.cpus for n in spec.nodes)]
    assert all(math.isfinite(x) and x >= 0 for x in numbers), f"a loaded number is not a finite one: {numbers}"
    assert spec.name and spec.duration_s > 0 and spec.nodes and all(n.memory_bytes >= 16 << 20 for n in spec.nodes)
    assert not any(ord(ch) < 32 for ch in str(spec.output)), f"output {spec.output!r} holds a control character"


def _run(args: tuple[int, int, int]) -> tuple[int, int, int, list[str]]:
    """One worker: `cases` documents from `base_seed`, in batches (Hypothesis
    keeps every case of a run in memory, so a run is kept to one batch)."""
    cases, base_seed, batch = args
    Counts.loaded = Counts.rejected = Counts.issues = 0
    crashes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "experiment.toml"
        for b in range(0, cases, batch):

            @seed(base_seed * 1_000_003 + b)
            @settings(max_examples=min(batch, cases - b), database=None, deadline=None, derandomize=False,
                      phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck), print_blob=False)
            @given(documents())
            def one(text: str) -> None:
                check(text, path)

            try:
                one()
            except Exception:  # a crash: keep the shrunk example and go on with the next batch
                crashes.append(traceback.format_exc(limit=-3))
    return Counts.loaded, Counts.rejected, Counts.issues, crashes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1_000_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=5000)
    a = ap.parse_args()
    per = [a.cases // a.jobs + (1 if i < a.cases % a.jobs else 0) for i in range(a.jobs)]
    t0 = time.monotonic()
    with multiprocessing.get_context("fork").Pool(a.jobs) as pool:
        results = pool.map(_run, [(n, a.seed * 100 + i, a.batch) for i, n in enumerate(per)])
    loaded = sum(r[0] for r in results)
    rejected = sum(r[1] for r in results)
    issues = sum(r[2] for r in results)
    crashes = [c for r in results for c in r[3]]
    print(f"experiment-file loader: {loaded + rejected} cases in {time.monotonic() - t0:.0f} s ({a.jobs} jobs, seed {a.seed}): "
          f"{loaded} loaded, {rejected} rejected with {issues} issues each naming file and key, {len(crashes)} crashes")
    distinct: dict[str, list[str]] = {}
    for c in crashes:  # one report per distinct failure (its last line), with how many batches hit it
        distinct.setdefault(c.strip().splitlines()[-1], []).append(c)
    for what, cs in distinct.items():
        print(f"--- {len(cs)} batch(es) ended by: {what}\n{cs[0]}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
