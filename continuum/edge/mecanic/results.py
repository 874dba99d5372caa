"""The ingress stage's results, from its per-packet logs (links/nic-NODE.log,
written by mahimahi-link --nic-log): per node and class, the packets that
reached the stage in the measured window, how many it carried to the host and
dropped (queue full, or no queue its class may use), and their time through
the stage (arrival to the end of their transmission to the host), plus the
queue occupancy (packets waiting or in transmission) over the window.

The window is that of the measured requests (first to last drawn), so warm-up
traffic is left out; the plot shows the whole run on the run's time axis."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

COLUMNS = ["arrival_ns", "done_ns", "class", "queue", "size", "n", "match"]


@dataclass(frozen=True)
class StageLog:
    node: str
    head: dict[str, str]  # the header's key=value pairs (kind, rate_bps, queues, ...)
    classes: list[str]  # in the order the stage matches them, "default" last
    t0_ns: int  # epoch ns of the lines' time 0
    packets: pd.DataFrame  # one row per packet: arrival_ns, done_ns (NaN: dropped), class, queue, size, n, match, dropped (why or "")


def read(path: Path) -> StageLog:
    """One stage's log, its times made epoch ns."""
    head: dict[str, str] = {}
    classes: list[str] = []
    t0 = 0
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("# mahimahi-link nic "):
            head = dict(kv.split("=", 1) for kv in line.split()[4:])
        elif line.startswith("# classes "):
            classes = [c.split(":", 1)[0] for c in line.split()[2:]]
        elif line.startswith("t0 "):
            t0 = int(line.split()[1])
        elif line[:1].isdigit():
            f = line.split()
            found = f[6] if len(f) > 6 else "-"  # payload matching: "-" not scanned, the pattern found (0: none), "!": not marked
            if f[1] == "x":
                rows.append((int(f[0]), np.nan, f[2], -1, int(f[4]), int(f[5]), found, f[3]))
            else:
                rows.append((int(f[0]), float(f[1]), f[2], int(f[3]), int(f[4]), int(f[5]), found, ""))
    p = pd.DataFrame(rows, columns=[*COLUMNS, "dropped"])
    p["arrival_ns"] = p["arrival_ns"] + t0
    p["done_ns"] = p["done_ns"] + t0
    return StageLog(path.name.removeprefix("nic-").removesuffix(".log"), head, classes, t0, p.sort_values("n", ignore_index=True))


def logs(run_dir: Path) -> list[StageLog]:
    return [read(p) for p in sorted((run_dir / "links").glob("nic-*.log"))]


def occupancy(p: pd.DataFrame) -> pd.DataFrame:
    """Packets in the stage (waiting or in transmission), per class, after each arrival or departure:
    columns t_ns, class, packets."""
    kept = p[p["dropped"] == ""]
    ev = pd.concat([pd.DataFrame({"t_ns": kept["arrival_ns"], "class": kept["class"], "d": 1}),
                    pd.DataFrame({"t_ns": kept["done_ns"].astype("int64"), "class": kept["class"], "d": -1})])
    ev = ev.sort_values(["t_ns", "d"], kind="stable")
    ev["packets"] = ev.groupby("class")["d"].cumsum()
    return ev[["t_ns", "class", "packets"]]


def _window(df: pd.DataFrame) -> tuple[int, int] | None:
    m = df[df["phase"] == "measure"] if "phase" in df else df.iloc[0:0]
    if m.empty:
        return None
    return int(m["t_drawn"].min()), int(m["t_drawn"].max())


def _ms(x: pd.Series, q: float) -> float | None:
    return None if x.empty else round(float(x.quantile(q)) / 1e6, 3)


def cache(run_dir: Path, df: pd.DataFrame) -> dict | None:
    """Response caching over the measured requests: how many the NIC answered, how many went on
    to the server, answers learned, and the end-to-end latency of each kind (ms)."""
    path = run_dir / "raw" / "nic-cache.csv"
    if not path.exists() or "nic_cache" not in df:
        return None
    m = df[(df["phase"] == "measure")] if "phase" in df else df
    log = pd.read_csv(path)
    out: dict[str, Any] = {"requests": int(m["nic_cache"].notna().sum()), "hits": int((m["nic_cache"] == "hit").sum()),
                           "misses": int((m["nic_cache"] == "miss").sum()), "fetched": int((m["nic_cache"] == "fetched").sum()),
                           "stored": int((log["outcome"] == "stored").sum()),
                           "installed": int((log["outcome"] == "installed").sum())}
    out["hit_ratio"] = round(out["hits"] / out["requests"], 4) if out["requests"] else None
    for kind in ("hit", "miss", "fetched"):
        ok = m[(m["nic_cache"] == kind) & (m["status"] == "ok")]["e2e_ms"].astype(float) if "e2e_ms" in m else pd.Series(dtype=float)
        out[f"{kind}_e2e_ms_p50"] = None if ok.empty else round(float(ok.median()), 3)
        out[f"{kind}_e2e_ms_p99"] = None if ok.empty else round(float(ok.quantile(0.99)), 3)
    return out


def summarize(run_dir: Path, df: pd.DataFrame) -> dict | None:
    stages = logs(run_dir)
    window = _window(df)
    if not stages or window is None:
        return None
    out: dict = {"kind": stages[0].head.get("kind"), "window_s": round((window[1] - window[0]) / 1e9, 3), "nodes": {}}
    held = cache(run_dir, df)
    if held is not None:
        out["cache"] = held
    for s in stages:
        p = s.packets
        w = p[(p["arrival_ns"] >= window[0]) & (p["arrival_ns"] <= window[1])]
        occ = occupancy(p)
        occ = occ[(occ["t_ns"] >= window[0]) & (occ["t_ns"] <= window[1])]
        node: dict[str, Any] = {"kind": s.head.get("kind"), "rate_mbit": int(s.head.get("rate_bps", 0)) / 1e6, "queues": int(s.head.get("queues", 1)),
                "queue_packets": int(s.head.get("queue_packets", 0)),
                "queue_rate_mbit": None if s.head.get("queue_rate_bps", "none") == "none" else int(s.head["queue_rate_bps"]) / 1e6,
                "classes": {}}
        for c in s.classes:
            mine = w[w["class"] == c]
            if mine.empty:
                continue
            kept = mine[mine["dropped"] == ""]
            t = kept["done_ns"] - kept["arrival_ns"]
            held = occ[occ["class"] == c]["packets"]
            node["classes"][c] = {
                "packets": int(len(mine)), "carried": int(len(kept)),
                "dropped_full": int((mine["dropped"] == "full").sum()), "dropped_noqueue": int((mine["dropped"] == "noqueue").sum()),
                "loss": round(1 - len(kept) / len(mine), 6),
                "offered_mbit": round(float(mine["size"].sum()) * 8 / max(out["window_s"], 1e-9) / 1e6, 3),
                "mean_ms": None if t.empty else round(float(t.mean()) / 1e6, 3),
                "p50_ms": _ms(t, 0.5), "p99_ms": _ms(t, 0.99), "max_ms": _ms(t, 1.0),
                "occupancy_max": int(held.max()) if not held.empty else 0,
            }
            scanned = mine[mine["match"] != "-"]
            if len(scanned):
                node["classes"][c].update({"scanned": int(len(scanned)), "matched": int((~scanned["match"].isin(["0", "0!"])).sum()),
                                           "unmarked": int(scanned["match"].str.endswith("!").sum())})
        out["nodes"][s.node] = node
    return out


def render(part: dict):
    from rich.table import Table

    def f(v, fmt="{:.2f}"):
        return "-" if v is None else fmt.format(v)

    tables = []
    for node, s in part["nodes"].items():
        how = (f"one FIFO of {s['queue_packets']} packets" if s["kind"] == "plain" else
               f"{s['queues']} queues of {s['queue_packets']} packets, each capped at "
               + (f"{s['queue_rate_mbit']:g} Mbit/s" if s["queue_rate_mbit"] else "nothing"))
        t = Table(title=f"ingress stage in front of {node} ({s['kind']}, {s['rate_mbit']:g} Mbit/s to the host, {how}), "
                        f"measured window {part['window_s']:g} s")
        for h in ("class", "packets", "offered Mbit/s", "carried", "dropped (full/no queue)", "loss", "mean ms", "P50 ms", "P99 ms",
                  "max waiting"):
            t.add_column(h, justify="left" if h == "class" else "right")
        for c, r in s["classes"].items():
            t.add_row(c, str(r["packets"]), f(r["offered_mbit"]), str(r["carried"]), f"{r['dropped_full']}/{r['dropped_noqueue']}",
                      f(r["loss"], "{:.2%}"), f(r["mean_ms"], "{:.3f}"), f(r["p50_ms"], "{:.3f}"), f(r["p99_ms"], "{:.3f}"),
                      str(r["occupancy_max"]))
        tables.append(t)
    c = part.get("cache")
    if c:
        t = Table(title=f"response caching on the NIC: {c['hits']} of {c['requests']} measured requests answered from what it held "
                        f"({f(c['hit_ratio'], '{:.1%}')}), {c['stored']} answers learned from the server"
                        + (f", {c['installed']} installed before the run" if c.get("installed") else ""))
        for h in ("requests", "count", "end-to-end P50 ms", "end-to-end P99 ms"):
            t.add_column(h, justify="left" if h == "requests" else "right")
        t.add_row("answered by the NIC", str(c["hits"]), f(c["hit_e2e_ms_p50"], "{:.1f}"), f(c["hit_e2e_ms_p99"], "{:.1f}"))
        t.add_row("sent on to the server", str(c["misses"]), f(c["miss_e2e_ms_p50"], "{:.1f}"), f(c["miss_e2e_ms_p99"], "{:.1f}"))
        if c.get("fetched"):
            t.add_row("fetched by the NIC from the origin", str(c["fetched"]), f(c["fetched_e2e_ms_p50"], "{:.1f}"),
                      f(c["fetched_e2e_ms_p99"], "{:.1f}"))
        tables.append(t)
    if len(tables) == 1:
        return tables[0]
    from rich.console import Group

    return Group(*tables)
