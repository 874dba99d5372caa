"""Handovers from recorded drives (continuum/tracearchive/drive.py): on the
Irish 5G dataset's real driving logs, one handover per change of CellID
between consecutive rows, counted here with plain csv; bad rows named by
file and line; gaps said; and a [[timeline]] that replays an archive
entry's handovers at their times on its traces' clock."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import pytest

from continuum import experiment
from continuum.errors import ConfigError
from continuum.tracearchive import drive
from continuum.tracearchive.convert import ConvertError

REPO = Path(__file__).resolve().parents[2]
ZIP = REPO.parent / "shared" / "traces" / "irish-5g" / "5G-production-dataset.zip"
HEADER = "Timestamp,Longitude,Latitude,Speed,Operatorname,CellID,NetworkMode,RSRP,DL_bitrate,UL_bitrate\n"


def _driving_logs() -> dict[str, str]:
    if not ZIP.is_file():
        pytest.skip(f"the Irish 5G dataset is not at {ZIP} (clone the repository beside ../shared)")
    with zipfile.ZipFile(ZIP) as z:
        names = [n for n in z.namelist() if "/Driving/" in n and n.endswith(".csv") and "__MACOSX" not in n]
        return {n: io.TextIOWrapper(z.open(n), errors="replace").read() for n in names}


def test_every_cell_change_of_every_real_driving_log_is_one_handover():
    logs = _driving_logs()
    assert len(logs) >= 10
    total = 0
    for name, text in logs.items():
        rows, last = [], ""
        for r in csv.DictReader(io.StringIO(text)):  # rows stepping back in time are left out, as the reader does
            if r["Timestamp"] >= last:  # (YYYY.MM.DD_HH.MM.SS sorts as text)
                rows.append(r["CellID"].strip())
                last = r["Timestamp"]
        cells = rows
        changes = sum(1 for a, b in zip(cells, cells[1:]) if a != b)
        try:
            d = drive.read_cells(text, name)
        except ConvertError as e:  # a log with rows that do not parse: named, with their lines
            assert f"{name}:" in str(e) and "bad" in str(e), e
            continue
        assert len(d.handovers) == changes, name
        assert all(h.source != h.target for h in d.handovers)
        assert [h.t_s for h in d.handovers] == sorted(h.t_s for h in d.handovers)
        total += changes
    assert total > 0, "the driving logs recorded no cell change at all"


def test_bad_rows_are_named_by_line_and_gaps_are_said():
    text = HEADER + ("2020.02.27_20.00.00,0,0,0,B,11,5G,-90,1000,10\n"
                     "2020.02.27_20.00.01,0,0,0,B,11,5G,-90,1000,10\n"
                     "2020.02.27_20.00.05,0,0,0,B,12,5G,-90,1000,10\n"
                     "2020.02.27_20.00.06,0,0,0,B,11,5G,-90,1000,10\n")
    d = drive.read_cells(text, "drive.csv")
    assert [(h.t_s, h.source, h.target, h.line) for h in d.handovers] == [(5, "11", "12", 4), (6, "12", "11", 5)]
    assert d.duration_s == 7 and d.notes == ("drive.csv:3-4: 3 second(s) without a row; the change from cell 11 to 12 is "
                                             "placed at line 4",)
    bad = HEADER + ("2020.02.27_20.00.00,0,0,0,B,11,5G,-90,1000,10\n"
                    "yesterday,0,0,0,B,11,5G,-90,1000,10\n"
                    "2020.02.27_20.00.02,0,0,0,B,-,5G,-90,1000,10\n")
    with pytest.raises(ConvertError) as e:
        drive.read_cells(bad, "drive.csv")
    assert "drive.csv:3: bad Timestamp 'yesterday'" in str(e.value) and "drive.csv:4: bad CellID '-'" in str(e.value)
    with pytest.raises(ConvertError, match="needs the columns Timestamp and CellID"):
        drive.read_cells("a,b\n1,2\n", "x.csv")


def test_a_timeline_replays_an_entrys_handovers_on_its_traces_clock(tmp_path):
    logs = _driving_logs()
    text = logs["5G-production-dataset/Download/Driving/B_2020.02.27_20.35.57.csv"]
    rows = list(csv.DictReader(io.StringIO(text)))
    import datetime as dt

    sec = [int(dt.datetime.strptime(r["Timestamp"], "%Y.%m.%d_%H.%M.%S").timestamp()) for r in rows]
    # irish-5g-driving-ul-proxy leaves out the drive's first 7 s: its clock starts there
    want = [s - sec[0] - 7 for s, a, b in zip(sec[1:], rows, rows[1:]) if a["CellID"] != b["CellID"] and s - sec[0] - 7 < 145]
    spec = experiment.load(REPO / "configs" / "mobility-drive.toml", materialize=False)
    got = [e.t_s for e in spec.timeline]
    assert got == want and len(got) >= 3, (got, want)
    assert all(e.kind == "outage" and e.outage_s == 0.05 and e.queue == "keep" for e in spec.timeline)
    assert spec.timeline[0].label().startswith("handover ")
    own = tmp_path / "drive.csv"
    own.write_text(HEADER + "2020.02.27_20.00.00,0,0,0,B,11,5G,-90,1000,10\n2020.02.27_20.00.01,0,0,0,B,12,5G,-90,1000,10\n")
    f = tmp_path / "own.toml"
    f.write_text((REPO / "configs" / "quickstart.toml").read_text() + '\n[[timeline]]\nt_s = 0\nhandovers = "drive.csv"\n')
    # a 2-s drive in a 35-s repetition loops, as its traces would: a handover 1 s into every loop
    assert [e.t_s for e in experiment.load(f, materialize=False).timeline][:3] == [1.0, 3.0, 5.0]
    f.write_text((REPO / "configs" / "quickstart.toml").read_text() + '\n[[timeline]]\nt_s = 0\nhandovers = "const-12mbps"\n')
    with pytest.raises(ConfigError) as e:
        experiment.load(f, materialize=False)
    assert "timeline[0].handovers" in str(e.value) and "G-NetTrack" in str(e.value)
