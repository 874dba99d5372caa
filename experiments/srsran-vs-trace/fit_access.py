"""How the lte-fdd-srsran access preset's pipeline delays were fitted (issue #58): on the stack's light
recording (archive entry srsran4g-zmq-5mhz), never on the workload runs the check compares.

Uplink: the recording's lone packets of each size (`traces record --light --sizes`: the median one-way
delay of 1504-byte ones and each size's offset from it) against what the preset's one-UE cell gives the
same lone packets on the recorded uplink trace (`mahimahi-link simulate-cell` at the preset's SR period,
SR grant, k2 and periodic BSR; arrival at the end of the slot it leaves in, as the radio stage does), at
random phases of the SR grid. The preset's uplink pipeline delay is the median over the sizes of what the
stack took more. Downlink: the recording's median base delay less the half slot the slot's end adds.

    .venv/bin/python experiments/srsran-vs-trace/fit_access.py
"""

from __future__ import annotations

import random
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from continuum.config import presets  # noqa: E402
from continuum.tracearchive import light  # noqa: E402
from continuum.traces import mahimahi_link_binary  # noqa: E402

ENTRY = REPO / "trace-archive" / "contributed" / "srsran4g-zmq-5mhz"
MS = 1_000_000


def lone_packet_delays(trace: Path, size: int, a: presets.AccessPreset, n: int = 400) -> list[float]:
    rng = random.Random(size)
    arrivals = [(300 * MS * k + rng.randint(0, round(a.sr_period_ms * MS)), size) for k in range(1, n + 1)]
    slot = a.slot_us * 1000
    argv = [str(mahimahi_link_binary()), "simulate-cell", f"--trace={trace}", "--uplink-signalling", f"--slot-us={a.slot_us}",
            f"--blocks={a.blocks}", f"--sr-period-slots={round(a.sr_period_ms * 1000 / a.slot_us)}", f"--k2-slots={a.k2_slots}",
            f"--sr-grant-blocks={a.sr_grant_blocks}", f"--periodic-bsr-slots={round(a.periodic_bsr_ms * 1000 / a.slot_us)}"]
    p = subprocess.run(argv, input="".join(f"{t} 0 {s}\n" for t, s in arrivals), capture_output=True, text=True, check=True)
    left = {int(f[2]): int(f[3]) for f in (line.split() for line in p.stdout.splitlines()) if f[0] == "d"}
    return [((left[i] // slot + 1) * slot - t) / MS for i, (t, _) in enumerate(arrivals) if i in left]


def main() -> None:
    a = presets.ACCESS["lte-fdd-srsran"]
    up = ENTRY / "srsran4g-zmq-5mhz.up"
    offsets = light.parse_offsets(up.with_name(up.name + ".offsets"))
    header = re.search(r"\(([\d.]+) ms\)", up.with_name(up.name + ".offsets").read_text())
    assert header, "the offsets file's header names the 1504-byte packets' median delay"
    full = float(header.group(1))
    print(f"uplink: lone packets, the stack's median one-way delay against the preset's cell ({a.what})")
    print("size  stack  model  stack-model (ms)")
    diffs = []
    for size, off in [*((100 * (i + 1), o) for i, o in enumerate(offsets)), (light.DEFAULT_PDO_BYTES, 0.0)]:
        stack, model = full + off, statistics.median(lone_packet_delays(up, size, a))
        diffs.append(stack - model)
        print(f"{size:4d}  {stack:5.1f}  {model:5.1f}  {stack - model:+5.1f}")
    print(f"uplink pipeline: median {statistics.median(diffs):.2f} ms (spread {min(diffs):+.1f}..{max(diffs):+.1f}); "
          f"the preset has {a.ul_delay_ms:g}")
    down = light.parse(ENTRY / "srsran4g-zmq-5mhz.down.light")
    base = statistics.median(ln.base_ms for ln in down.lines)
    print(f"downlink pipeline: median base {base:g} ms less half a slot = {base - a.slot_us / 2000:g} ms; "
          f"the preset has {a.dl_delay_ms:g}")


if __name__ == "__main__":
    main()
