"""run-matrix run: run the selected cells on Ray — prepare, launch, watch, check metrics, report.

``run-matrix SPEC ...`` means ``run-matrix run SPEC ...``. The live view and the summary
table go to stderr; ``--format json`` puts the report on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner import pipeline
from runner.cells.cell import Cell
from runner.changed.gather import narrow
from runner.cli.output import (
    SELECT_HELP,
    add_allow_system_steps,
    add_changed,
    add_format,
    add_miles_python,
    add_miles_root,
    add_trust_checkout,
    print_json,
    print_problems,
    seconds,
)
from runner.errors import EnvironmentProblem, Problem, UsageError, display_path, merged
from runner.launch import system_steps
from runner.launch.checkout import launch_context, observer
from runner.launch.planned import Planned
from runner.launch.render import render
from runner.redact import Redactor
from runner.results import report
from runner.run.plan import Options, job_name
from runner.run.record import new_run_id

if TYPE_CHECKING:
    from runner.knowledge.conventions import Observed
    from runner.results.history.recorder import Recorder
    from runner.run.outputs import Outputs


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Run every selected cell: requirements, preflight (GPUs, miles checkout, Ray), "
        "prepare steps, a local Ray head (or --ray-address), the services of launch.before_submit (the "
        "Mooncake master, unless its port answers; a hook of the test's own, kept up until the job ends), "
        "the job, its metrics against expect:, "
        "and the reports. Report paths and --log-dir are checked before any work; the reports are rewritten "
        "after every cell; SIGTERM and SIGHUP act as Ctrl-C; what a run starts is recorded, so the next "
        "run (or `run-matrix cleanup`) stops what a killed run left. Exit 0 all passed, 1 any failed, "
        "2 invalid spec, 3 environment (or a report could not be written), 5 nothing ran (every cell "
        "skipped), 130 interrupted. "
        "`run-matrix SPEC` is short for `run-matrix run SPEC`.",
    )
    parser.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC|DIR|CELL",
        help="spec files, folders or cell ids (or --cells, --shard-of)",
    )
    add_changed(parser)
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    chosen.add_argument(
        "--cells",
        type=Path,
        metavar="FILE",
        help='run exactly these cells, in this order: a JSON list of ids (or {"cells": [...]}) or one id a '
        "line, among the specs given (default: matrices/)",
    )
    chosen.add_argument(
        "--shard-of",
        nargs=2,
        metavar=("PLAN", "K"),
        help="run shard K of a `run-matrix ci plan` (its --format json or github output), among the specs "
        "the plan was made from unless specs are given",
    )
    env = os.environ
    add_miles_root(
        parser,
        "what runs; its presets give MODEL_ARGS, its execute_train the runtime env, and its own flags"
        " decide which are valid",
    )
    parser.add_argument(
        "--ray-address",
        default=env.get("RAY_ADDRESS") or env.get("RAY_API_SERVER_ADDRESS") or None,
        help="an existing Ray cluster to submit to (default: $RAY_ADDRESS; without one, run-matrix starts "
        "a local head for each cell and stops it afterwards)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="start nothing; decide what the run decides first: requirements and skips, preflight (GPUs "
        "counted as a run counts them: nvidia-smi -L, amd-smi list, rocm-smi --showid or torch; with "
        "--ray-address the cluster's nodes are asked), the secrets the jobs need, and miles' parser as the "
        "run asks it (in the sandbox: the node's python3, or --miles-python). Prints the plan, then the "
        "verdict, and exits with the run's code "
        "(3 environment, 5 nothing to run, 1 a cell miles refuses or a skip under --strict, 0 when the jobs "
        "pass). The probes, report paths, --log-dir and the history store are left to the run. With "
        "--no-preflight: the plan alone, exit 0",
    )
    parser.add_argument(
        "--skip-prepare",
        action="store_true",
        help="do not run the prepare steps (a cell whose flag takes a prepare call's result, written"
        " $${prepared:FUNCTION} in the spec's YAML, then fails before its job)",
    )
    parser.add_argument(
        "--no-preflight", dest="preflight", action="store_false", help="skip the GPU, checkout and Ray checks"
    )
    add_miles_python(
        parser,
        "the job's interpreter (default: python3 on PATH): before the first ray start, run the checkout's"
        " own parse_args() on each cell's launch in the sandbox; a cell miles refuses fails with miles'"
        " message and the spec line",
    )
    parser.add_argument(
        "--no-miles-check",
        dest="miles_check",
        action="store_false",
        help="do not run miles' parser before the jobs (the summary says it was not run)",
    )
    parser.add_argument(
        "--timeout", type=seconds, metavar="SECONDS", help="stop a job that runs longer (a number > 0)"
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    parser.add_argument("--report", type=Path, metavar="FILE", help="write the JSON report")
    parser.add_argument(
        "--force",
        action="store_true",
        help="--junit or --report is a link: replace the link itself (never write where it points); "
        "without it a link there is refused (exit 3)",
    )
    parser.add_argument("--keep-going", action="store_true", help="run the remaining cells after a failure")
    parser.add_argument("--strict", action="store_true", help="a skipped cell fails the run")
    parser.add_argument(
        "--log-dir", type=Path, help="where the per-cell logs go (default: run-matrix-logs/<run id>)"
    )
    parser.add_argument(
        "--history",
        metavar="PATH|URL",
        help="the history store: a SQLite file or postgresql://USER@HOST/DB (default: "
        "$RUN_MATRIX_HISTORY_URL, else history.sqlite beside the log folders); "
        "passwords only from the environment",
    )
    parser.add_argument(
        "--no-record",
        action="store_true",
        help="judge against the history, but keep this run out of every baseline (it is stored untrusted)",
    )
    add_allow_system_steps(parser)
    add_trust_checkout(parser)
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


@dataclass(frozen=True)
class Selected:
    cell: Cell
    warnings: list[Problem]


def select_cells(names: list[str], expression: str | None, miles_root: Path | None = None) -> list[Selected]:
    """The cells the user named (specs, folders, cell ids), narrowed by ``-k``; checked (against the
    checkout's own flags when there is one)."""
    return [
        Selected(cell, pipeline.problems(cell))
        for cell in pipeline.select(names, expression, miles_root=miles_root)
    ]


def _selected(args: argparse.Namespace, miles_root: Path | None) -> list[Selected]:
    """The cells of the command line, or exactly those ``--cells`` / ``--shard-of`` name."""
    if args.cells is None and args.shard_of is None:
        if not args.specs:
            raise UsageError("run: give a spec, folder or cell id (or --cells FILE, --shard-of PLAN K)")
        chosen = select_cells(args.specs, args.k, miles_root)
        narrowed = narrow([s.cell for s in chosen], args.changed, args.since, miles_root)
        ids = {s.cell.id for s in narrowed} if narrowed is not None else None
        return [s for s in chosen if ids is None or s.cell.id in ids]
    from runner.ci import shard

    if args.changed is not None or args.since is not None:
        raise UsageError(
            "--changed/--since select among specs; --cells and --shard-of name the cells already"
        )
    if args.cells is not None:
        given, source = shard.cells_file(args.cells), f"--cells {args.cells}"
    else:
        path, number = args.shard_of
        if not number.isdigit():
            raise UsageError(f"--shard-of {path} {number}: K is a shard number (0, 1, ...)")
        given, source = shard.shard_of(Path(path), int(number)), f"--shard-of {path} {number}"
    if not given.ids:
        print(f"run-matrix: {source} names no cell: nothing to run", file=sys.stderr)
        return []
    names = args.specs or list(given.specs or ["matrices"])
    cells = shard.chosen(pipeline.select(names, miles_root=miles_root), given, source)
    for name in shard.changed(cells, given):
        print(
            f"run-matrix: warning: {name} changed since the plan was made (its est_time may be off)",
            file=sys.stderr,
        )
    return [Selected(cell, pipeline.problems(cell)) for cell in cells]


def run(args: argparse.Namespace) -> int:
    if args.miles_root is not None and not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    options = _options(args)
    selected = _selected(args, options.miles_root)
    system_steps.refuse([each.cell for each in selected], args.allow_system_steps)  # before anything runs
    observed = observer([each.cell for each in selected])  # the checkout's execute_train, once for all
    planned = [plan(each, args.trust_checkout, observed) for each in selected]
    # a warning several cells share is printed once, naming the cells
    print_problems(merged((p.cell.id, w) for p in planned for w in p.warnings), sys.stderr)
    if args.dry_run:
        return _dry_run(planned, options, args.format)
    from runner.run.outputs import Outputs, make_log_dir  # checked before any work

    summary = options.caller_env.get("GITHUB_STEP_SUMMARY")
    secrets = {name for each in planned for name in each.cell.conventions.secrets}
    redact = Redactor.of(options.caller_env, secrets)
    outputs = Outputs.checked(args.junit, args.report, Path(summary) if summary else None, args.force, redact)
    make_log_dir(options.log_dir, [job_name(p.cell.id) for p in planned])
    try:
        recorder = open_history(
            args, options
        )  # before anything runs: a store that cannot be opened is exit 3
        return _run(planned, options, outputs, args.format, recorder)
    finally:
        with contextlib.suppress(OSError):
            options.log_dir.rmdir()  # only when empty: the run ended before its first cell


def _run(planned: list[Planned], options: Options, outputs: Outputs, output: str, recorder: Recorder) -> int:
    from rich.console import Console  # only when something runs

    from runner.run import lifecycle
    from runner.run.summary import print_summary
    from runner.run.view import for_console

    console = Console(stderr=True)
    try:
        finished = lifecycle.run(
            planned,
            options,
            outputs,
            for_console(console),
            lambda text: say(console, text, "yellow"),
            recorder,
        )
    finally:
        recorder.store.close()
    print_summary(console, finished.result)
    for warning in _gates_that_cannot_fail(recorder, [p.cell for p in planned]):
        say(console, f"run-matrix: warning [history] {warning}", "yellow")
    if output == "json":
        sys.stdout.write(report.to_json(finished.result))
    for what in finished.left:
        say(console, f"run-matrix: still running: {what} (`run-matrix cleanup` tries again)", "red")
    if finished.failed:
        say(console, f"run-matrix: {finished.failed}", "red")
    return int(finished.exit_code)


def _gates_that_cannot_fail(recorder: Recorder, cells: list[Cell]) -> list[str]:
    """What ``validate --history`` warns of, read after the run (so its values count): a store that
    cannot be read then costs the warnings, never the run's verdict."""
    from runner.results.history.learn import warnings_at

    if recorder.failed:
        return []  # the run said already why the store is out of reach
    try:
        return [warning["message"] for warning in warnings_at(recorder.store.location, cells)]
    except EnvironmentProblem as exc:
        return [f"the gates' history could not be read: {exc}"]


def say(console: Any, text: str, style: str) -> None:
    from rich.text import Text  # Text: paths and ids are not markup

    console.print(Text(text, style=style), soft_wrap=True)  # whole lines: people grep them


def open_history(args: argparse.Namespace, options: Options) -> Recorder:
    try:
        from runner.results.history.location import locate
        from runner.results.history.recorder import Recorder, miles_commit
        from runner.results.history.store import Store
    except ImportError as exc:
        raise EnvironmentProblem(
            f"the history store needs {exc.name}: pip install 'run-matrix[run]'"
        ) from None

    location = locate(args.history, options.caller_env, options.log_dir.parent)
    return Recorder(Store.open(location), miles_commit(options.miles_root), args.no_record)


def plan(selected: Selected, trust: bool = False, observed: Observed | None = None) -> Planned:
    cell = selected.cell
    context, drift = launch_context(cell, os.environ, trust, observed)
    warnings = [*selected.warnings, *drift]
    spec = display_path(cell.path)
    launch = render(cell, context)
    # a cell that reads at launch what an earlier cell wrote runs after it: the spec whole reproduces it
    alone = "" if launch.reads else f" -k {shlex.quote(cell.id)}"
    return Planned(cell, launch, spec, f"run-matrix run {shlex.quote(spec)}{alone}", tuple(warnings))


def _options(args: argparse.Namespace) -> Options:
    run_id = new_run_id()
    return Options(
        miles_root=args.miles_root.resolve() if args.miles_root else None,
        ray_address=args.ray_address,
        log_dir=args.log_dir or Path("run-matrix-logs") / run_id,
        run_id=run_id,
        caller_env=dict(os.environ),
        dry_run=args.dry_run,
        skip_prepare=args.skip_prepare,
        miles_check=args.miles_check,
        miles_python=args.miles_python,
        trust_checkout=args.trust_checkout,
        preflight=args.preflight,
        timeout=args.timeout,
        keep_going=args.keep_going,
        strict=args.strict,
    )


def _dry_run(planned: list[Planned], options: Options, output: str) -> int:
    """The plan, then the run's verdict; the exit code the run would give (``dry_run.decide``)."""
    from runner.run.dry_run import decide
    from runner.run.preview import preview, text

    decision = decide(planned, options)
    previews = [preview(each, options, decision.would[each.cell.id]) for each in planned]
    if output == "json":
        print_json({"cells": previews, **decision.to_json()})
    else:
        sys.stdout.write(text(previews) + decision.text())
    return int(decision.code)
