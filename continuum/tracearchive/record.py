"""Recording traces with the saturatr method (Winstein et al., NSDI 2013),
our own implementation.

Each direction has a sender that keeps the link saturated: a window of UDP
packets in flight, grown while the queueing delay the receiver reports is
below 0.75 s and shrunk above 3 s, so the bottleneck queue always holds
0.75-3 s of data and never runs dry. The receiver timestamps every arriving
packet in the kernel (SO_TIMESTAMPNS) and reports the highest sequence number
and the one-way delay (relative to the smallest seen) every 10 ms over a
separate path: a TCP control connection to `--peer`, which should reach the
far end without crossing the measured link (another interface, or a filter
that lets it bypass). Arrivals become the trace: every 1500 IP bytes that
arrived make one opportunity, so the packet size cannot bias capacity
(saturatr's 1428-byte packets counted as 1504-byte opportunities overstate
it by ~5%).

    far end:   continuum traces record serve --port 9500   (TCP 9500 control, UDP 9501 data)
    device:    continuum traces record --peer FAR --data-peer FAR_VIA_CELL --duration 60 --out DIR [--ping HOST]
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from continuum.tracearchive import mahimahi, stats

HDR = struct.Struct("!4sBQQ")  # magic, direction (0 up, 1 down), seq, send time (ns)
MAGIC = b"CTRC"
IP_UDP = 28
LOW_S, HIGH_S, TARGET_S = 0.75, 3.0, 1.5
RATE_WINDOW_S = 0.5
FEEDBACK_S = 0.01
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
DIRS = {"up": 0, "down": 1}


class Control:
    """JSON lines over the TCP control connection, thread-safe writes."""

    def __init__(self, sock: socket.socket):
        self.sock, self.lock = sock, threading.Lock()
        self.rfile = sock.makefile("r")

    def send(self, **msg) -> None:
        data = (json.dumps(msg) + "\n").encode()
        with self.lock:
            try:
                self.sock.sendall(data)
            except OSError:
                pass  # the other end finished: nothing left to steer

    def recv(self) -> dict | None:
        try:
            line = self.rfile.readline()
        except OSError:
            return None
        return json.loads(line) if line else None


class Sender:
    """Keeps TARGET_S of data queued at the bottleneck: the window (packets
    in flight) follows the delivery rate the feedback shows, times TARGET_S.
    In-flight data is known at once at the sender, so the queue is steered
    without waiting a queueing delay for the effect of each change (a window
    grown on the delayed "queue still short" signal overshoots by far)."""

    def __init__(self, sock: socket.socket, dest, direction: str, payload: int, queue_s: float = TARGET_S):
        self.sock, self.dest, self.dir, self.payload = sock, dest, direction, payload
        # saturatr's band around the queue it keeps: 0.75-3 s around 1.5 s by default
        self.target_s, self.low_s, self.high_s = queue_s, queue_s * LOW_S / TARGET_S, queue_s * HIGH_S / TARGET_S
        self.window, self.next_seq, self.acked = 16, 0, -1
        self.qdelay = 0.0
        self.cv = threading.Condition()
        self.history: list[tuple[float, int]] = []  # (time, acked) for the delivery rate
        self.window_log: list[tuple[float, int, float]] = []

    def on_feedback(self, seq: int, qdelay_s: float) -> None:
        now = time.monotonic()
        with self.cv:
            self.acked = max(self.acked, seq)
            self.qdelay = qdelay_s
            self.history.append((now, self.acked))
            while len(self.history) > 2 and self.history[1][0] < now - RATE_WINDOW_S:
                self.history.pop(0)
            t0, a0 = self.history[0]
            rate = (self.acked - a0) / max(now - t0, FEEDBACK_S)
            target = int(rate * self.target_s) + 16
            if qdelay_s < self.low_s:
                # queue not built yet (or drained): probe above the measured rate
                target = max(target, int(self.window * 1.02) + 1)
            elif qdelay_s > self.high_s:
                target = min(target, self.window)
            self.window = max(16, target)
            self.cv.notify()

    def run(self, duration_s: float) -> int:
        buf = bytearray(self.payload)
        end = time.monotonic() + duration_s
        while time.monotonic() < end:
            with self.cv:
                room = self.window - (self.next_seq - self.acked - 1)
                if room <= 0:
                    self.cv.wait(timeout=0.05)
                    continue
                first, self.next_seq = self.next_seq, self.next_seq + room
                self.window_log.append((time.monotonic(), self.window, self.qdelay))
            for seq in range(first, first + room):
                HDR.pack_into(buf, 0, MAGIC, DIRS[self.dir], seq, time.time_ns())
                try:
                    self.sock.sendto(buf, self.dest)
                except BlockingIOError:
                    time.sleep(0.001)
                except OSError:
                    time.sleep(0.001)
        return self.next_seq


class Receiver:
    """Kernel timestamps of arriving packets of one direction; feedback every 10 ms."""

    def __init__(self, sock: socket.socket, direction: str, feedback, queue_s: float = TARGET_S):
        self.sock, self.dir, self.feedback = sock, direction, feedback
        self.low_s = queue_s * LOW_S / TARGET_S  # the queue from which the link counts as saturated
        self.times: list[int] = []
        self.sizes: list[int] = []
        self.owd: list[int] = []
        self.seqs: list[int] = []
        self.last_seq: int | None = None
        self.peer = None
        self.stop = threading.Event()

    def run(self, idle_timeout_s: float = 5.0) -> None:
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.settimeout(0.05)
        min_owd, next_fb, highest, last_rx = None, 0.0, -1, time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            if self.last_seq is not None and (highest >= self.last_seq - 1 or now - last_rx > idle_timeout_s):
                break
            try:
                data, anc, _flags, addr = self.sock.recvmsg(65536, 64)
            except (socket.timeout, BlockingIOError):
                data = None
            if data and len(data) >= HDR.size:
                magic, d, seq, sent = HDR.unpack_from(data)
                if magic == MAGIC and d == DIRS[self.dir]:
                    t = time.time_ns()
                    for level, kind, val in anc:
                        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                            sec, nsec = struct.unpack("qq", val[:16])
                            t = sec * 1_000_000_000 + nsec
                    self.peer = addr
                    owd = t - sent
                    min_owd = owd if min_owd is None else min(min_owd, owd)
                    self.times.append(t)
                    self.sizes.append(len(data) + IP_UDP)
                    self.owd.append(owd)
                    self.seqs.append(seq)
                    highest = max(highest, seq)
                    last_rx = time.monotonic()
            if min_owd is not None and time.monotonic() >= next_fb:
                self.feedback(highest, (self.owd[-1] - min_owd) / 1e9)
                next_fb = time.monotonic() + FEEDBACK_S

    def trace(self) -> tuple[np.ndarray, dict]:
        """Opportunities from arrivals, from the moment the queue first held
        LOW_S of data (the link is saturated from then on)."""
        if not self.times:
            return np.zeros(0, dtype=np.int64), {"packets": 0}
        t = np.array(self.times, dtype=np.int64)
        owd = np.array(self.owd, dtype=np.int64)
        q = (owd - owd.min()) / 1e9
        sat = np.nonzero(q >= self.low_s)[0]
        start = int(sat[0]) if len(sat) else 0
        t0 = int(t[start])
        ms = (t[start:] - t0) // 1_000_000 + 1
        cum = np.cumsum(np.array(self.sizes[start:], dtype=np.int64)) // mahimahi.OPPORTUNITY_IP_BYTES
        ts = np.repeat(ms, np.diff(cum, prepend=0))
        seqs = np.array(self.seqs)
        meta = {
            "packets": len(t), "saturated_from_packet": start, "t0_unix_ns": t0,
            "lost_packets": int(seqs.max() - len(np.unique(seqs)) + 1),
            "queue_delay_s": {"median": float(np.median(q[start:])), "p5": float(np.percentile(q[start:], 5)), "p95": float(np.percentile(q[start:], 95))},
            "ip_bytes_per_packet": int(np.median(self.sizes)), "bytes_per_opportunity": mahimahi.OPPORTUNITY_IP_BYTES,
        }
        return ts, meta


def ping_one_way(host: str, count: int, netns: str | None = None) -> dict:
    argv = ["ping", "-n", "-c", str(count), "-i", "0.2", host]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    rtts = [float(x.split("time=")[1].split()[0]) for x in out.splitlines() if "time=" in x]
    if not rtts:
        return {"host": host, "error": "no ping replies"}
    ow = np.array(rtts) / 2
    return {"host": host, "samples": len(rtts), "sent": count, "one_way_ms": {"median": float(np.median(ow)), "mean": float(ow.mean()),
            "p5": float(np.percentile(ow, 5)), "p95": float(np.percentile(ow, 95)), "min": float(ow.min()), "max": float(ow.max())},
            "one_way_samples_ms": [round(x, 3) for x in ow.tolist()], "method": "ping RTT / 2"}


# --- the two ends -------------------------------------------------------------

def _session(ctl: Control, udp: socket.socket, role: str, cfg: dict, peer_udp=None) -> dict:
    """Run the directions this end sends and receives; return this end's receiver result."""
    sends = "up" if role == "device" else "down"
    recvs = "down" if role == "device" else "up"
    dirs = cfg["directions"]
    queue_s = float(cfg.get("queue_s", TARGET_S))
    sender = Sender(udp, peer_udp, sends, cfg["payload"], queue_s) if sends in dirs else None
    receiver = Receiver(udp, recvs, lambda seq, q: ctl.send(fb=recvs, seq=seq, q=q), queue_s) if recvs in dirs else None
    done = threading.Event()
    remote: dict = {}

    def read_control():
        while True:
            m = ctl.recv()
            if m is None:
                break
            if "fb" in m and sender is not None:
                sender.on_feedback(m["seq"], m["q"])
            elif "last" in m and receiver is not None:
                receiver.last_seq = m["last"]
            elif "result" in m:
                remote.update(m["result"])
                done.set()
        done.set()

    threading.Thread(target=read_control, daemon=True).start()
    rx = threading.Thread(target=receiver.run) if receiver else None
    if rx:
        rx.start()
    if sender is not None:
        n = sender.run(cfg["duration_s"])
        ctl.send(last=n)
    if rx and receiver is not None:
        rx.join(timeout=cfg["duration_s"] + 30)
        receiver.stop.set()
    result = {}
    if receiver is not None:
        ts, meta = receiver.trace()
        result = {"direction": recvs, "trace": ts.tolist(), "meta": meta}
    return {"local": result, "remote": remote, "done": done}


def serve(port: int, bind: str = "0.0.0.0", once: bool = False, say=print) -> None:
    lsock = socket.create_server((bind, port), reuse_port=False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
    udp.bind((bind, port + 1))
    say(f"recording peer: control tcp {bind}:{port}, data udp {bind}:{port + 1}")
    while True:
        conn, addr = lsock.accept()
        ctl = Control(conn)
        hello = ctl.recv() or {}
        cfg = hello.get("hello", {})
        say(f"session from {addr[0]}: {cfg}")
        # learn the device's data address from its punch packets
        udp.settimeout(10)
        ctl.send(ready=port + 1)
        try:
            while True:
                data, peer_udp = udp.recvfrom(2048)
                if data.startswith(b"PUNCH"):
                    break
        except socket.timeout:
            ctl.send(error="no punch packet arrived on the data path")
            conn.close()
            continue
        ctl.send(seen=list(peer_udp))
        if cfg.get("mode") == "light":
            from continuum.tracearchive import record_light

            record_light.far_session(ctl, udp, cfg, peer_udp)
            conn.close()
            if once:
                break
            continue
        s = _session(ctl, udp, "far", cfg, peer_udp)
        ctl.send(result=s["local"])
        conn.close()
        if once:
            break
    lsock.close()
    udp.close()


def _connect(peer: str, port: int, data_peer: str, cfg: dict) -> tuple[socket.socket, Control, socket.socket, tuple]:
    """The control connection and the data socket, with the far end's data address learnt by punching through."""
    ctl_sock = socket.create_connection((peer, port), timeout=10)
    ctl_sock.settimeout(None)
    ctl = Control(ctl_sock)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
    udp.bind(("0.0.0.0", 0))
    ctl.send(hello=cfg)
    m = ctl.recv()
    if not m or "ready" not in m:
        raise RuntimeError(f"the peer did not start a session: {m}")
    dest = (data_peer, m["ready"])
    seen = threading.Event()

    def punch():
        while not seen.is_set():
            udp.sendto(b"PUNCH", dest)
            time.sleep(0.1)

    threading.Thread(target=punch, daemon=True).start()
    m = ctl.recv()
    seen.set()
    if not m or "seen" not in m:
        raise RuntimeError(f"the peer got no data packets from us: {m}")
    return ctl_sock, ctl, udp, dest


def light_session(peer: str, port: int, data_peer: str, cfg: dict, rounds, say=print) -> list[dict]:
    """A light session (record_light.py): rounds of trains, each round's phases from `rounds(previous results)`
    (None: done); each round's arrivals in both directions."""
    from continuum.tracearchive import record_light as rl

    ctl_sock, ctl, udp, dest = _connect(peer, port, data_peer, {**cfg, "mode": "light"})
    out: list[dict] = []
    try:
        while (phases := rounds(out)) is not None:
            first = 1 + max((t for r in out for t in r["phases"]), default=-1)
            out.append(rl.device_round(ctl, udp, dest, {**cfg, "phases": phases}, first, say))
        ctl.send(bye=True)
        return out
    finally:
        ctl_sock.close()
        udp.close()


def record(peer: str, port: int, data_peer: str, duration_s: float, directions: list[str], payload: int, say=print,
           queue_s: float = TARGET_S) -> dict:
    cfg = {"duration_s": duration_s, "directions": directions, "payload": payload, "queue_s": queue_s}
    ctl_sock, ctl, udp, dest = _connect(peer, port, data_peer, cfg)
    say(f"recording {', '.join(directions)} for {duration_s:g} s")
    s = _session(ctl, udp, "device", cfg, dest)
    s["done"].wait(timeout=duration_s + 60)
    ctl_sock.close()
    udp.close()
    out = {}
    for r in (s["local"], s["remote"]):
        if r:
            out[r["direction"]] = (np.array(r["trace"], dtype=np.int64), r["meta"])
    return out


def add_arguments(p) -> None:
    p.add_argument("mode", nargs="?", choices=["serve"], help="'serve' on the far end; nothing on the device")
    p.add_argument("--port", type=int, default=9500, help="control and feedback on TCP PORT, data on UDP PORT+1")
    p.add_argument("--bind", default="0.0.0.0", help="serve: address to listen on")
    p.add_argument("--once", action="store_true", help="serve: one session, then exit")
    p.add_argument("--peer", help="device: far end's address for control and feedback (a path that avoids the measured link)")
    p.add_argument("--data-peer", help="device: far end's address through the measured link (default: --peer)")
    p.add_argument("--duration", type=float, default=60.0, help="seconds of sending per direction")
    p.add_argument("--direction", choices=["up", "down", "both"], default="both")
    p.add_argument("--payload", type=int, default=1472, help="UDP payload bytes (1472: one 1500-byte IP packet = one opportunity)")
    p.add_argument("--queue-s", type=float, default=TARGET_S,
                   help=f"seconds of data the sender keeps queued at the bottleneck (saturatr: {TARGET_S:g}, kept between "
                        f"{LOW_S:g} and {HIGH_S:g}; the band scales with it). Less for a stack whose buffers hold less "
                        "(srsRAN's eNB runs out of buffers at saturatr's)")
    p.add_argument("--light", action="store_true",
                   help="record light traces instead (workload-aware replay: CellReplay's packet trains, each from an idle "
                        "path; NAME.up.light, NAME.down.light; docs/link-replay.md)")
    p.add_argument("--gap-ms", type=int, default=200, help="light: a train every GAP ms (at least --calibrate's G_min)")
    p.add_argument("--up-packets", type=int, default=50, help="light: packets in each uplink train (cover the app's largest burst)")
    p.add_argument("--down-packets", type=int, default=10, help="light: packets in each downlink train")
    p.add_argument("--base", choices=["owd", "rtt"], default="rtt",
                   help="light: base delay as the first packet's one-way delay (owd: both ends on one clock, e.g. one "
                        "machine) or half the round trip (rtt, CellReplay's)")
    p.add_argument("--calibrate", action="store_true",
                   help="light: first find G_min and the idle time F per direction (trains at 20-200 ms gaps)")
    p.add_argument("--calibrate-s", type=float, default=3.0, help="light: seconds of trains at each calibration gap")
    p.add_argument("--calibrate-packets", type=int, default=5,
                   help="light: packets in each calibration train, both ways (short: trains 20 ms apart must not flood a slow path)")
    p.add_argument("--sizes", action="store_true",
                   help="light: then send lone packets of 100, 200, ... bytes (and the trains' size) at the recording's gap "
                        "and write each size's delay offset (CellReplay's latency offset: NAME.up.offsets, NAME.down.offsets)")
    p.add_argument("--sizes-count", type=int, default=10, help="light: lone packets of each size with --sizes")
    p.add_argument("--ping", help="also measure core latency to this host (one-way = RTT/2)")
    p.add_argument("--ping-count", type=int, default=50)
    p.add_argument("--name", default="recorded", help="file names: NAME.up, NAME.down")
    p.add_argument("--out", type=Path, default=Path("."), help="folder for NAME.up, NAME.down, metadata.json")


def main(args, console) -> int:
    from continuum.errors import TraceCommandError

    if args.mode == "serve":
        serve(args.port, args.bind, args.once, say=console.print)
        return 0
    if not args.peer:
        raise TraceCommandError("record: give --peer (the far end running `continuum traces record serve`)", 2)
    if not 0.005 <= args.queue_s <= 10:
        raise TraceCommandError(f"--queue-s: {args.queue_s:g} must be 0.005..10 seconds", 2)
    if args.payload < HDR.size or args.payload > 1472:
        raise TraceCommandError(f"--payload: {args.payload} must be {HDR.size}..1472 bytes", 2)
    if args.light:
        return _main_light(args, console)
    dirs = ["up", "down"] if args.direction == "both" else [args.direction]
    try:
        got = record(args.peer, args.port, args.data_peer or args.peer, args.duration, dirs, args.payload, say=console.print,
                     queue_s=args.queue_s)
    except (OSError, RuntimeError) as e:
        raise TraceCommandError(f"record: {e}") from None
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"method": "saturatr (continuum implementation)", "duration_s": args.duration, "payload_bytes": args.payload,
            "queue_s": args.queue_s, "directions": {}}
    for d, (ts, m) in got.items():
        if len(ts) == 0:
            raise TraceCommandError(f"record: nothing arrived {d}link; is the data path open?")
        path = mahimahi.write(args.out / f"{args.name}.{d}", ts)
        st = stats.compute(ts)
        meta["directions"][d] = {**m, "file": path.name, **st.summary()}
        console.print(f"{d}link: {path} ({len(ts)} opportunities, {st.duration_s:.1f} s, mean {st.mean_mbps:.2f} Mbit/s)")
    if args.ping:
        meta["core_latency"] = ping_one_way(args.ping, args.ping_count)
        c = meta["core_latency"]
        if "one_way_ms" in c:
            console.print(f"core latency to {args.ping}: one-way median {c['one_way_ms']['median']:.2f} ms (P5 {c['one_way_ms']['p5']:.2f}, P95 {c['one_way_ms']['p95']:.2f})")
    (args.out / "metadata.json").write_text(json.dumps(meta, indent=1))
    console.print(f"metadata: {args.out / 'metadata.json'}; contribute with: continuum traces add ID --up ... --down ... --extra {args.out / 'metadata.json'}")
    return 0


def _main_light(args, console) -> int:
    from continuum.errors import TraceCommandError
    from continuum.tracearchive import light, record_light

    if not 1 <= args.up_packets <= 1000 or not 1 <= args.down_packets <= 1000:
        raise TraceCommandError("--up-packets/--down-packets: 1..1000 packets a train", 2)
    if not 5 <= args.gap_ms <= 10_000:
        raise TraceCommandError(f"--gap-ms: {args.gap_ms} must be 5..10000 ms", 2)
    base_cfg = {"payload": args.payload, "up_packets": args.up_packets, "down_packets": args.down_packets}
    gap = args.gap_ms
    cal: dict = {}

    def rounds(done: list[dict]):
        """Calibration first (with --calibrate), then the recording at a gap of at least G_min."""
        nonlocal gap, cal
        if args.calibrate and not done:
            return [("calibration", g, args.calibrate_s, args.calibrate_packets) for g in record_light.CALIBRATION_GAPS_MS]
        if len(done) == (1 if args.calibrate else 0):
            if args.calibrate:
                cal = record_light.calibration(done[0])
                for d, c in cal.items():
                    console.print(f"calibration {d}link: G_min {c['g_min_ms']} ms, idle time F {c['idle_ms']:g} ms (mean train "
                                  f"span per gap: {', '.join(f'{g} ms: {m:.1f}' for g, m in c['mean_span_ms_per_gap'].items())})")
                gmin = max((c["g_min_ms"] for c in cal.values()), default=gap)
                if gmin > gap:
                    console.print(f"the recording's gap: {gmin} ms (G_min), not {gap}")
                    gap = gmin
            return [("recording", gap, args.duration)]
        if args.sizes and len(done) == (2 if args.calibrate else 1):
            sizes = record_light.offset_sizes(args.payload)
            return [("sizes", gap, args.sizes_count * len(sizes) * gap * 1.25 / 1000, 1, sizes)]
        return None

    if args.sizes and not 1 <= args.sizes_count <= 1000:
        raise TraceCommandError(f"--sizes-count: {args.sizes_count} must be 1..1000 packets a size", 2)
    if args.sizes and len(record_light.offset_sizes(args.payload)) < 2:
        raise TraceCommandError(f"--sizes: the trains' packets ({args.payload} bytes of payload, {args.payload + IP_UDP + 4} charged) "
                                "leave no 100-byte bin below them to measure; give --payload 69 or more", 2)
    try:
        got = light_session(args.peer, args.port, args.data_peer or args.peer, base_cfg, rounds, say=console.print)
        s = got[1 if args.calibrate else 0]
        res = record_light.light_lines(s, args.base)
        offs = record_light.size_offsets(got[-1], args.base, args.payload) if args.sizes else {}
    except (OSError, RuntimeError) as e:
        raise TraceCommandError(f"record --light: {e}") from None
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"method": "light trains (CellReplay's method, continuum implementation)", "duration_s": args.duration,
            "gap_ms": gap, "up_packets": args.up_packets, "down_packets": args.down_packets, "payload_bytes": args.payload,
            "base_delay": args.base, "calibration": cal, "directions": {}}
    for d in ("up", "down"):
        r = res[d]
        if len(r["lines"]) < 3:
            raise TraceCommandError(f"record --light: {len(r['lines'])} {d}link trains arrived with their first packet; "
                                    "is the data path open?")
        idle = cal.get(d, {}).get("idle_ms", light.DEFAULT_IDLE_MS)
        offsets = None
        if d in offs:
            o = offs[d]
            offsets = light.write_offsets(args.out / f"{args.name}.{d}.offsets", o["offsets_ms"],
                                          note=f"recorded by continuum traces record --light --sizes: per size (the link's charge, IP + 4), "
                                               f"the median {'one-way delay' if args.base == 'owd' else 'half round trip'} of "
                                               f"{o['packets_per_size']}+ lone packets less that of {o['reference_bytes']}-byte ones "
                                               f"({o['reference_delay_ms']:g} ms)").name
            meta.setdefault("size_offsets", {})[d] = {"file": offsets, **o}
            console.print(f"{d}link size offsets (ms, against {o['reference_bytes']} bytes): "
                          + ", ".join(f"{size}: {off:+.1f}" for size, off in o["offsets_ms"]))
        path = light.write(args.out / f"{args.name}.{d}.light", r["lines"], args.payload + IP_UDP + 4, idle, offsets,
                           note=f"recorded by continuum traces record --light: a train of {args.up_packets if d == 'up' else args.down_packets} "
                                f"packets every {gap} ms for {args.duration:g} s; base delay: {args.base}"
                                + ("" if d in cal else "\nidle_ms: not calibrated (--calibrate): the default"))
        summ = light.parse(path).summary()
        meta["directions"][d] = {"file": path.name, "trains_sent": r["trains"], "trains_without_first_packet": r["trains_without_first_packet"], **summ}
        b = summ["base_delay_ms"]
        console.print(f"{d}link: {path} ({summ['trains']} trains; base delay median {b['median']:g} ms, P5 {b['p5']:g}, P95 {b['p95']:g}; "
                      f"train span median {summ['train_span_ms']['median']:g} ms)")
    (args.out / "light-metadata.json").write_text(json.dumps(meta, indent=1))
    return 0
