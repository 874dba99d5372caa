"""The index and `continuum traces ...` as a user runs them: every entry
loads, generated entries reproduce their checksums, external ones fetch from
a mirror (../shared/traces) with checksums and statistics as indexed, names
resolve with close matches, and `add` writes a complete entry or nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from continuum.tracearchive import fetch, index, mahimahi, stats

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "continuum", "traces"]


def traces(*args, env=None, check=True):
    p = subprocess.run([*CLI, *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200", **(env or {})}, cwd=REPO)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("CONTINUUM_TRACE_CACHE", str(d))
    return d


def test_every_entry_loads_with_its_metadata():
    es = index.entries()
    assert len(es) >= 15
    ids = [e.id for e in es]
    assert len(set(ids)) == len(ids)
    for e in es:
        assert e.license and e.citation and e.technology and e.method
        light = {f"{d}-light" for d in e.light} | {f"{d}-light-offsets" for d in e.light_offsets}
        assert set(e.stats) == set(e.direction_names()) == set(e.sha256) - light, e.id
        assert set(e.light) <= set(e.direction_names()) and light <= set(e.sha256), e.id
        if e.kind == "external":
            assert e.sources and all(s.url.startswith("https://") for s in e.sources), e.id
        if e.kind == "generated":
            assert set(e.recipe) == set(e.direction_names()), e.id


def test_generated_entries_reproduce_their_checksums(cache):
    for e in index.entries():
        if e.kind != "generated":
            continue
        for d in e.direction_names():
            p = fetch.materialize(e, d)  # raises when the SHA-256 differs
            st = stats.compute(mahimahi.read(p)).summary()
            assert st["opportunities"] == e.stats[d].opportunities


@pytest.mark.parametrize("entry_id", ["mahimahi-verizon-lte-short", "irish-5g-driving-download", "lumos5g-driving-104", "irish-5g-driving-ul-proxy",
                                      "lumos5g-driving-80-ul-proxy"])
def test_external_entries_fetch_from_a_mirror(shared_traces, cache, entry_id):
    before = sorted(p for p in shared_traces.rglob("*"))
    out = traces("fetch", entry_id, "--mirror", str(shared_traces)).stdout
    assert "sha256 ok" in out
    assert sorted(p for p in shared_traces.rglob("*")) == before, "fetch wrote into the mirror"
    e, _ = index.find(entry_id)
    for d in e.direction_names():
        p = cache / entry_id / e.files[d]
        assert fetch.sha256_file(p) == e.sha256[d]
        assert stats.compute(mahimahi.read(p)).summary()["mean_mbps"] == pytest.approx(e.stats[d].mean_mbps, abs=1e-3)


def test_fetch_without_mirror_or_network_says_how(cache, tmp_path):
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    p = subprocess.run([sys.executable, "-c", "from continuum.tracearchive import index, fetch; e,_=index.find('lumos5g-driving-80'); fetch.materialize(e,'down',download=False)"],
                       capture_output=True, text=True, env={**os.environ, "CONTINUUM_TRACE_MIRROR": str(empty)})
    assert p.returncode != 0 and "continuum traces fetch lumos5g-driving-80" in p.stderr


def test_list_show_stats_plot(cache, tmp_path, shared_traces):
    out = traces("list").stdout
    for i in ("const-12mbps", "markov-lte", "mahimahi-verizon-lte-short", "irish-5g-static-download"):
        assert i in out
    show = traces("show", "Verizon-LTE-short").stdout
    assert "GPL-3.0-or-later" in show and "f6cd9049f58d70f1" in show
    j = json.loads(traces("stats", "drop-12mbps-to-0.25mbps-10s.up", "--json").stdout)
    assert j["up"]["duration_s"] == 30.0 and j["up"]["outage_count"] == 0
    png = tmp_path / "plot.png"
    traces("plot", "onoff-12-48mbps-outages", "-o", str(png))
    assert png.stat().st_size > 20_000 and png.read_bytes()[:4] == b"\x89PNG"
    unknown = traces("show", "verizon-lte", check=False)
    err = " ".join(unknown.stderr.split())
    assert unknown.returncode == 1 and "close matches" in err and "Verizon-LTE-short" in err


def test_validate_and_convert_commands(tmp_path):
    good = mahimahi.write(tmp_path / "good", [1, 2, 3])
    bad = tmp_path / "bad"
    bad.write_text("1\n3\n2\n")
    p = traces("validate", str(good), str(bad), check=False)
    assert p.returncode == 1 and f"ok: {good}" in p.stdout and f"{bad}:3: error" in p.stdout
    src = tmp_path / "ps"
    src.write_text("1 12\n2 24\n")
    out = traces("convert", "per-second", str(src), "-o", str(tmp_path / "conv")).stdout
    assert "3000 opportunities" in out and mahimahi.read(tmp_path / "conv")[-1] == 2000


def test_experiment_file_refers_to_traces_by_name(tmp_path):
    cfg = (REPO / "configs" / "quickstart.toml").read_text().replace('uplink = "const-12mbps"', 'uplink = "const-12mbs"')
    (tmp_path / "x.toml").write_text(cfg)
    p = subprocess.run([sys.executable, "-m", "continuum", "validate", str(tmp_path / "x.toml")], capture_output=True, text=True)
    text = " ".join((p.stdout + p.stderr).split())
    assert p.returncode == 2 and "no trace named 'const-12mbs'" in text and "close matches: const-12mbps" in text


def test_add_writes_a_complete_entry_or_nothing(tmp_path):
    arch = tmp_path / "archive"
    shutil.copytree(REPO / "trace-archive" / "entries", arch / "entries")
    env = {"CONTINUUM_TRACE_ARCHIVE": str(arch)}
    up = mahimahi.write(tmp_path / "r.up", range(1, 2001))
    down = mahimahi.write(tmp_path / "r.down", range(1, 4001, 2))
    meta = ["--title", "My LTE", "--technology", "LTE", "--operator", "KPN", "--country", "NL", "--mobility", "static",
            "--obstacle", "none", "--date", "2026-11-20", "--recorder", "continuum traces record", "--method", "saturatr",
            "--license", "CC-BY-4.0", "--citation", "me"]
    missing = traces("add", "my-lte", "--up", str(up), *meta[:-2], env=env, check=False)
    assert missing.returncode == 1 and "--citation" in missing.stderr, missing.stderr
    badfile = tmp_path / "bad.up"
    badfile.write_text("2\n1\n")
    badp = traces("add", "my-lte", "--up", str(badfile), *meta, env=env, check=False)
    assert badp.returncode == 1 and f"{badfile}:2" in badp.stderr
    badmob = traces("add", "my-lte", "--up", str(up), *[("flying" if x == "static" else x) for x in meta], env=env, check=False)
    assert badmob.returncode == 1 and "mobility" in badmob.stderr and "walking" in badmob.stderr
    assert not (arch / "contributed").exists() and not (arch / "entries" / "my-lte.toml").exists(), "a refused add left files"
    traces("add", "my-lte", "--up", str(up), "--down", str(down), *meta, env=env)
    shown = traces("show", "my-lte", env=env).stdout
    assert "KPN" in shown and "│ 12 " in shown and "│ 6 " in shown  # mean Mbit/s up and down
    again = traces("add", "my-lte", "--up", str(up), *meta, env=env, check=False)
    assert again.returncode == 1 and "exists already" in again.stderr
