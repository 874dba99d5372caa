"""Recording light traces (CellReplay's method, NSDI 2025; our own code):
what a short burst sees on a path that was idle, which a saturating
recording cannot show.

Every `gap` ms the device sends a train of U full-size UDP packets up; the
far end, when the train's first packet arrives, sends D packets down. Each
receiver timestamps arrivals in the kernel. Per train, the light trace of a
direction holds the first packet's one-way (base) delay and each packet's
delivery offset from the first one's (ms). The base delay is the one-way
delay when both ends share a clock (one machine, as with srsRAN's ZMQ
radio here: `--base owd`) or half the round trip (`--base rtt`, CellReplay's
choice for a phone and a server).

`--calibrate` first finds, per direction, the smallest gap between trains
at which a train still behaves as one that found the path idle (CellReplay's
G_min: its last packet arrives at least 70% as late as with 100 ms gaps),
and the idle time that makes the link idle again (F = G_min minus a train's
span there); the light traces record F as their `idle_ms`, and the
recording's gap is at least G_min.

    far end:  continuum traces record serve --port 9500
    device:   continuum traces record --light --peer FAR --data-peer FAR_VIA_PATH --duration 60 --out DIR
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from continuum.tracearchive import light

LHDR = struct.Struct("!4sBIHQ")  # magic, direction (2 up, 3 down), train, index in train, send time (ns)
LMAGIC = b"CTLT"
LDIR = {"up": 2, "down": 3}
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
IP_UDP = 28
CALIBRATION_GAPS_MS = (20, 40, 60, 100, 200)
BASE_GAP_MS = 100  # CellReplay's reference gap: trains this far apart start from idle


@dataclass
class Arrivals:
    """One direction's arrivals: per train, (index in train, send ns, receive ns)."""
    trains: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)

    def add(self, train: int, k: int, sent: int, recv: int) -> None:
        self.trains.setdefault(train, []).append((k, sent, recv))

    def to_json(self) -> dict:
        return {str(t): v for t, v in self.trains.items()}

    @staticmethod
    def from_json(d: dict) -> Arrivals:
        return Arrivals({int(t): [tuple(x) for x in v] for t, v in d.items()})  # type: ignore[misc]


def receive(sock: socket.socket, direction: str, arrivals: Arrivals, stop: threading.Event, on_first=None) -> None:
    """Kernel-timestamped arrivals of one direction's trains until `stop`; `on_first(train, payload bytes)` at each
    train's first packet."""
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.settimeout(0.05)
    seen: set[int] = set()
    while not stop.is_set():
        try:
            data, anc, _f, _a = sock.recvmsg(65536, 64)
        except (socket.timeout, BlockingIOError):
            continue
        except OSError:
            return
        if len(data) < LHDR.size:
            continue
        magic, d, train, k, sent = LHDR.unpack_from(data)
        if magic != LMAGIC or d != LDIR[direction]:
            continue
        t = time.time_ns()
        for level, kind, val in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", val[:16])
                t = sec * 1_000_000_000 + nsec
        arrivals.add(train, k, sent, t)
        if train not in seen:
            seen.add(train)
            if on_first is not None:
                on_first(train, len(data))


def send_train(sock: socket.socket, dest, direction: str, train: int, packets: int, payload: int) -> int:
    """A train of `packets` back to back; returns the first packet's send time (ns)."""
    buf = bytearray(payload)
    first = 0
    for k in range(packets):
        t = time.time_ns()
        first = first or t
        LHDR.pack_into(buf, 0, LMAGIC, LDIR[direction], train, k, t)
        try:
            sock.sendto(buf, dest)
        except OSError:
            time.sleep(0.0005)
    return first


def lines(arr: Arrivals, sent_first: dict[int, int], t0: int, base: dict[int, int]) -> list[light.LightLine]:
    """One direction's light-trace lines: trains whose first packet arrived, at their send time from t0."""
    out: list[light.LightLine] = []
    for train in sorted(arr.trains):
        got = sorted(arr.trains[train])
        if not got or got[0][0] != 0 or train not in sent_first or train not in base:
            continue  # the first packet was lost: no base delay for this train
        r0 = got[0][2]
        pdos = sorted(max(0, round((r - r0) / 1e6)) for _, _, r in got)  # nearest ms (CellReplay truncates)
        t_ms = (sent_first[train] - t0) // 1_000_000
        if out and t_ms <= out[-1].t_ms:
            continue
        out.append(light.LightLine(int(t_ms), max(0, int(round(base[train] / 1e6))), [int(x) for x in pdos]))
    return out


def bases(up: Arrivals, down: Arrivals, how: str) -> dict[str, dict[int, int]]:
    """Per direction and train, the base delay (ns): the first packet's one-way delay (owd), or half the round
    trip from the up train's first send to the down train's first arrival (rtt)."""
    owd = {d: {t: v[0][2] - v[0][1] for t, v in ((t, sorted(a)) for t, a in arr.trains.items()) if v and v[0][0] == 0}
           for d, arr in (("up", up), ("down", down))}
    if how == "owd":
        return owd
    rtt = {}
    for t, v in up.trains.items():
        u, dn = sorted(v), sorted(down.trains.get(t, []))
        if u and dn and u[0][0] == 0 and dn[0][0] == 0:
            rtt[t] = (dn[0][2] - u[0][1]) // 2
    return {"up": rtt, "down": rtt}


def span_ms(arr: Arrivals) -> list[float]:
    """Each complete-enough train's span: its last packet's arrival after its first's (ms)."""
    out = []
    for v in arr.trains.values():
        got = sorted(v)
        if len(got) >= 2 and got[0][0] == 0:
            out.append((got[-1][2] - got[0][2]) / 1e6)
    return out


def calibrate(spans: dict[int, list[float]]) -> tuple[int, float, dict[int, float]]:
    """CellReplay's G_min and F from the trains' spans per gap: G_min the smallest gap whose mean span is at
    least 70% of the span at BASE_GAP_MS; F = G_min - that mean span (at least 0)."""
    means = {g: float(np.mean(s)) for g, s in sorted(spans.items()) if s}
    if BASE_GAP_MS not in means:
        raise RuntimeError(f"calibration: no train at the {BASE_GAP_MS} ms gap arrived")
    gmin = max(means)
    for g, m in means.items():
        if m >= 0.7 * means[BASE_GAP_MS]:
            gmin = g
            break
    return gmin, max(0.0, gmin - means[gmin]), means


# --- the two ends -------------------------------------------------------------------------------------

def far_session(ctl, udp: socket.socket, cfg: dict, peer_udp) -> None:
    """The far end of a light session: each up train's first packet answered with a down train; at each "end"
    from the device, the up arrivals and the down trains' send times of that round go back; "bye" ends it."""
    up, stop, sent = Arrivals(), threading.Event(), {}
    size = {"down": int(cfg["down_packets"]), "mirror": False}

    def answer(train: int, nbytes: int) -> None:
        # a round of lone packets (the size offsets) answers each with one of the same size
        payload = nbytes if size["mirror"] else int(cfg["payload"])
        sent[train] = send_train(udp, peer_udp, "down", train, size["down"], payload)

    rx = threading.Thread(target=receive, args=(udp, "up", up, stop, answer), daemon=True)
    rx.start()
    while True:
        m = ctl.recv()
        if m is None or "bye" in m:
            break
        if "down_packets" in m:  # a round's down trains (the device waits for this answer before its first train)
            size["down"], size["mirror"] = int(m["down_packets"]), bool(m.get("mirror"))
            ctl.send(down_packets_ok=size["down"])
        if "end" in m:
            ctl.send(result={"up": up.to_json(), "down_sent": {str(k): v for k, v in sent.items()}})
            up.trains.clear()
            sent.clear()
    stop.set()
    rx.join(timeout=2)


def device_round(ctl, udp: socket.socket, dest, cfg: dict, first_train: int = 0, say=print) -> dict:
    """One round of the device's end: the phases of trains (calibration gaps, or the recording's), the downlink's
    arrivals; returns every train's phase and send time, and both directions' arrivals."""
    down, stop = Arrivals(), threading.Event()
    rx = threading.Thread(target=receive, args=(udp, "down", down, stop), daemon=True)
    rx.start()
    train, phases, sent, sizes = first_train, {}, {}, {}
    first = cfg["phases"][0]
    ctl.send(down_packets=first[3] if len(first) > 3 else int(cfg["down_packets"]), mirror=len(first) > 4)
    m = ctl.recv()
    if not m or "down_packets_ok" not in m:
        raise RuntimeError(f"the far end did not take the round's train size: {m}")
    for phase, gap_ms, seconds, *size in cfg["phases"]:
        up_n = size[0] if size else int(cfg["up_packets"])
        payloads = size[1] if len(size) > 1 else None
        say(f"light trains: {phase}, every {gap_ms} ms for {seconds:g} s ({up_n} up, {size[0] if size else cfg['down_packets']} down)"
            if payloads is None else f"lone packets: {len(payloads)} sizes, one every {gap_ms}-{gap_ms * 3 // 2} ms for {seconds:g} s")
        start = time.monotonic()
        k, due, order = 0, start, list[int]()
        rng = np.random.default_rng(0)
        while due - start < seconds:
            while (d := due - time.monotonic()) > 0:
                time.sleep(min(d, 0.002))
            if payloads is not None and not order:
                order = [int(payloads[i]) for i in rng.permutation(len(payloads))]  # each size once per cycle, shuffled
            payload = int(cfg["payload"]) if payloads is None else order.pop()
            sent[train] = send_train(udp, dest, "up", train, up_n, payload)
            phases[train] = (phase, gap_ms)
            sizes[train] = payload
            train, k = train + 1, k + 1
            # lone packets at random spacings in [gap, 1.5 gap]: the path's periodic waits (scheduling-request
            # opportunities) are met at every phase, not always at the same one
            due = start + k * gap_ms / 1000 if payloads is None else due + gap_ms * (1 + rng.uniform(0, 0.5)) / 1000
    time.sleep(1.0)  # the last trains' stragglers
    ctl.send(end=True)
    result = None
    while True:
        m = ctl.recv()
        if m is None:
            break
        if "result" in m:
            result = m["result"]
            break
    stop.set()
    rx.join(timeout=2)
    if result is None:
        raise RuntimeError("the far end returned no result for the light trains")
    return {"phases": phases, "up_sent": sent, "payloads": sizes, "up": Arrivals.from_json(result["up"]), "down": down,
            "down_sent": {int(k): v for k, v in result["down_sent"].items()}}


def calibration(s: dict) -> dict:
    """Per direction, G_min and the idle time F from a session of calibration phases."""
    out = {}
    for d in ("up", "down"):
        spans: dict[int, list[float]] = {}
        for t, v in s[d].trains.items():
            phase, gap = s["phases"].get(t, ("?", 0))
            if phase == "calibration":
                spans.setdefault(gap, []).extend(span_ms(Arrivals({t: v})))
        if spans:
            gmin, f, means = calibrate(spans)
            out[d] = {"g_min_ms": gmin, "idle_ms": round(f, 1), "mean_span_ms_per_gap": means}
    return out


def light_lines(s: dict, base_how: str) -> dict:
    """Per direction, the recording's light-trace lines and how many trains lost their first packet."""
    b = bases(s["up"], s["down"], base_how)
    rec = {t for t, (p, _g) in s["phases"].items() if p == "recording"}
    if not rec:
        raise RuntimeError("no recording trains were sent")
    t0 = min(s["up_sent"][t] for t in rec)
    out = {}
    for d in ("up", "down"):
        arr = Arrivals({t: v for t, v in s[d].trains.items() if t in rec})
        got = lines(arr, {t: s["up_sent"][t] for t in rec}, t0, b[d])
        out[d] = {"lines": got, "trains": len(rec), "trains_without_first_packet": len(rec) - len(got)}
    return out


def offset_sizes(payload: int) -> list[int]:
    """The lone packets' UDP payloads: one per 100-byte bin of the size the link charges (IP + 4) up to the trains'
    own packets, and the trains' own size last (the reference every offset is taken from)."""
    ref = payload + IP_UDP + 4
    return [s - IP_UDP - 4 for s in range(100, ref + 1, 100) if s - IP_UDP - 4 >= LHDR.size and s != ref] + [payload]


def size_offsets(s: dict, how: str, payload: int) -> dict:
    """Per direction, CellReplay's latency offset per packet size from a round of lone packets: each size's median
    one-way delay (or half the round trip: rtt) less that of lone packets of the trains' own size, in ms, per
    100-byte bin of the charged size. A real stack's differ: a small packet fits the first, small uplink grant."""
    b = bases(s["up"], s["down"], how)
    out = {}
    for d in ("up", "down"):
        by: dict[int, list[float]] = {}
        for t, p in s["payloads"].items():
            if t in b[d]:
                by.setdefault(p, []).append(b[d][t] / 1e6)
        missing = [p + IP_UDP + 4 for p in offset_sizes(payload) if p not in by]
        if missing:
            raise RuntimeError(f"size offsets: no lone {d}link packet of {', '.join(map(str, missing))} bytes arrived")
        ref = float(np.median(by[payload]))
        bins = [(p + IP_UDP + 4, float(np.median(by[p])) - ref) for p in offset_sizes(payload)[:-1]]
        out[d] = {"offsets_ms": [(size, round(off, 2)) for size, off in bins], "reference_bytes": payload + IP_UDP + 4,
                  "reference_delay_ms": round(ref, 2), "packets_per_size": min(len(v) for v in by.values())}
    return out
