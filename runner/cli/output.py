"""Presentation at the edge: problems and data as text or JSON."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from runner.errors import Problem, UsageError, counted, merged, printable

if TYPE_CHECKING:
    from runner.cells.cell import Cell

SELECT_HELP = (
    "select cells: an id, an id glob (rocm/*) or an expression over axis values (fp8_rollout and not rocm)"
)


def add_format(parser: argparse.ArgumentParser, *choices: str) -> None:
    parser.add_argument(
        "--format", choices=choices, default=choices[0], help=f"output format (default: {choices[0]})"
    )


def seconds(text: str) -> float:
    """A number of seconds: finite and positive (``nan`` would never time out, and is not JSON)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a finite number of seconds > 0")
    return value


def add_trust_checkout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-checkout",
        action="store_true",
        help="run the checkout's code without the sandbox's isolation (only where the machine has no "
        "bubblewrap or namespaces): it then sees your files and the network, as you",
    )


def add_allow_system_steps(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-system-steps",
        action="store_true",
        help="allow prepare steps that touch the system: writes under /etc, /proc, /sys, /boot, /dev "
        "(not /dev/shm), ~/.ssh or /root/.ssh, and removals of a folder that no step creates or downloads "
        "into and no data folder of the spec (an absolute path in vars:) holds; without it they are "
        "refused (exit 2) before anything runs",
    )


def add_miles_root(
    parser: argparse._ActionsContainer,  # a parser, or a group of options of one
    what: str = "its own flags decide which flags are valid",
    default: str = "$MILES_ROOT",
) -> None:
    """``--miles-root DIR`` (default ``$MILES_ROOT``); ``what`` says what the command does with it,
    ``default`` what it is when not given."""
    parser.add_argument(
        "--miles-root",
        type=Path,
        metavar="DIR",
        default=os.environ.get("MILES_ROOT") or None,
        help=f"a miles checkout (default: {default}): {what}",
    )


def add_miles_python(parser: argparse.ArgumentParser, what: str) -> None:
    """``--miles-python PY``: the interpreter that runs the checkout's own parser; ``what`` it does."""
    parser.add_argument(
        "--miles-python",
        type=Path,
        metavar="PY",
        help="an interpreter whose packages hold miles' dependencies (the miles container's, or"
        f" .oracles/miles/bin/python of tools/oracles/miles/build.sh): {what}",
    )


def needs_miles_root(args: argparse.Namespace) -> None:
    """``--miles-python`` runs a checkout's parser: without ``--miles-root`` there is none to run."""
    if args.miles_python is not None and args.miles_root is None:
        raise UsageError(
            "--miles-python needs --miles-root (or $MILES_ROOT): the checkout whose parser it runs"
        )


def checked_miles_root(path: Path | None) -> Path | None:
    if path is not None and not path.is_dir():
        raise UsageError(f"--miles-root {path}: no such directory")
    return path


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=_plain)
    sys.stdout.write("\n")


def _plain(value: Any) -> Any:
    return str(value)  # a float (WrittenFloat too) is JSON's own: this sees paths, dates, enums


def add_overlay_output(parser: argparse.ArgumentParser, output: str, force: str = "") -> None:
    """The options of a command that writes an overlay and validates it (port, upgrade)."""
    parser.add_argument("-o", "--output", type=Path, help=output)
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"overwrite the overlay{force} where it exists (a link is replaced, never its target)",
    )
    add_format(parser, "text", "json")


def outside_note(report: dict[str, Any]) -> list[str]:
    """What a written overlay outside its source's root needs to be validated again."""
    if not report.get("allow_root"):
        return []
    root = report["allow_root"]
    return [f"  it extends a spec outside its own root: validate it with --allow-root {root}"]


def print_validated(
    report: dict[str, Any], problems: list[Problem], form: str, lines: list[str], after: list[str]
) -> int:
    """A written overlay's report: as JSON, or its ``lines``, its problems, the tally and ``after``;
    exit 2 while errors remain."""
    errors = sum(p.severity == "error" for p in problems)
    if form == "json":
        print_json(report)
    else:
        print(printable("\n".join(lines), lines=True))  # they name flags and files of a checkout
        print_problems(problems, sys.stdout)
        tally = f"validated: {counted(errors, 'error')}, {counted(len(problems) - errors, 'warning')}"
        print(printable("\n".join([tally, *after]), lines=True))
    return 2 if errors else 0


def miles_verdicts(cells: Sequence[Cell], args: argparse.Namespace) -> dict[str, list[Problem]]:
    """``--miles-python``'s verdict on ``cells`` (``runner.miles_parser``, validate's own check): the
    problems per cell id; each refusal printed on stderr, one shared by several cells once."""
    from runner import miles_parser  # renders and starts a sandbox: only when asked

    found = miles_parser.check(cells, args.miles_python, args.miles_root, args.trust_checkout)
    refusals = ((cell, p) for cell, problems in found.items() for p in problems if p.severity == "error")
    print_problems(merged(refusals), sys.stderr)
    return found


def print_problems(problems: Iterable[Problem], stream: TextIO) -> None:
    for problem in problems:
        print(printable(str(problem), lines=True), file=stream)  # a message may quote a checkout or a test


CHANGED_HELP = (
    "select only the cells one of whose inputs is among these files (spec, extends:, components, "
    "hardware profile, shipped knowledge; with --miles-root the checkout's model preset, launcher, test "
    "script and its local imports, called files; a core miles file selects every cell)"
)
SINCE_HELP = (
    "select only the cells whose inputs HEAD changed since it forked from REF (a branch, tag or full "
    "commit id) in the spec repository, and with --miles-root in the checkout; git's configuration "
    "runs nothing"
)


def add_changed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--changed", nargs="+", action="extend", metavar="PATH", help=CHANGED_HELP)
    parser.add_argument("--since", metavar="REF", help=SINCE_HELP)
