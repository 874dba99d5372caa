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
