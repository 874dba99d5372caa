"""Flow completion times (issue 41) from a run's requests (the flows app's
answers are its flows: their downlink time is the FCT, the server's first
byte to the UE's last), by flow size and by the UE's channel, with the
slowdown: FCT over the flow's time alone at the UE's channel with every block
(bytes x 8 / the channel trace's mean rate). With pDCell's transport, the
CU's log (links/cu.log, mahimahi-link --cu-log) adds its buffer: occupancy
over time, its peak against its bound, credits, credits that brought no data
(re-credited: pDCell's retransmissions) and packets not admitted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from continuum.traces import mean_mbit

SIZE_CLASSES = (("small (<= 100 KB)", 0, 100_000), ("medium (100 KB - 1 MB)", 100_000, 1_000_000), ("large (> 1 MB)", 1_000_000, np.inf))


def channels(run_dir: Path) -> dict[str, tuple[str, float | None]]:
    """Each UE's downlink channel: its trace's name and mean rate (Mbit/s), from the manifest."""
    m = json.loads((run_dir / "manifest.json").read_text())
    default = m.get("traces", {}).get("downlink", {})
    out = {}
    for member in (m.get("cell") or {}).get("members", []):
        t = member.get("downlink") or default
        out[member["name"]] = (str(t.get("given", "?")), mean_mbit(t.get("path")))
    return out


def flows(run_dir: Path, df: pd.DataFrame) -> pd.DataFrame:
    """The measured flows: endpoint, bytes (the size asked: raw/flows-ENDPOINT.csv), fct_ms (NaN: not complete within the
    timeout), channel, ideal_ms, slowdown."""
    f = df[(df.get("app") == "flows") & (df["phase"] == "measure")] if "app" in df else df.iloc[0:0]
    if f.empty:
        return f
    ch = channels(run_dir)
    asked = pd.concat([pd.read_csv(p).assign(endpoint=p.stem.removeprefix("flows-")) for p in sorted((run_dir / "raw").glob("flows-*.csv"))]
                      or [pd.DataFrame(columns=["repetition", "seq", "bytes", "endpoint"])])
    size = f.merge(asked, on=["endpoint", "repetition", "seq"], how="left")["bytes"].to_numpy()
    f = f.assign(bytes=np.where(pd.notna(size), size, f["response_bytes"]), fct_ms=f["downlink_ms"].where(f["status"] == "ok"),
                 channel=f["endpoint"].map(lambda e: ch.get(e, ("?", None))[0]),
                 channel_mbit=f["endpoint"].map(lambda e: ch.get(e, ("?", None))[1]))
    f["ideal_ms"] = f["bytes"] * 8 / (f["channel_mbit"].astype(float) * 1e3)
    f["slowdown"] = f["fct_ms"] / f["ideal_ms"]
    return f


def _stats(g: pd.DataFrame) -> dict[str, Any]:
    done = g.dropna(subset=["fct_ms"])
    q = lambda s, p: None if s.empty else round(float(s.quantile(p)), 3)  # noqa: E731
    return {"flows": int(len(g)), "complete": int(len(done)), "fct_p50_ms": q(done["fct_ms"], 0.5), "fct_p99_ms": q(done["fct_ms"], 0.99),
            "slowdown_p50": q(done["slowdown"].dropna(), 0.5), "slowdown_p99": q(done["slowdown"].dropna(), 0.99)}


def cu_log(run_dir: Path) -> tuple[dict[str, str], pd.DataFrame, dict[str, Any]] | None:
    """The CU's header (key=value), its occupancy per slot (epoch ns, total bytes), and its counters."""
    path = run_dir / "links" / "cu.log"
    if not path.exists():
        return None
    head: dict[str, str] = {}
    t0, occ, ues, peak = 0, [], [], 0
    for line in path.read_text().splitlines():
        f = line.split()
        if line.startswith("# mahimahi-link cu "):
            head = dict(kv.split("=", 1) for kv in f[3:] if "=" in kv)
        elif not f or f[0].startswith("#"):
            continue
        elif f[0] == "t0":
            t0 = int(f[1])
        elif f[0] == "o":
            occ.append((int(f[1]), int(f[2])))
        elif f[0] == "u":
            ues.append(dict(zip(("peak_bytes", "credits", "expired", "admitted", "not_admitted", "duplicates"), map(int, f[2:8]))))
        elif f[0] == "P":
            peak = int(f[1])
    o = pd.DataFrame(occ, columns=["t_ns", "bytes"])
    o["t_ns"] += t0
    counters = {k: sum(u[k] for u in ues) for k in ("credits", "expired", "admitted", "not_admitted", "duplicates")}
    return head, o, {"peak_bytes": peak, "ues_peak_bytes": [u["peak_bytes"] for u in ues], **counters}


def summarize(run_dir: Path, df: pd.DataFrame) -> dict | None:
    f = flows(run_dir, df)
    if f.empty:
        return None
    m = json.loads((run_dir / "manifest.json").read_text())
    t = m.get("transport") or {"kind": "tcp"}
    out: dict[str, Any] = {"kind": t.get("kind", "tcp"), "congestion_control": t.get("congestion_control"),
                           "downlink_scheduler": (m.get("cell") or {}).get("downlink"),
                           "all": _stats(f), "by_size": {}, "by_channel": {}}
    # The load: the bytes asked for in the measured window over what the cell carries with its time shared
    # equally (the mean of the UEs' channels): the utilisation the paper states its load as.
    rates = [r for _, r in channels(run_dir).values() if r]
    window_s = (f["t_drawn"].max() - f["t_drawn"].min()) / 1e9
    if rates and window_s > 0:
        capacity = sum(rates) / len(rates)
        out["cell_capacity_mbit"] = round(capacity, 3)
        out["offered_load"] = round(float(f["bytes"].sum()) * 8 / window_s / (capacity * 1e6), 3)
    for name, lo, hi in SIZE_CLASSES:
        g = f[(f["bytes"] > lo) & (f["bytes"] <= hi)]
        if not g.empty:
            out["by_size"][name] = _stats(g)
    for (name, mbit), g in f.groupby(["channel", "channel_mbit"], dropna=False):
        out["by_channel"][f"{name} ({mbit:.0f} Mbit/s)" if pd.notna(mbit) else str(name)] = _stats(g)
    sent = [pd.read_csv(p) for p in sorted((run_dir / "raw").glob("answers-*.csv"))]
    if sent:
        a = pd.concat(sent)
        a = a[a["request_id"].astype(str).isin(set(f["request_id"].astype(str)))]
        segments = float((a["bytes"] / 1448).apply(np.ceil).sum())
        out["tcp_retransmissions"] = int(a["tcp_retransmissions"].sum())
        out["tcp_retransmitted_share"] = round(out["tcp_retransmissions"] / segments, 6) if segments else None
    cu = cu_log(run_dir)
    if cu is not None:
        head, occ, counters = cu
        window = (f["t_drawn"].min(), f["t_drawn"].max())
        w = occ[(occ["t_ns"] >= window[0]) & (occ["t_ns"] <= window[1])]["bytes"]
        buffer = head.get("buffer_bytes", "inf")
        out["cu"] = {"buffer_bytes": None if buffer == "inf" else int(buffer), **counters,
                     "occupancy_p50_bytes": None if w.empty else int(w.median()), "occupancy_p99_bytes": None if w.empty else int(w.quantile(0.99))}
    return out


def render(part: dict) -> Any:
    from rich.table import Table

    cu = part.get("cu")
    caption = None
    if "tcp_retransmissions" in part:
        caption = (f"the servers' TCP sent {part['tcp_retransmissions']} segments again ({100 * (part['tcp_retransmitted_share'] or 0):.2f}%)"
                   + ("; with pDCell it ends at the shim beside it" if cu else ""))
    if cu:
        bound = "unbounded" if cu["buffer_bytes"] is None else f"{cu['buffer_bytes'] / 1000:g} KB"
        caption = (f"CU buffer {bound}: peak {cu['peak_bytes'] / 1000:g} KB, P99 {(cu['occupancy_p99_bytes'] or 0) / 1000:g} KB; "
                   f"{cu['credits']} credits, {cu['expired']} brought no data, {cu['not_admitted']} packets not admitted"
                   + (f"; {caption}" if caption else ""))
    load = (f"; offered load {part['offered_load']:g} of the cell's {part['cell_capacity_mbit']:g} Mbit/s (its time shared equally)"
            if "offered_load" in part else "")
    cc = f" ({part['congestion_control']})" if part.get("congestion_control") and part["kind"] == "tcp" else ""
    t = Table(title=f"flows: transport {part['kind']}{cc}, downlink {part['downlink_scheduler']}{load}; FCT = server's first byte to the "
                    "UE's last, slowdown = FCT / (bytes at the UE's channel alone)", caption=caption)
    for c in ("flows", "of them", "complete", "FCT P50 ms", "FCT P99 ms", "slowdown P50", "slowdown P99"):
        t.add_column(c, justify="right" if c not in ("flows", "of them") else "left")
    for group, rows in (("by size", part["by_size"]), ("by channel", part["by_channel"]), ("all", {"": part["all"]})):
        for name, s in rows.items():
            t.add_row(group, name, f"{s['complete']} of {s['flows']}", *(("-" if s[k] is None else f"{s[k]:g}")
                                                                        for k in ("fct_p50_ms", "fct_p99_ms", "slowdown_p50", "slowdown_p99")))
    return t
