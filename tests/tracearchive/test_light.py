"""Light traces in the archive's tools (issue #58): `traces convert cellreplay`
turns CellReplay's published files (light PDO, heavy PDO, latency offsets
per packet size) into this project's heavy and light traces, keeping the
heavy part's byte capacity; `traces validate`, `stats` and `add`
understand light files; bad ones are refused naming file and line.

The CellReplay folder here is written by the test in CellReplay's format
(their traces/cellular-traces.zip is not in their repository's history we
can fetch, and is not ours to commit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuum.tracearchive import index, light, mahimahi

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "continuum", "traces"]


def traces(*args, env=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200", **(env or {})},
                          cwd=REPO)


def cellreplay_folder(d: Path, offsets: bool = True) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    # heavy: 3 packets of 1400 bytes every ms for 2 s (33.6 Mbit/s); light: a train every 100 ms
    heavy = [t for t in range(1, 2001) for _ in range(3)]
    (d / "up-heavy-pdo").write_text("".join(f"{t}\n" for t in heavy))
    (d / "down-heavy-pdo").write_text("".join(f"{t}\n" for t in heavy))
    for direction, base in (("up", 21), ("down", 21)):
        (d / f"{direction}-delay-light-pdo").write_text(
            "".join(f"{t} {base + (t // 100) % 3} 0 0 1 3 3 4\n" for t in range(0, 2001, 100)))
    if offsets:
        for direction in ("up", "down"):
            (d / f"latency-offset-{direction}").write_text("".join(f"{s} {s / 1400:.3f}\n" for s in range(100, 1500, 100)))
    return d


def test_convert_cellreplay_keeps_the_heavy_capacity_and_the_light_trains(tmp_path):
    src = cellreplay_folder(tmp_path / "cr")
    p = traces("convert", "cellreplay", str(src), "-o", str(tmp_path / "out"), "--name", "walk", "--idle-ms-up", "12")
    assert p.returncode == 0, p.stdout + p.stderr
    out = tmp_path / "out"
    for f in ("walk.up", "walk.down", "walk.up.light", "walk.down.light", "walk.up.offsets", "walk.down.offsets"):
        assert (out / f).is_file(), f
    heavy = mahimahi.read(out / "walk.up")
    # 6000 packets of 1400 bytes = 5600 opportunities of 1500 IP bytes, over the same 2 s
    assert len(heavy) == 5600 and heavy[-1] == 2000
    up = light.parse(out / "walk.up.light")
    assert (up.pdo_bytes, up.idle_ms, up.offsets) == (1400, 12.0, out / "walk.up.offsets")
    assert light.parse(out / "walk.down.light").idle_ms == light.DEFAULT_IDLE_MS
    assert [ln.pdos_ms for ln in up.lines[:2]] == [[0, 0, 1, 3, 3, 4]] * 2 and up.lines[1].base_ms == 22
    assert "CellReplay" in (out / "walk.up.light").read_text() and "GPL-3.0" in (out / "walk.up.light").read_text()
    v = traces("validate", str(out / "walk.up.light"), str(out / "walk.up"))
    assert v.returncode == 0 and "light trace: 21 trains over 2 s" in v.stdout, v.stdout + v.stderr


def test_convert_cellreplay_refuses_an_incomplete_or_bad_folder_and_writes_nothing(tmp_path):
    src = cellreplay_folder(tmp_path / "cr", offsets=False)
    (src / "down-heavy-pdo").unlink()
    p = traces("convert", "cellreplay", str(src), "-o", str(tmp_path / "out"))
    assert p.returncode != 0 and "down-heavy-pdo" in p.stdout + p.stderr and not (tmp_path / "out").exists()
    src = cellreplay_folder(tmp_path / "cr2", offsets=False)
    (src / "up-delay-light-pdo").write_text("0 20 0\n100 20 0 2\n200 x 0\n")
    p = traces("convert", "cellreplay", str(src), "-o", str(tmp_path / "out2"))
    assert p.returncode != 0 and "up-delay-light-pdo:3" in p.stdout + p.stderr and not (tmp_path / "out2").exists()


def test_validate_names_a_bad_light_files_line(tmp_path):
    f = tmp_path / "x.light"
    f.write_text("# continuum light trace\n0 20 0\n100 20 0 5 3\n200 20 0\n")
    p = traces("validate", str(f))
    assert p.returncode == 1 and f"{f}:3: delivery offsets must be non-decreasing" in p.stdout.replace("\n", ""), p.stdout


def test_active_ms_is_read_written_and_passed_on_and_a_bad_one_named(tmp_path):
    """The header's active_ms (the active-link rule): parsed, written back, and on mahimahi-link's --link keys."""
    from continuum.config.spec import LightRef

    lines = [light.LightLine(0, 20, [0, 3]), light.LightLine(100, 22, [0, 4]), light.LightLine(200, 20, [0, 3])]
    t = light.parse(light.write(tmp_path / "a.light", lines, 1504, 10.5, active_ms=5))
    assert (t.active_ms, t.idle_ms, t.lines) == (5.0, 10.5, lines)
    assert light.parse(light.write(tmp_path / "b.light", lines, 1504, 10.5)).active_ms is None
    ref = LightRef("a", tmp_path / "a.light", "0" * 64, 1504, 10.5, active_ms=t.active_ms)
    assert ref.link_keys("up").endswith(",up-light-idle-ms=10.5,up-light-active-ms=5"), ref.link_keys("up")
    (tmp_path / "c.light").write_text("# active_ms: soon\n" + (tmp_path / "b.light").read_text())
    with pytest.raises(light.LightTraceError, match=r"c.light: header active_ms: 'soon' is not a non-negative number"):
        light.parse(tmp_path / "c.light")


@pytest.fixture
def archive(tmp_path, monkeypatch):
    """A scratch archive (CONTINUUM_TRACE_ARCHIVE) so `add` writes nothing into the repository."""
    a = tmp_path / "archive"
    (a / "entries").mkdir(parents=True)
    return a


def test_add_with_light_parts_then_a_run_file_replays_them(tmp_path, archive):
    src = cellreplay_folder(tmp_path / "cr")
    traces("convert", "cellreplay", str(src), "-o", str(tmp_path / "out"), "--name", "w")
    out = tmp_path / "out"
    meta = ["--title", "a test entry", "--technology", "5G NSA", "--operator", "test", "--country", "US", "--mobility", "walking",
            "--obstacle", "none", "--date", "2026-11-28", "--recorder", "the test", "--method", "CellReplay",
            "--license", "GPL-3.0", "--citation", "none"]
    env = {"CONTINUUM_TRACE_ARCHIVE": str(archive)}
    up = light.parse(out / "w.up.light")  # an active link's latency in the header goes with the copy
    light.write(out / "w.up.light", up.lines, up.pdo_bytes, up.idle_ms, up.offsets.name if up.offsets else None, active_ms=5)
    p = traces("add", "test-walk", "--up", str(out / "w.up"), "--down", str(out / "w.down"), "--up-light", str(out / "w.up.light"),
               "--down-light", str(out / "w.down.light"), *meta, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    entry = json.loads(subprocess.run([sys.executable, "-c", "import json; from continuum.tracearchive import index; "
                                       "print(json.dumps(index.find('test-walk')[0].model_dump(mode='json')))"],
                                      capture_output=True, text=True, env={**os.environ, **env}, check=True).stdout)
    assert entry["light"] == {"up": "test-walk.up.light", "down": "test-walk.down.light"}
    assert entry["light_offsets"] == {"up": "test-walk.up.offsets", "down": "test-walk.down.offsets"}
    assert {"up-light", "down-light", "up-light-offsets", "down-light-offsets"} <= set(entry["sha256"])
    copied = archive / "contributed" / "test-walk"
    assert light.parse(copied / "test-walk.up.light").offsets == copied / "test-walk.up.offsets"
    assert (light.parse(copied / "test-walk.up.light").active_ms, light.parse(copied / "test-walk.down.light").active_ms) == (5, None)
    show = traces("show", "test-walk", env=env)
    assert show.returncode == 0 and "light" in show.stdout and "test-walk.up.light" in show.stdout, show.stdout
    # an experiment naming the entry replays its light parts (replay = "auto")
    cfg = tmp_path / "x.toml"
    cfg.write_text('[experiment]\nname = "x"\nduration_s = 5\n[mobile]\nuplink = "test-walk"\ndownlink = "test-walk"\n'
                   '[workload]\napp = "file_transfer"\nrate = 2\n')
    p = subprocess.run([sys.executable, "-m", "continuum", "run", "--dry-run", str(cfg)], capture_output=True, text=True,
                       env={**os.environ, **env, "COLUMNS": "200"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "replay   workload-aware (uplink light trace test-walk (light part)" in p.stdout, p.stdout
    # a light file changed after it was added is refused by its checksum
    (copied / "test-walk.up.light").write_text((copied / "test-walk.up.light").read_text() + "2100 20 0\n")
    p = subprocess.run([sys.executable, "-m", "continuum", "validate", str(cfg)], capture_output=True, text=True,
                       env={**os.environ, **env})
    assert p.returncode != 0 and "SHA-256" in p.stdout + p.stderr, p.stdout + p.stderr
    assert index.ARCHIVE != archive  # (this process's archive is the repository's; the subprocesses used the scratch one)


def test_record_sizes_refuses_trains_too_small_for_a_bin():
    p = traces("record", "--light", "--sizes", "--payload", "40", "--peer", "127.0.0.1")
    assert p.returncode == 2 and "--sizes" in p.stdout + p.stderr and "--payload 69" in p.stdout + p.stderr, p.stdout + p.stderr
