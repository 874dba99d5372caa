"""The `continuum` command. The only place that exits: library code raises
ContinuumError subclasses, turned here into a message and a status
(1 failure, 2 bad experiment file or usage, 130 interrupted)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from continuum import __version__
from continuum.errors import ConfigError, ContinuumError, UsageError


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="continuum", description="Emulated 5G/6G mobile edge computing experiments.")
    ap.add_argument("--version", action="version", version=f"continuum {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run an experiment file and write a result folder")
    r.add_argument("file", type=Path)
    r.add_argument("--dry-run", action="store_true", help="print the plan (nodes, addresses, links, delays, processes); touch nothing")
    r.add_argument("--provider", metavar="KIND", help="run on this provider (netns, qemu, hosts) in place of the file's "
                                                       "[provider] kind; the run folder's copy of the file says so")
    r.add_argument("--hosts", type=Path, metavar="INVENTORY", help="a campaign (a file with [sweep]): run its points on "
                                                                   "the machines of this Ansible inventory, one point per "
                                                                   "machine at a time, each whole on its machine "
                                                                   "(docs/campaigns.md)")
    r.add_argument("--recalibrate", action="store_true", help="measure each app's service time on its node again, "
                                                              "whatever the calibration cache holds (a busier machine, say)")
    c = sub.add_parser("calibrate", help="measure each app's service time and capacity on its offload node as configured "
                                         "(cached; runs use it for loads stated as utilisation)")
    c.add_argument("file", type=Path)
    c.add_argument("--cached", action="store_true", help="print what the cache holds for this file; measure nothing")
    v = sub.add_parser("validate", help="check an experiment file; report every problem")
    v.add_argument("file", type=Path, nargs="+")
    d = sub.add_parser("destroy", help="remove what runs left on the host (after a crash or kill -9)")
    d.add_argument("run_id", nargs="?", help="the run id (8 hex digits, printed at start and in manifest.json)")
    d.add_argument("--all", action="store_true", help="every run's leftovers")
    d.add_argument("--list", action="store_true", help="only list what is left (of RUN_ID, or of every run)")
    im = sub.add_parser("images", help="build or list the workload container images (needs ./setup.sh --containers), "
                                       "or build the qemu provider's guest image (vm; needs ./setup.sh --vms)")
    im.add_argument("action", choices=["build", "list", "vm"])
    im.add_argument("--only", nargs="+", metavar="IMAGE", help="build just these (e.g. continuum/example)")
    from continuum.tracearchive import cli as traces_cli

    traces_cli.add_parser(sub)
    rep = sub.add_parser("report", help="regenerate requests.csv, summary, plots and report.html of a run folder; "
                                        "given several, a report.html comparing them; given an experiment's folder "
                                        "(experiments/NAME), its report.html beside its markdown")
    rep.add_argument("run_dir", type=Path, nargs="+", metavar="FOLDER")
    rep.add_argument("--out", type=Path, default=None, help="with several runs: the folder for their report.html "
                                                             "(default: compare-<A>-<B> in the current folder); "
                                                             "with an experiment: the page's file")
    rep.add_argument("--self-contained", action="store_true",
                     help="with an experiment: a page that carries Plotly and its figures (one file to pass on); "
                          "the repository's pages load them from beside them")
    cmp = sub.add_parser("compare", help="how far two result folders of one experiment diverge (e.g. netns against qemu): "
                                        "medians, P99s, KS distance and SLO share per metric and app, with a verdict")
    cmp.add_argument("run_a", type=Path, help="a run folder (with --campaign: a group of its points: ARM or KEY=VALUE[,KEY=VALUE])")
    cmp.add_argument("run_b", type=Path)
    cmp.add_argument("--campaign", type=Path, default=None, metavar="FOLDER",
                     help="compare two groups of this campaign's runs (OUTPUT/campaign-NAME), each its runs' requests together")
    cmp.add_argument("--out", type=Path, default=None, help="folder for compare.md, compare.json and compare.png "
                                                             "(default: compare-<A>-<B> in the current folder)")
    cmp.add_argument("--median-tolerance", type=float, default=0.10, help="agree: medians within this share (default 0.10)")
    cmp.add_argument("--ks-tolerance", type=float, default=0.20, help="agree: KS distance at most this (default 0.20)")
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    console = Console(highlight=False)
    if not console.is_terminal:  # logs and CI: long lines stay whole
        console = Console(highlight=False, width=140)
    err = Console(stderr=True, highlight=False, soft_wrap=True)  # an error line stays whole: paths in it can be copied
    try:
        if args.command == "validate":
            return _validate(args.file, console, err)
        if args.command == "run":
            from continuum import experiment, runner
            from continuum.campaign import sweep

            if sweep.has_sweep(args.file):
                from continuum.campaign import run as campaign

                return campaign.run(args.file, ["continuum", *argv], console, dry_run=args.dry_run, provider=args.provider,
                                    recalibrate=args.recalibrate, hosts=args.hosts)
            if args.hosts is not None:
                raise UsageError(f"--hosts runs a campaign's points on machines, and {args.file} has no [sweep]; for one "
                                 "run over several machines, give the file [provider] kind = \"hosts\" (docs/providers.md)")
            spec = experiment.load(args.file, materialize=not args.dry_run, provider=args.provider)
            runner.run(spec, ["continuum", *argv], console, dry_run=args.dry_run, recalibrate=args.recalibrate)
            return 0
        if args.command == "calibrate":
            from continuum import calibrate_cli

            return calibrate_cli.run(args.file, args.cached, console)
        if args.command == "destroy":
            return _destroy(args, console)
        if args.command == "images":
            return _images(args, console)
        if args.command == "traces":
            from continuum.tracearchive import cli as traces_cli

            try:
                return traces_cli.run(args, console)
            except traces_cli.TraceCommandError as e:
                err.print(f"[red]error:[/] {escape(str(e))}", markup=True, highlight=False)
                return e.status
        if args.command == "compare":
            from continuum.results import compare

            tol = compare.Tolerance(args.median_tolerance, args.ks_tolerance)
            if args.campaign is not None:
                from continuum.campaign import compare as groups

                a, b = groups.side(args.campaign, str(args.run_a)), groups.side(args.campaign, str(args.run_b))
                safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in f"{args.run_a}-vs-{args.run_b}")
                out = args.out or args.campaign / f"compare-{safe}"
                c, made = compare.run_sides(a, b, out, tol)
            else:
                out = args.out or Path(f"compare-{args.run_a.resolve().name}-{args.run_b.resolve().name}")
                c, made = compare.run(args.run_a, args.run_b, out, tol)
                from continuum.results import html  # the same comparison as a page to open in a browser

                made.append(html.write_comparison([args.run_a, args.run_b], out))
            console.print(compare.render(c))
            console.print(f"written: {', '.join(str(p) for p in made)}")
            return 0
        if args.command == "report":
            from continuum.results import report, tables

            if len(args.run_dir) > 1:
                from continuum.results import html

                out = args.out or Path(f"compare-{args.run_dir[0].name}-{args.run_dir[1].name}")
                console.print(f"written: {html.write_comparison(args.run_dir, out)}")
                return 0
            from continuum.results import experiment_page

            if experiment_page.is_experiment(args.run_dir[0]):
                console.print(f"written: {experiment_page.write(args.run_dir[0], args.out, args.self_contained)}")
                return 0
            summary, made = report.build(args.run_dir[0])
            console.print(tables.render(summary))
            console.print(f"plots: {', '.join(str(p) for p in made)}")
            return 0
    except (ConfigError, UsageError) as e:
        err.print(f"[red]error:[/] {escape(str(e))}")
        return 2
    except ContinuumError as e:
        from continuum.runner import Interrupted

        err.print(f"[red]error:[/] {escape(str(e))}")  # an error may quote [brackets] (a TOML table, Ansible's [host])
        return 130 if isinstance(e, Interrupted) else 1
    except KeyboardInterrupt:
        err.print("[red]error:[/] interrupted")
        return 130
    except Exception as e:  # noqa: BLE001 - the user gets a message, not a traceback
        if os.environ.get("CONTINUUM_TRACEBACK"):
            raise
        what = f"{e.strerror}: {e.filename}" if isinstance(e, OSError) and e.strerror and e.filename else str(e)
        err.print(f"[red]error:[/] {type(e).__name__}: {what}\n(an unexpected failure; CONTINUUM_TRACEBACK=1 shows where, "
                  "please report it with that output)", markup=True)
        return 1
    return 2


def _validate(files: list[Path], console: Console, err: Console) -> int:
    from continuum import experiment

    status = 0
    from continuum.campaign import sweep

    for f in files:
        try:
            if sweep.has_sweep(f):
                specs = sweep.check(f, sweep.points(f))
                console.print(f"[green]ok[/]: {f} (a campaign of {len(specs)} points, {specs[0].name}; each checked as a "
                              "whole file; `continuum run --dry-run` lists them)")
                continue
            spec = experiment.load(f, materialize=False)
        except ConfigError as e:
            err.print(f"[red]invalid:[/] {escape(str(e))}")
            status = 2
            continue
        console.print(f"[green]ok[/]: {f} ({spec.name}: {len(spec.nodes)} nodes, "
                      f"{spec.mobile.describe()}, offload to {spec.workload.offload})")
    return status


def _images(args: argparse.Namespace, console: Console) -> int:
    from continuum.engines import containers

    if args.action == "vm":
        from continuum import vmimage

        guest = vmimage.build(lambda s: console.print(f"  {s}"))
        console.print(f"guest image {guest.digest}: {guest.folder}")
        return 0
    if args.action == "build":
        import time

        t = time.monotonic()
        built = containers.build(lambda s: console.print(f"  {s}"), args.only)
        console.print(f"[green]built[/] {', '.join(built)} in {time.monotonic() - t:.0f} s")
        return 0
    problem = containers.engine_problem()
    if problem:
        raise ContinuumError(problem)
    for image, missing in ((i, containers.image_problems([i])) for i in containers.IMAGES):
        console.print(f"  {containers.ref(image):<32} {missing[0] if missing else 'up to date'}")
    return 0


def _destroy(args: argparse.Namespace, console: Console) -> int:
    from continuum import naming
    from continuum.providers import REGISTRY

    if args.run_id and args.all:
        raise UsageError("destroy takes a RUN_ID or --all, not both")
    if not args.run_id and not args.all and not args.list:
        raise UsageError("destroy needs a RUN_ID or --all (add --list to only see what is left)")
    if args.run_id and not naming.RUN_ID.match(args.run_id):
        raise ContinuumError(f"{args.run_id!r} is not a run id (8 hex digits, e.g. 3fa85f64); see manifest.json of the run")
    run_id = args.run_id or None
    whose = f"run {run_id}" if run_id else "any run"
    found = 0
    removed = 0
    from continuum.edge.registry import SYSTEMS
    from continuum.edge.system import EdgeSystem
    from continuum.providers import Provider

    # the providers' nodes, then what edge systems started beside them (a GPU's MPS daemon)
    cleaners: list[tuple[str, Provider | EdgeSystem]] = [*((k, cls()) for k, cls in sorted(REGISTRY.items())), *SYSTEMS.items()]
    for kind, provider in cleaners:
        items = provider.leftovers(run_id)
        found += len(items)
        for item in items:
            console.print(f"  {kind}: {item}")
        if not args.list and items:
            removed += provider.destroy(run_id, lambda s: None)
    if args.list:
        console.print(f"{found} resource(s) left by {whose}; remove them with: continuum destroy {run_id or '--all'}"
                      if found else f"nothing left by {whose}: nothing to remove")
    else:
        console.print(f"removed {removed} resource(s) left by {whose}" if removed else f"nothing left by {whose}: nothing to remove")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
