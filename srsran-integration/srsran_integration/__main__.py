"""`python3 -m srsran_integration configs EXPERIMENT.toml OUT/`: the files
of an experiment file's [mobile.srsran] cell, for a lab that runs the
stack itself: 4G (enb.conf, epc.conf, user_db.csv, ue.conf) or 5G (gnb.yml
for srsRAN Project or SMEC's fork, ue-nr.conf for srsUE in SA mode, and the
Open5GS subscriber command). `continuum run` writes the 4G files itself;
this is for 5G, for USRPs, and for phones, which a run does not drive."""

from __future__ import annotations

import argparse
import shlex
import sys
import tomllib
from pathlib import Path

from pydantic import ValidationError

from srsran_integration import lte, nr


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m srsran_integration", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("configs", help="write the cell's configuration files into a folder")
    c.add_argument("experiment", type=Path)
    c.add_argument("out", type=Path)
    c.add_argument("--ue-netns", default="ue1", help="the namespace srsUE puts its tunnel in (default ue1)")
    a = ap.parse_args(argv)

    from srsran_integration.settings import Srsran

    try:
        table = tomllib.loads(a.experiment.read_text()).get("mobile", {}).get("srsran", {})
        s = Srsran(**table)
    except (OSError, tomllib.TOMLDecodeError) as e:
        print(f"{a.experiment}: {e}", file=sys.stderr)
        return 2
    except ValidationError as e:
        for err in e.errors():
            print(f"{a.experiment}: mobile.srsran.{'.'.join(map(str, err['loc']))}: {err['msg']}", file=sys.stderr)
        return 2
    logs = str(a.out.resolve())
    if s.generation == "5g":
        cell = nr.NrCell(band=s.band or 3, arfcn=s.arfcn, bandwidth_mhz=int(s.bandwidth_mhz), radio=s.radio,
                         device_args=s.device_args, tx_gain=s.tx_gain, rx_gain=s.rx_gain, ue=s.ue, policy=s.policy,
                         zmq_port=s.zmq_port)
        if _refused(a.experiment, nr.problems(cell)):
            return 2
        files = {"gnb.yml": nr.gnb_yaml(cell, logs),
                 "open5gs-subscriber.sh": "#!/bin/sh\n# the test subscriber, in Open5GS's database\n"
                                          + shlex.join(nr.open5gs_subscriber()) + "\n"}
        if cell.ue == "srsue":
            files["ue-nr.conf"] = nr.srsue_conf(cell, a.ue_netns, logs)
        what = f"5G n{cell.band}, NR-ARFCN {cell.arfcn} ({nr.frequency_mhz(cell.arfcn):g} MHz), {cell.bandwidth_mhz} MHz, {cell.prb} PRBs"
    else:
        cell4 = lte.Cell(radio=s.radio, earfcn=s.arfcn, prb=lte.PRB_OF_MHZ.get(float(s.bandwidth_mhz), 0), tx_gain=s.tx_gain,
                         rx_gain=s.rx_gain, device_args=s.device_args, ue=s.ue, ue_device_args=s.ue_device_args,
                         zmq_port=s.zmq_port)
        if _refused(a.experiment, lte.problems(cell4)):
            return 2
        files = lte.configs(cell4, lte.Files(folder=a.out.resolve(), logs=a.out.resolve(), metrics=a.out.resolve(),
                                            examples=Path(s.prefix) / "share" / "srsran", ue_netns=a.ue_netns))
        what = f"4G band {lte.band(cell4.earfcn)}, EARFCN {cell4.earfcn}, {cell4.prb} PRBs"
    a.out.mkdir(parents=True, exist_ok=True)  # only once the cell is valid: nothing half-written
    for name, text in files.items():
        (a.out / name).write_text(text)
    print(f"{what}: " + ", ".join(str(a.out / n) for n in files))
    return 0


def _refused(experiment: Path, found: list[tuple[str, str]]) -> bool:
    """Each problem of the cell, named by its key; True when there was one."""
    for key, why in found:
        print(f"{experiment}: mobile.srsran.{key}: {why}", file=sys.stderr)
    return bool(found)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
