"""The command line: one small module per subcommand; errors become exit codes here only."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from runner.cli.output import print_problems
from runner.errors import ExitCode, RunMatrixError, SpecError, printable

# name -> (its module under runner.cli, the one line `run-matrix --help` shows). A command's module
# is imported only when that command runs: `validate` never pays for Ray, rich or the run stack.
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("cells", "list the cells of specs and folders (default: matrices/)"),
    "validate": ("validate", "check specs (files or folders) and report every problem"),
    "render": ("render", "print the exact launch commands (nothing is run)"),
    "explain": ("explain", "show a resolved value and where it came from"),
    "diff": ("diff", "compare two specs: keys, launch and GPU layout, with sources and reasons"),
    "hardware": ("hardware", "list the hardware profiles, or show one"),
    "port": ("port", "write an overlay that ports a spec to other hardware"),
    "upgrade": ("upgrade", "write an overlay that moves a spec to another miles version"),
    "coverage": ("coverage", "which test runs on which hardware: runs, skipped, missing"),
    "schema": (
        "schema",
        "print the JSON Schema of a spec, hardware profile, model preset, runners.yaml or CI plan",
    ),
    "run": ("run", "run cells on Ray: prepare, launch, watch, check metrics, report"),
    "bisect": ("bisect", "find the first miles commit that breaks a cell, with retries against flaky runs"),
    "cleanup": ("cleanup", "stop what runs that died left running (Ray heads, prepare steps, jobs)"),
    "import": ("importer", "write a spec from an existing miles test script (nothing of it is run)"),
    "presets": ("presets", "list the model presets, or show one's MODEL_ARGS"),
    "history": (
        "history",
        "recorded runs of cells: a table, a plot of one metric with its corridor; untrust a run",
    ),
    "flags": (
        "flags",
        "the flag catalogs: show a miles version's flags, or rebuild a catalog from sources",
    ),
    "report": (
        "report",
        "write the results site: parity, each cell's metrics and runs, streaks, flaky cells, GPU budget",
    ),
    "ci": ("ci", "plan a CI: cells onto runner classes, balanced by est_time (a GitHub Actions matrix)"),
}

DESCRIPTION = """\
Declarative test matrices for miles end-to-end tests: a base spec, hardware
overlays, validation before any GPU is touched, and the exact launch.

`run-matrix SPEC ...` is short for `run-matrix run SPEC ...`. Spec paths are looked
up relative to the current directory, then under matrices/; a cell id
('rocm/glm5-async[fp8_rollout=true]') names one cell of a matrix.
Exit codes: 0 ok, 1 a run failed, 2 the spec is invalid, 3 the environment cannot
run it, 4 an import wrote specs and refused some tests, 5 cells were selected and
none ran (each skipped), 130 interrupted.
"""


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's arguments, or (``only``) that command's alone and the others' one-line help."""
    top = argparse.ArgumentParser(
        prog="run-matrix", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    subcommands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, summary) in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"runner.cli.{module}").add_parser(subcommands, name, summary)
            _add_allow_root(subcommands.choices[name])
        else:
            subcommands.add_parser(name, help=summary)
    return top


ALLOW_ROOTS = "RUN_MATRIX_ALLOW_ROOTS"  # runner.spec.repository reads it (not imported here: start-up)


def _add_allow_root(command: argparse.ArgumentParser) -> None:
    """``--allow-root DIR``, every command's: a folder outside a spec's root that it may compose
    files from (rule G14)."""
    command.add_argument(
        "--allow-root",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="let a spec compose files (extends:, a matrix's overlays) from DIR too, outside its root;"
        f" repeatable; adds to ${ALLOW_ROOTS}",
    )


@contextmanager
def _allowed_roots(folders: Sequence[Path]) -> Iterator[None]:
    """``--allow-root``'s folders allowed while the command runs (the spec reader imported only then)."""
    if not folders:
        yield
        return
    from runner.spec import repository

    with repository.allowing(folders):
        yield


def parse(top: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """The command line, its options and positionals in any order (`explain SPEC --format json KEY`).

    argparse's own parse_args ends a positional list at the first option, so a positional after an
    option's value is refused; parse_intermixed_args takes them in any order but cannot descend into
    subcommands, so the subcommand words are walked here and the command's own parser reads the rest.
    """
    namespace = argparse.Namespace()
    parser, rest, above = top, list(argv), []
    while (chooser := _subcommands(parser)) is not None:
        if not rest or rest[0] not in chooser.choices:  # -h, or no such command: argparse's own words
            return parser.parse_args(rest, namespace)
        setattr(namespace, chooser.dest, rest[0])
        above.append(parser)
        parser, rest = chooser.choices[rest[0]], rest[1:]
    parsed = parser.parse_intermixed_args(rest, namespace)
    for outer in above:  # a command's own defaults (`presets`' handler), where its action sets none
        for name, value in outer._defaults.items():
            if not hasattr(parsed, name):
                setattr(parsed, name, value)
    return parsed


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return found[0] if found else None


def main(argv: Sequence[str] | None = None, *, fresh_process: bool = False) -> int:
    """Run one command; ``fresh_process``: this process runs only it (the console script), so no
    memo of an earlier command hides what it reads from ``validate``'s cache records."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        argv.insert(0, "run")  # `run-matrix SPEC ...` is `run-matrix run SPEC ...`
    args = parse(parser(only=argv[0] if argv else None), argv)
    args.fresh_process = fresh_process
    try:
        with _allowed_roots(getattr(args, "allow_root", [])):
            return int(args.handler(args))
    except SpecError as exc:
        print_problems(exc.problems, sys.stderr)
        return exc.exit_code
    except RunMatrixError as exc:
        print(f"run-matrix: {printable(str(exc), lines=True)}", file=sys.stderr)  # it may quote a checkout
        return exc.exit_code
    except KeyboardInterrupt:
        print("run-matrix: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # `run-matrix ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK


# The console script runs one command in a process of its own, which builds a great many objects
# that live until it ends (pydantic's schemas, the parsed specs) and few cycles. CPython's collector,
# left as it is, walks them again every 700 allocations while the command runs, and all of them once
# more while the interpreter exits: together about a sixth of a cold `validate`
# (tools/bench_startup.py). The command collects rarely (mypy sets the same thresholds for its
# builds, for the same reason), and what is left when it has ended is frozen: the exit frees it
# without walking it. Exit handlers still run; only the collector passes over those objects.
GC_THRESHOLDS = (200_000, 30, 30)


def console() -> None:
    gc.set_threshold(*GC_THRESHOLDS)
    code = main(fresh_process=True)
    gc.freeze()
    sys.exit(code)
