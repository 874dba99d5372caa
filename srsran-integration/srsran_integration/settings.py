"""What an experiment file says about the real stack ([mobile.srsran]): the
table's model and its resolved form. Here, below continuum/, so that the
configs command (__main__) and the stack's driver (stack.py) read the same
definitions as `continuum run` without importing the orchestrator."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from srsran_integration import lte


class Srsran(BaseModel):
    """[mobile.srsran]: the real stack that replaces the emulated link (mode = "srsran").
    Names follow srsRAN's own: the carrier as an ARFCN, the cell width in MHz."""

    model_config = ConfigDict(extra="forbid")

    generation: Literal["4g", "5g"] = "4g"
    radio: Literal["zmq", "usrp"] = "zmq"
    arfcn: int = Field(default=3350, ge=0, le=3_279_165)  # 4g: the downlink EARFCN (band 7, 2680 MHz)
    bandwidth_mhz: float = 5.0  # 4g: 1.4, 3, 5, 10, 15 or 20 (6 to 100 PRBs)
    tx_gain: float = Field(default=80.0, ge=0, le=100)
    rx_gain: float = Field(default=40.0, ge=0, le=100)
    device_args: str = ""  # usrp: UHD's arguments for the base station's radio
    ue: Literal["srsue", "cots"] = "srsue"
    ue_device_args: str = ""  # usrp + srsue: the UE's own radio
    zmq_port: int = 2000
    band: int | None = None  # 5g: the NR band (n3, n7, n78); 4g: follows from arfcn (if given, must agree)
    policy: Literal["pf", "smec", "tutti", "arma"] = "pf"  # 5g: SMEC's fork's low-latency policy in its pf scheduler
    prefix: str = "/usr/local"  # where playbooks/srsran.yml installed srsRAN
    attach_timeout_s: float = Field(default=120.0, gt=0, le=3600)


@dataclass(frozen=True)
class SrsranSpec:
    """mode = "srsran": the real stack that carries the endpoint's traffic instead of the emulated link."""

    generation: str  # 4g | 5g
    cell: lte.Cell
    prefix: Path  # srsRAN's installation (bin/srsenb, share/srsran/*.example)
    attach_timeout_s: float


class Node(Protocol):
    """What the stack's driver asks of a node it runs srsRAN's programs in (continuum.runtime.Node has it)."""

    name: str
    netns: str

    def run(self, argv: list[str], *, check: bool = True, timeout: float = 60.0) -> Any: ...

    def start(self, argv: list[str], log: Path, env: dict[str, str] | None = None, *, cwd: Path | None = None) -> Any: ...
