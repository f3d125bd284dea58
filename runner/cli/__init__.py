"""The command line: one small module per subcommand; errors become exit codes here only."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from runner.cli import (
    cells,
    ci,
    cleanup,
    coverage,
    diff,
    explain,
    flags,
    hardware,
    history,
    importer,
    port,
    presets,
    render,
    run,
    schema,
    validate,
)
from runner.cli.output import print_problems
from runner.errors import ExitCode, RunMatrixError, SpecError

COMMANDS = {
    "list": cells,
    "validate": validate,
    "render": render,
    "explain": explain,
    "diff": diff,
    "hardware": hardware,
    "port": port,
    "coverage": coverage,
    "schema": schema,
    "run": run,
    "cleanup": cleanup,
    "import": importer,
    "presets": presets,
    "history": history,
    "flags": flags,
    "ci": ci,
}

DESCRIPTION = """\
Declarative test matrices for miles end-to-end tests: a base spec, hardware
overlays, validation before any GPU is touched, and the exact launch.

`run-matrix SPEC ...` is short for `run-matrix run SPEC ...`. Spec paths are looked
up relative to the current directory, then under matrices/; a cell id
('rocm/glm5-async[fp8_rollout=true]') names one cell of a matrix.
Exit codes: 0 ok, 1 a run failed, 2 the spec is invalid, 3 the environment cannot
run it, 130 interrupted.
"""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="run-matrix", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    subcommands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        module.add_parser(subcommands, name)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        argv.insert(0, "run")  # `run-matrix SPEC ...` is `run-matrix run SPEC ...`
    args = parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except SpecError as exc:
        print_problems(exc.problems, sys.stderr)
        return exc.exit_code
    except RunMatrixError as exc:
        print(f"run-matrix: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("run-matrix: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # `run-matrix ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK


def console() -> None:
    sys.exit(main())
