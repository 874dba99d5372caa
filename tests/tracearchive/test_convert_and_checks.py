"""Converters and checks on small sources written here, plus real public
sources from ../shared when present. Round trips are per second, within one
opportunity (the fraction carried forward never loses or invents one)."""

from __future__ import annotations

import numpy as np
import pytest

from continuum.tracearchive import checks, convert, mahimahi, stats


def opportunities_per_second(ts):
    return mahimahi.per_second(ts)


def assert_round_trip(rates_mbps, ts):
    want = np.cumsum(np.array(rates_mbps) * 1e6 / 12000)
    got = np.cumsum(opportunities_per_second(ts)[: len(rates_mbps)])
    assert np.abs(got - want).max() < 1.0, (got[:10], want[:10])
    assert np.abs(opportunities_per_second(ts)[: len(rates_mbps)] - np.array(rates_mbps) * 1e6 / 12000).max() < 1.0


def test_per_second_round_trip_and_even_spread(tmp_path):
    rates = [12.0, 0.3, 7.77, 100.5, 0.0, 3.0, 48.0]
    src = tmp_path / "ps"
    src.write_text("".join(f"{i + 1}.0\t{r}\n" for i, r in enumerate(rates)))
    ts, findings = convert.to_trace(convert.read_per_second(src))
    assert [f for f in findings if f.level == "error"] == []
    assert_round_trip(rates, ts)
    assert ts[-1] == 7000, "period = the source's duration"
    # within the 12 Mbit/s second: one opportunity per ms, evenly
    first = ts[ts <= 1000]
    assert len(first) == 1000 and (np.diff(first) == 1).all()


def test_zero_rate_tail_keeps_the_period(tmp_path):
    src = tmp_path / "tail"
    src.write_text("1 12\n2 12\n3 0\n4 0\n")
    s = convert.read_per_second(src)
    ts, findings = convert.to_trace(s)
    assert ts[-1] == 4000, "without the sentinel the trace would loop after 2 s"
    assert any(f.level == "warning" and "zero rate" in f.message and f.line == 3 for f in findings), findings
    assert stats.compute(ts).outages[-1] == (2000, 4000)


def test_all_zero_source_is_an_error(tmp_path):
    src = tmp_path / "zero"
    src.write_text("1 0\n2 0\n")
    ts, findings = convert.to_trace(convert.read_per_second(src))
    assert len(ts) == 0 and any(f.level == "error" and "every rate is zero" in f.message for f in findings)


def test_gnettrack_duplicates_and_gaps(tmp_path):
    head = "Timestamp,Longitude,Latitude,Speed,Operatorname,CellID,NetworkMode,RSRP,RSRQ,SNR,CQI,RSSI,DL_bitrate,UL_bitrate,State\n"
    rows = [("2020.02.14_13.21.26", 12000, 1200), ("2020.02.14_13.21.27", 6000, 600), ("2020.02.14_13.21.27", 2000, 200),
            ("2020.02.14_13.21.30", 24000, 2400)]  # 27 twice, 28 and 29 missing
    src = tmp_path / "g.csv"
    src.write_text(head + "".join(f"{t},0,0,0,B,1,5G,-90,-10,5,12,-80,{dl},{ul},D\n" for t, dl, ul in rows))
    down = convert.read_gnettrack(src, "down")
    assert [round(x, 3) for x in down.sample_mbps] == [12.0, 4.0, 4.0, 4.0, 24.0]
    assert any("duplicated" in n for n in down.notes) and any("2 missing" in n for n in down.notes)
    ts, _ = convert.to_trace(down)
    assert_round_trip(down.sample_mbps, ts)
    zero = convert.read_gnettrack(src, "up", gap_fill="zero")
    assert [round(x, 3) for x in zero.sample_mbps] == [1.2, 0.4, 0.0, 0.0, 2.4]
    with pytest.raises(convert.ConvertError, match="DL_bitrate"):
        bad = tmp_path / "bad.csv"
        bad.write_text("a,b\n1,2\n")
        convert.read_gnettrack(bad, "down")


def test_stand_in_direction_scaled_and_trimmed(tmp_path, monkeypatch):
    """An unrecorded uplink as the downlink column, scaled, without the idle
    start: what the 5G *-ul-proxy entries do."""
    from continuum.tracearchive import fetch, index

    head = "Timestamp,DL_bitrate,UL_bitrate\n"
    rows = [("2020.02.14_13.21.26", 0, 0), ("2020.02.14_13.21.27", 0, 0), ("2020.02.14_13.21.28", 80000, 100),
            ("2020.02.14_13.21.29", 40000, 100), ("2020.02.14_13.21.30", 160000, 100)]
    (tmp_path / "g.csv").write_text(head + "".join(f"{t},{dl},{ul}\n" for t, dl, ul in rows))
    monkeypatch.setenv("CONTINUUM_TRACE_CACHE", str(tmp_path / "cache"))
    base = dict(id="t-proxy", kind="external", title="t", technology="5G NSA", operator="o", country="IE", mobility="static",
                obstacle="none", date="2020", recorder="r", method="m", license="l", citation="c", files={"up": "t.up", "down": "t.down"},
                sources=[{"name": "g.csv", "url": "https://example.invalid/g.csv", "sha256": fetch.sha256_file(tmp_path / "g.csv")}])
    conv = {"up": {"format": "gnettrack", "source": "g.csv", "column": "down", "scale": 0.5, "skip_s": 2},
            "down": {"format": "gnettrack", "source": "g.csv", "skip_s": 2}}
    e = index.Entry(**base, convert=conv)
    up = mahimahi.read(fetch.materialize(e, "up", mirror=tmp_path))
    down = mahimahi.read(fetch.materialize(e, "down", mirror=tmp_path))
    assert_round_trip([40.0, 20.0, 80.0], up)
    assert_round_trip([80.0, 40.0, 160.0], down)
    assert up[-1] == down[-1] == 3000
    base["id"] = "t-bad"  # a fresh cache entry
    bad = index.Entry(**base, convert={"up": {"format": "gnettrack", "source": "g.csv", "skip_s": 5}, "down": conv["down"]})
    with pytest.raises(convert.ConvertError, match="cannot skip 5 s of a 5 s source"):
        fetch.materialize(bad, "up", mirror=tmp_path)
    base["id"] = "t-mm"
    mm = index.Entry(**base, convert={"up": {"format": "mahimahi", "source": "g.csv", "scale": 2.0}, "down": conv["down"]})
    with pytest.raises(fetch.FetchError, match="rate formats"):
        fetch.materialize(mm, "up", mirror=tmp_path)


def test_sixcol_norway_belgium(tmp_path):
    # bytes and ms since the previous row: 1.5 MB in 1000 ms = 12 Mbit/s, then 375 kB in 500 ms = 6 Mbit/s
    src = tmp_path / "report.log"
    src.write_text("1289406399 549692 59.85 10.78 1500000 1000\n1289406400 49692 59.85 10.78 375000 500\n")
    ts, _ = convert.to_trace(convert.read_sixcol(src))
    assert len(ts) == 1000 + 250 and ts[-1] == 1500
    bad = tmp_path / "five"
    bad.write_text("1 2 3 4 5\n")
    with pytest.raises(convert.ConvertError, match=r"five:1: expected six columns"):
        convert.read_sixcol(bad)


def test_generic_csv_units_agree(tmp_path):
    mbps = tmp_path / "m.csv"
    mbps.write_text("time,rate\n0,12\n1,24\n2,6\n")
    kbytes = tmp_path / "k.csv"
    kbytes.write_text("t_ms;thr\n0;1500\n1000;3000\n2000;750\n")
    a, _ = convert.to_trace(convert.read_csv(mbps, "time", "rate", "s", "mbps"))
    b, _ = convert.to_trace(convert.read_csv(kbytes, "t_ms", "thr", "ms", "kBps", delimiter=";"))
    assert np.array_equal(a, b) and len(a) == 1000 + 2000 + 500
    with pytest.raises(convert.ConvertError, match="rate unit 'furlongs'"):
        convert.read_csv(mbps, "time", "rate", "s", "furlongs")
    with pytest.raises(convert.ConvertError, match="no column 'speed'"):
        convert.read_csv(mbps, "time", "speed")


def test_lumos_per_second_round_trip(shared_traces):
    src = shared_traces / "lumos5g-per-second" / "5g_trace_104_driving"
    s = convert.read_per_second(src)
    ts, _ = convert.to_trace(s)
    assert_round_trip(s.sample_mbps, ts)


@pytest.mark.parametrize("content,line,words", [
    ("", None, "empty"),
    ("1\n2\nx3\n", 3, "not a non-negative integer"),
    ("1\n5\n4\n", 3, "smaller than the one before"),
    ("0\n0\n", 2, "all-zero"),
])
def test_mahimahi_rules_name_file_and_line(tmp_path, content, line, words):
    p = tmp_path / "t"
    p.write_text(content)
    found = checks.check_file(p)
    assert len(found) == 1 and found[0].level == "error" and found[0].line == line and words in found[0].message, found
    assert str(found[0]).startswith(f"{p}:{line}:" if line else f"{p}:")


def test_our_warnings(tmp_path):
    tail = tmp_path / "tail"
    mahimahi.write(tail, list(range(1, 1001)) + [5000])
    assert any("zero-rate tail" in f.message and f.line == 1001 for f in checks.check_file(tail))
    absurd = tmp_path / "absurd"
    mahimahi.write(absurd, [1] * 10_000_000 + [1000])
    assert any("absurd" in f.message for f in checks.check_file(absurd))


def test_stats_outages_and_capacity(tmp_path):
    ts = np.concatenate([np.arange(1, 1001), np.arange(1501, 3001)])  # 12 Mbit/s with a 500 ms hole
    st = stats.compute(ts)
    assert st.outages == [(1000, 1501)]
    assert st.per_second_mbps == [12.0, 6.0, 12.0]
    assert st.duration_s == 3.0 and abs(st.mean_mbps - 10.0) < 1e-9
