"""srsRAN 4G as a run's cellular hop (mobile.mode = "srsran"): the EPC, the
eNB and srsUE started in the run's epc namespace, in that order, each only
once the one before it is up, and the endpoint routed into srsUE's tunnel once
the UE has attached.

Why in one namespace of their own, with the tunnel in the endpoint's: the
eNB and the UE talk over the ZMQ radio's TCP sockets on epc's loopback, the
eNB and the MME over S1 on it too, so none of the stack's own traffic is on
a path the run measures; srsUE's `gw.netns` puts the tunnel, the UE's IP
interface, where the endpoint's workload runs, and the EPC's SGi interface
in epc is one routed hop from the core (through ran, which adds the core
delay). An endpoint request therefore crosses srsUE's PDCP/RLC/MAC/PHY, the
radio, the eNB's, GTP-U and the SP-GW, then the core delay to the edge or
cloud. Where the kernel has no SCTP, S1 goes over environment.s1_shim()."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from srsran_integration import environment, lte
from srsran_integration.settings import Node, SrsranSpec

SGI_IF = "srs_spgw_sgi"
ENB_STARTED = "eNodeB started"  # srsENB's stdout once its S1 Setup with the MME succeeded
ATTACHED = "Network attach successful"  # srsUE's stdout once it has its address


@dataclass(frozen=True)
class Process:
    what: str
    proc: subprocess.Popen
    log: Path


class StackError(RuntimeError):
    """A part of the stack did not come up; the message says which and where its log is."""


def files(s: SrsranSpec, run_dir: Path, ue: Node) -> lte.Files:
    folder = run_dir / "srsran"
    return lte.Files(folder=folder, logs=run_dir / "logs", metrics=folder, examples=s.prefix / "share" / "srsran",
                     ue_netns=ue.netns)


def write_configs(s: SrsranSpec, f: lte.Files) -> dict[str, Path]:
    f.folder.mkdir(parents=True, exist_ok=True)
    f.logs.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, text in lte.configs(s.cell, f).items():
        (f.folder / name).write_text(text)
        out[name] = f.folder / name
    return out


def start(s: SrsranSpec, epc: Node, ue: Node, run_dir: Path, say: Callable[[str], None],
          on_start: Callable[[Process], None]) -> list[Process]:
    """Start the three programs; on_start is called with each as soon as it
    runs (so the caller can stop it whatever happens next). Returns them once
    the UE is attached and the endpoint's routes go through its tunnel."""
    f = files(s, run_dir, ue)
    conf = write_configs(s, f)
    bin_ = s.prefix / "bin"
    started: list[Process] = []
    shim = environment.s1_shim()
    env = {"LD_PRELOAD": str(shim)} if shim else None
    if shim:
        say(f"S1 over UDP on epc's loopback: this kernel has no SCTP ({shim.name})")

    def launch(what: str, program: str, config: Path) -> Process:
        log = f.logs / f"{program}.out"
        # in the run's srsran/ folder: srsUE keeps its NAS context (.ctxt) where it runs
        p = Process(what, epc.start([str(bin_ / program), str(config)], log, env, cwd=f.folder), log)
        on_start(p)
        started.append(p)
        return p

    def alive(p: Process) -> None:
        if p.proc.poll() is not None:
            raise StackError(f"{p.what} exited with status {p.proc.returncode} while starting; see {p.log}"
                             + _tail(p.log))

    def wait(what: str, done: Callable[[], bool], timeout: float, watch: list[Process]) -> float:
        t0 = time.monotonic()
        while not done():
            for p in watch:
                alive(p)
            if time.monotonic() - t0 > timeout:
                raise StackError(f"timed out after {timeout:.0f} s waiting for {what}; see "
                                 + ", ".join(str(p.log) for p in watch) + _tail(watch[-1].log))
            time.sleep(0.1)
        return time.monotonic() - t0

    mme = launch("srsEPC (MME, HSS, SP-GW)", "srsepc", conf["epc.conf"])
    took = wait("srsEPC's SGi interface", lambda: _has_link(epc, SGI_IF), 30, [mme])
    say(f"srsEPC up in {took:.1f} s (SGi {lte.UE_POOL}.1 on {SGI_IF})")
    enb = launch("srsENB", "srsenb", conf["enb.conf"])
    took = wait("srsENB's S1 Setup with the MME", lambda: ENB_STARTED in _read(enb.log), 60, [mme, enb])
    band = lte.band(s.cell.earfcn)
    dl, ul = lte.frequencies_mhz(s.cell.earfcn)
    say(f"srsENB up in {took:.1f} s: band {band}, EARFCN {s.cell.earfcn} ({dl:g} MHz down, {ul:g} up), "
        f"{s.cell.prb} PRBs, radio {s.cell.radio}")
    if s.cell.ue != "srsue":  # a phone attaches when it likes: the run waits for its tunnel-less address instead
        raise StackError("ue = \"cots\": a phone's traffic cannot be routed from an emulated endpoint; "
                         "run the workload on the phone (see srsran-integration/README.md)")
    ue_proc = launch("srsUE", "srsue", conf["ue.conf"])
    took = wait(f"srsUE to attach (cell search, RRC, NAS; mobile.srsran.attach_timeout_s = {s.attach_timeout_s:g})",
                lambda: ATTACHED in _read(ue_proc.log) and _has_address(ue, lte.UE_TUN, f"{lte.UE_POOL}.2"),
                s.attach_timeout_s, [mme, enb, ue_proc])
    say(f"srsUE attached in {took:.1f} s: {lte.UE_POOL}.2 on {lte.UE_TUN} in {ue.name}")
    return started


def route_endpoint(ue: Node, nets: str) -> None:
    """The endpoint's way to the run's nodes: srsUE's tunnel (a point-to-point
    device: no gateway, no neighbour to resolve)."""
    ue.run(["ip", "route", "replace", nets, "dev", lte.UE_TUN])


def _has_link(node: Node, dev: str) -> bool:
    return node.run(["ip", "link", "show", "dev", dev], check=False).returncode == 0


def _has_address(node: Node, dev: str, address: str) -> bool:
    p = node.run(["ip", "-4", "-o", "addr", "show", "dev", dev], check=False)
    return p.returncode == 0 and f" {address}/" in p.stdout


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _tail(log: Path, lines: int = 8) -> str:
    text = [line for line in _read(log).splitlines() if line.strip()][-lines:]
    return (":\n    " + "\n    ".join(text)) if text else ""
