"""srsENB's per-UE radio KPIs from its JSON report (`[expert]
report_json_enable`): each metrics entry carries the wall-clock time it was
taken (seconds since the epoch, ms precision), so the KPIs sit on the same
time axis as the run's requests, which the CSV metrics (time counted from
the program's start) would not.

The report is a stream of pretty-printed JSON objects, one after another
(srslog's JSON formatter); entries of other types (RRC events, S1 context)
are skipped here."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pandas as pd

UE_FIELDS = ("dl_cqi", "dl_mcs", "dl_bitrate", "dl_bler", "ul_snr", "ul_mcs", "ul_bitrate", "ul_bler", "ul_phr", "ul_bsr")
COLUMNS = ("t_ns", "pci", "rnti", *UE_FIELDS)


def objects(text: str) -> list[dict]:
    """Every JSON object in the stream; a last one cut off mid-write is left out."""
    out: list[dict] = []
    decoder, i = json.JSONDecoder(), 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return out
        try:
            obj, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            return out
        if isinstance(obj, dict):
            out.append(obj)


def enb_report(path: Path) -> pd.DataFrame:
    """One row per UE per metrics period: t_ns (epoch), the cell's PCI, the UE's RNTI and its KPIs
    (bit rates in bit/s, BLER as a fraction, SNR in dB); empty when the report is absent."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return pd.DataFrame(columns=list(COLUMNS))
    rows = []
    for entry in objects(text):
        if entry.get("type") != "metrics" or "timestamp" not in entry:
            continue
        t_ns = int(round(float(entry["timestamp"]) * 1e3)) * 1_000_000  # written with ms precision
        for cell in entry.get("cell_list", []):
            c = cell.get("cell_container", cell)
            for ue in c.get("ue_list", []):
                u = ue.get("ue_container", ue)
                rows.append({"t_ns": t_ns, "pci": c.get("pci"), "rnti": u.get("ue_rnti"),
                             **{k: u.get(k) for k in UE_FIELDS}})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def summarize(kpis: pd.DataFrame, start_ns: int, end_ns: int) -> dict | None:
    """Medians over the measured window of the radio KPIs, and peaks of the bit rates."""
    w = kpis[(kpis["t_ns"] >= start_ns) & (kpis["t_ns"] <= end_ns)]
    if w.empty:
        return None
    med = {k: round(float(w[k].astype(float).median()), 3) for k in ("dl_mcs", "ul_mcs", "dl_cqi", "ul_snr", "dl_bler", "ul_bler")}
    return {"periods": len(w), "ues": int(w["rnti"].nunique()), "median": med,
            "max_dl_mbps": round(float(w["dl_bitrate"].astype(float).max()) / 1e6, 3),
            "max_ul_mbps": round(float(w["ul_bitrate"].astype(float).max()) / 1e6, 3)}


# srsENB's MAC pcap (srsran/common/pcap.h, pcap.c): each record opens with the MAC-LTE context (radio
# type, direction, RNTI type, then tagged fields: RNTI at 3, UE id at 6, the frame/subframe at 9); with
# DLT 149 (UDP, what release 23.11 writes) behind a dummy UDP header and the string "mac-lte".
MAC_LTE_DLT, UDP_DLT = 147, 149
UDP_START = 8 + len(b"mac-lte")
DOWNLINK = 1
FRAME_SUBFRAME_TAG = 0x04
TTI_WRAP = 10240  # 1024 frames of 10 subframes
TTI_CSV = "tti-times.csv"
REORDER_TTIS = 50


def tti_times(path: Path) -> list[tuple[int, int]]:
    """(wall-clock ns, TTI unwrapped) of each downlink PDU in srsENB's MAC pcap; empty when the file is
    absent or not one. Only the UE's PDUs are written, so a quiet stretch leaves a gap, which may hold
    wraps of the frame number (every 10.24 s of TTIs): the TTIs gone by are unwrapped with the wall clock,
    the most that fit the time gone by (ZMQ's radio never runs ahead of real time). Parallel workers write
    a few PDUs out of TTI order: a step back of under 50 TTIs is one."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    if len(data) < 24 or struct.unpack_from("<I", data, 0)[0] != 0xA1B2C3D4:
        return []
    dlt = struct.unpack_from("<I", data, 20)[0]
    if dlt not in (MAC_LTE_DLT, UDP_DLT):
        return []
    at = UDP_START if dlt == UDP_DLT else 0
    out: list[tuple[int, int]] = []
    i = 24
    while i + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack_from("<IIII", data, i)
        rec = data[i + 16 + at:i + 16 + incl]
        i += 16 + incl
        if len(rec) < 12 or rec[1] != DOWNLINK or rec[9] != FRAME_SUBFRAME_TAG:
            continue
        sfn_sf = struct.unpack_from(">H", rec, 10)[0]
        tti, t = (sfn_sf >> 4) * 10 + (sfn_sf & 0xF), sec * 1_000_000_000 + usec * 1000
        if not out:
            out.append((t, tti))
            continue
        last_t, last = out[-1]
        step = (tti - last) % TTI_WRAP
        if step > TTI_WRAP - REORDER_TTIS:
            step -= TTI_WRAP  # written out of order
        step += TTI_WRAP * max(0, int(((t - last_t) / 1e6 + REORDER_TTIS - step) // TTI_WRAP))
        out.append((t, last + step))
    return out


def tti_samples(folder: Path, pcap_name: str) -> list[tuple[int, int]]:
    """The (wall-clock ns, TTI) samples of a run's srsRAN folder. The first call turns srsENB's MAC pcap
    (about 10 MB for a minute of W1: every PDU whole) into tti-times.csv (tens of KB) and removes it."""
    csv, pcap = folder / TTI_CSV, folder / pcap_name
    if pcap.exists():
        samples = tti_times(pcap)
        csv.write_text("t_ns,tti\n" + "".join(f"{t},{k}\n" for t, k in samples))
        pcap.unlink()
        return samples
    try:
        rows = csv.read_text().splitlines()[1:]
    except OSError:
        return []
    return [(int(a), int(b)) for a, b in (r.split(",") for r in rows)]


def pace(samples: list[tuple[int, int]], start_ns: int, end_ns: int) -> dict | None:
    """How fast the stack's TTIs went by against the wall clock over [start, end]: 1.0 is real time (a
    TTI per ms). ZMQ's radio paces each subframe by a sleep, so a stack that lacks CPU falls behind and
    every delay it adds stretches with it. The least-squares slope of TTI on time, and the most the
    stack fell behind real time within the window (ms), from the window's downlink PDUs."""
    w = [(t, k) for t, k in samples if start_ns <= t <= end_ns]
    if len(w) < 10 or w[-1][0] - w[0][0] < 1_000_000_000:
        return None
    t0, k0 = w[0]
    xs = [(t - t0) / 1e6 for t, _ in w]
    ys = [k - k0 for _, k in w]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    behind = max(x - y for x, y in zip(xs, ys)) - min(x - y for x, y in zip(xs, ys))
    return {"pace": round(slope, 4), "behind_ms": round(behind, 1), "seconds": round(xs[-1] / 1e3, 1)}
