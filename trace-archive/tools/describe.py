"""Maintainers: (re)compute the SHA-256 and statistics of index entries from
their recipes or sources, and write them into the entry files.

    .venv/bin/python trace-archive/tools/describe.py [--mirror DIR] [--download] [ID ...]

Run it after changing a recipe or adding an external entry; review the diff."""

import argparse
import sys
import time
from pathlib import Path

from continuum.tracearchive import describe, index

ap = argparse.ArgumentParser()
ap.add_argument("ids", nargs="*")
ap.add_argument("--mirror", type=Path)
ap.add_argument("--download", action="store_true")
a = ap.parse_args()
wanted = set(a.ids)
for e in index.entries():
    if wanted and e.id not in wanted or e.kind == "contributed":
        continue
    t0 = time.monotonic()
    d = describe.describe(e, a.mirror, a.download)
    index.write(d)
    print(f"{e.id}: " + ", ".join(f"{k} {v.mean_mbps:.2f} Mbit/s mean, {v.duration_s:.0f} s" for k, v in d.stats.items()) + f" ({time.monotonic() - t0:.1f} s)", file=sys.stderr)
