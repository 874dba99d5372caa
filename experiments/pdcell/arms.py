"""The pDCell experiment's arms: configs/pdcell-*.toml with the run's folder
and name set, and for the load sweep the flows' rate scaled, written to stdout:
    arms.py ARM LOAD OUTPUT_FOLDER
ARM: mrfs, pfs, tcp, phost-inf (configs/pdcell-{mrfs,pfs,tcp,phost}.toml),
phost-3mb (pdcell-phost.toml with the 3 MB CU buffer of pDCell's arms), tcp-reno
or tcp-bbr (pdcell-tcp.toml with NewReno or BBR in place of CUBIC); LOAD:
the offered load as a share of the cell ([workload.params] load; the configs
say 0.6), each run measures and reports the load it offered."""

from __future__ import annotations

import re
import sys
from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
ARMS = {"mrfs": "pdcell-mrfs", "pfs": "pdcell-pfs", "tcp": "pdcell-tcp", "phost-inf": "pdcell-phost", "phost-3mb": "pdcell-phost",
        "tcp-reno": "pdcell-tcp", "tcp-bbr": "pdcell-tcp"}
CONFIG_LOAD = 0.6


def arm(name: str, load: float, out: Path) -> str:
    if name not in ARMS:
        raise SystemExit(f"arms.py: no arm {name!r}; arms: {', '.join(ARMS)}")
    text = (CONFIGS / f"{ARMS[name]}.toml").read_text()
    text = re.sub(r'(?m)^name = "pdcell-[a-z]+"$', f'name = "pdcell-{name}-load{load:g}"\noutput = "{out}"', text)
    given = re.search(r"(?m)^load = ([0-9.]+)", text)
    assert given and float(given.group(1)) == CONFIG_LOAD, f"{ARMS[name]}.toml lost its load"
    text = text.replace(given.group(0), f"load = {load:g}")
    if name in ("tcp-reno", "tcp-bbr"):
        assert 'congestion_control = "cubic"' in text
        text = text.replace('congestion_control = "cubic"', f'congestion_control = "{name.removeprefix("tcp-")}"')
    if name == "phost-3mb":
        assert 'buffer_kb = "inf"' in text
        text = text.replace('buffer_kb = "inf"', "buffer_kb = 3000")
    return text


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    sys.stdout.write(arm(sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])))
