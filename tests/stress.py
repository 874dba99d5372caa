"""The load-sensitive tests under a harder machine (issue #36), from the
test command's environment: CONTINUUM_TEST_STRESS=hog runs a CPU hog
pinned to one core for the whole pytest session (calibrations included,
so loads stated as utilisation are measured against the busier machine),
and CONTINUUM_TEST_STRESS=half-speed emulates the edge's cores at half
speed (`speed = 0.5` on [nodes.edge]: a short CFS period, each request
stretched twice). Meant for the files tests/README.md lists as
load-sensitive, which must pass the same way idle, under the hog and at
half speed:

    CONTINUUM_TEST_STRESS=half-speed .venv/bin/python -m pytest tests/smec_edge/test_mix_live.py

Run as a script, it repeats test files and tabulates, per test, its runs,
failures and the margin of each premise it checked (tests/premise.py), for
tests/README.md's table of premises (issue #59):

    .venv/bin/python tests/stress.py --repeat 10 tests/orchestrator/test_mecanic.py
    .venv/bin/python tests/stress.py --repeat 10 --stress hog --out /tmp/premises.md tests/mosaic/test_executor_live.py

Each repetition is one pytest session of all the files in one process (no
second lane), so every test meets the same machine it meets in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

STRESSES = ("", "hog", "half-speed")
STRESS = os.environ.get("CONTINUUM_TEST_STRESS", "")
if STRESS not in STRESSES:
    raise SystemExit(f"CONTINUUM_TEST_STRESS={STRESS!r}: valid are {', '.join(repr(s) for s in STRESSES)}")


def edge_config(text: str) -> str:
    """An experiment file's text with the stress applied: at half-speed, the edge node's cores at speed 0.5
    (its CPU share stays what the file says: the kernel's quota is cpus x speed, so the node also serves half
    as much, which the calibration measures). A file that sets its own speed is left as it is."""
    if STRESS != "half-speed" or re.search(r"(?m)^speed\s*=", text):
        return text
    if not re.search(r"(?m)^\[nodes\.edge\]$", text):
        raise AssertionError("CONTINUUM_TEST_STRESS=half-speed: this test's experiment file has no [nodes.edge] to slow down")
    return re.sub(r"(?m)^\[nodes\.edge\]$", "[nodes.edge]\nspeed = 0.5", text, count=1)


def node_cgroup(cpus: float) -> tuple[float, int]:
    """(quota in CPUs, CFS period in us) for a node cgroup a test makes itself: at half-speed the quota is
    halved over the short period that `speed = 0.5` uses, as continuum gives a node at that speed."""
    from continuum.cgroups import PERIOD_US
    from continuum.config.spec import SPEED_PERIOD_US

    return (cpus * 0.5, SPEED_PERIOD_US) if STRESS == "half-speed" else (cpus, PERIOD_US)


def _outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed / failed / skipped, from pytest's JUnit XML."""
    out: dict[str, str] = {}
    if not junit.exists():
        return out
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        test = f"{path}.py::{case.get('name')}"
        kinds = {child.tag for child in case}
        out[test] = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
    return out


def table(outcomes: list[dict[str, str]], premises: list[dict]) -> str:
    """The markdown table: per test, runs and failures; per premise, its threshold and measured min and median."""
    tests = sorted({t for o in outcomes for t in o})
    rows = ["| test | runs | failed | premise | needs | measured min | median | least margin |", "|---|---|---|---|---|---|---|---|"]
    for t in tests:
        runs = sum(1 for o in outcomes if o.get(t) in ("passed", "failed"))
        failed = sum(1 for o in outcomes if o.get(t) == "failed")
        if runs == 0:
            continue
        mine = [p for p in premises if p["test"] == t]
        names = sorted({p["premise"] for p in mine})
        if not names:
            rows.append(f"| {t} | {runs} | {failed} | - | | | | |")
        for name in names:
            ps = [p for p in mine if p["premise"] == name]
            vals = [p["value"] for p in ps]
            worst = min(vals) if not ps[0]["at_most"] else max(vals)
            rows.append(f"| {t} | {runs} | {failed} | {name} ({len(ps)} checks) | {'<=' if ps[0]['at_most'] else '>='} "
                        f"{ps[0]['threshold']:.4g} | {worst:.4g} | {statistics.median(vals):.4g} | {min(p['margin'] for p in ps):.2f}x |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Repeat test files; tabulate failures and premise margins (tests/premise.py).")
    ap.add_argument("--repeat", type=int, default=10, help="pytest sessions of the files (default 10)")
    ap.add_argument("--stress", choices=STRESSES, default=STRESS, help="CONTINUUM_TEST_STRESS for every session")
    ap.add_argument("--out", type=Path, help="also write the table (markdown) here")
    ap.add_argument("-k", dest="keyword", help="pytest's -k, to repeat some of the files' tests")
    ap.add_argument("files", nargs="+", type=Path)
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.files if not f.exists()]
    if missing or args.repeat < 1:
        ap.error(f"no such test file: {', '.join(missing)}" if missing else "--repeat must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="continuum-stress-"))
    log = work / "premises.jsonl"
    env = dict(os.environ, CONTINUUM_PREMISE_LOG=str(log), CONTINUUM_TEST_STRESS=args.stress, CONTINUUM_TEST_LANES="1")
    outcomes = []
    for i in range(args.repeat):
        junit = work / f"junit-{i}.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *map(str, args.files)]
        if args.keyword:
            cmd += ["-k", args.keyword]
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        got = _outcomes(junit)
        outcomes.append(got)
        (work / f"run-{i}.log").write_text(p.stdout)
        failed = [t for t, o in got.items() if o == "failed"]
        print(f"run {i + 1}/{args.repeat}: {sum(o == 'passed' for o in got.values())} passed, {len(failed)} failed "
              f"({time.monotonic() - t0:.0f} s){': ' + ', '.join(failed) if failed else ''}", flush=True)
        if not got:
            print(p.stdout[-3000:], file=sys.stderr)
            return 2
    premises = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    md = table(outcomes, premises)
    stress = f", CONTINUUM_TEST_STRESS={args.stress}" if args.stress else ""
    head = f"{args.repeat} runs of {' '.join(map(str, args.files))}{stress} ({time.strftime('%Y-%m-%d')}; logs in {work})\n\n"
    print("\n" + head + md)
    if args.out:
        args.out.write_text(head + md)
    return 1 if any(o == "failed" for got in outcomes for o in got.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
