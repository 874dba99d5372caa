"""One point of a campaign run on one machine of `--hosts`, as its own
process (the campaign starts one per machine at a time):
    python -m continuum.campaign.worker FILE SHA256 INDEX MACHINE_JSON RUN_DIR PROVISION RECALIBRATE

Why a process per point and not a thread: a run owns its process's signal
handlers (Ctrl-C and SIGTERM tear it down) and its console, and several run
at once here. The campaign sends each of its points SIGINT once when it is
interrupted, then waits for their teardown. Exit status: 0 complete, 1 the
point failed, 130 interrupted."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from continuum.errors import ContinuumError


def main(argv: list[str]) -> int:
    from continuum import experiment, runner
    from continuum.campaign import machines, sweep

    file, sha, index, machine, run_dir, provision, recalibrate = argv
    console = Console(highlight=False, width=140)
    worker = machines.Worker(**json.loads(machine))
    if hashlib.sha256(Path(file).read_text().encode()).hexdigest() != sha:  # its points would not be the campaign's
        console.print(f"[red]error:[/] {escape(file)} changed since the campaign started: point {index} not run "
                      "(run the campaign again: a changed file is refused, or starts a campaign of its own)")
        return 1
    try:
        point = sweep.points(Path(file))[int(index) - 1]
        text = machines.point_text(point.text, worker, provision == "1")
        spec = experiment.load(file, materialize=True, text=text)
        runner.run(spec, ["continuum", "run", file, "--hosts", f"(point {index} on {worker.name})"], console,
                   recalibrate=recalibrate == "1", run_dir=Path(run_dir))
    except (KeyboardInterrupt, runner.Interrupted) as e:
        console.print(f"[yellow]interrupted[/]: {escape(str(e))}")
        return 130
    except ContinuumError as e:
        console.print(f"[red]error:[/] {escape(str(e))}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
