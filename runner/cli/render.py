"""run-matrix render: the exact commands of a launch, as shell or JSON; nothing is run."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from runner import atomic, pipeline
from runner.cells.cell import Cell
from runner.cli.output import (
    SELECT_HELP,
    add_format,
    add_miles_python,
    add_miles_root,
    add_trust_checkout,
    miles_verdicts,
    needs_miles_root,
    print_problems,
)
from runner.errors import Problem, UsageError, display_path, merged
from runner.knowledge import launchers
from runner.launch.checkout import launch_context, observer
from runner.launch.render import Launch, render
from runner.launch.script import to_shell
from runner.redact import Redactor


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    scripts = "|".join(launchers.shipped().scripts)
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Render each spec into the launch miles expects: prepare steps, the Ray head, the "
        f"services of launch.before_submit and the job submission (python3 <miles>/{scripts} "
        "MODEL_ARGS... flags). Each prepare "
        "step is guarded ([ -e DIR ] || hf download ...), and the config.json patch is a Python program "
        "in the script, so the node needs no run-matrix.",
    )
    parser.add_argument("specs", nargs="+", metavar="SPEC|CELL", help="spec file or folder, or a cell id")
    parser.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    parser.add_argument(
        "-o",
        "--output-dir",
        type=Path,
        metavar="DIR",
        help="write one file per cell into DIR (an executable <cell>.sh, or <cell>.json), named after the "
        "cell id, each written whole or not at all (a temp file renamed over it); without it one cell's "
        "script (or every cell's JSON) goes to stdout",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="-o DIR is a link: replace the link with a folder (never write where it points); a link "
        "inside DIR is always refused (exit 3)",
    )
    add_format(parser, "shell", "json")
    add_miles_root(
        parser,
        "its scripts/models/<type>.py or .sh gives MODEL_ARGS (expanded in the sandbox; a difference from "
        "the shipped preset is a model-args warning), its own execute_train the runtime env (observed in "
        "the sandbox; a difference from the shipped conventions is a launch warning) and its own flags "
        "decide which flags are valid",
    )
    add_miles_python(
        parser,
        "before anything is written or printed, run the --miles-root checkout's own parse_args() on each"
        " cell's launch in the sandbox; a launch miles refuses stops render (exit 2, each refusal named)",
    )
    parser.add_argument(
        "--show-programs",
        action="store_true",
        help="print the text of run-matrix's programs a script holds (the config.json patch) in the script "
        "on stdout, so that it runs piped or redirected; without it each is named in one comment and the "
        "launch comes first; -o DIR always writes them",
    )
    add_trust_checkout(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.miles_root is not None and not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    needs_miles_root(args)
    cells = pipeline.select(args.specs, args.k, miles_root=args.miles_root)
    if args.miles_python is not None and _refused(cells, args):
        return 2
    launches = []
    observed = observer(cells)  # the checkout's execute_train, observed once for every cell
    for cell in cells:
        problems = pipeline.problems(cell)
        context, drift = launch_context(cell, os.environ, args.trust_checkout, observed)
        problems += drift
        launches.append((render(cell, context), problems, cell.path))
    # a problem several cells share is printed once, naming the cells
    print_problems(merged((launch.id, p) for launch, problems, _ in launches for p in problems), sys.stderr)
    if args.output_dir is not None:
        for path in write_files(args.output_dir, launches, args.format, args.force):
            print(f"run-matrix: wrote {display_path(path)}", file=sys.stderr)
    elif args.format == "json":
        text = json.dumps({"cells": [_json(launch, problems) for launch, problems, _ in launches]}, indent=2)
        print(Redactor.of(os.environ)(text))
    else:
        launch, _, path = _one_script(launches, args)
        sys.stdout.write(Redactor.of(os.environ)(to_shell(launch, display_path(path), args.show_programs)))
    return 0


def _refused(cells: list[Cell], args: argparse.Namespace) -> bool:
    """miles' own parser on every cell: its refusals printed, True when there is any."""
    found = miles_verdicts(cells, args)
    refusals = sum(p.severity == "error" for problems in found.values() for p in problems)
    if refusals:
        print(f"run-matrix: miles' parser refuses {refusals} launch(es): nothing written", file=sys.stderr)
    return bool(refusals)


def _one_script(
    launches: list[tuple[Launch, list[Problem], Path]], args: argparse.Namespace
) -> tuple[Launch, list[Problem], Path]:
    """What stdout gets: a shell script runs one cell. One spec named alone gives its default cell
    (as explain and diff do) and says which cells it left out; any other choice of several is an error."""
    if len(launches) == 1:
        return launches[0]
    ids = [launch.id for launch, _, _ in launches]
    default = [each for each in launches if "[" not in each[0].id]
    one_spec = len(args.specs) == 1 and len({path for _, _, path in launches}) == 1
    if args.k is None and one_spec and len(default) == 1:
        others = ", ".join(i for i in ids if i != default[0][0].id)
        print(
            f"run-matrix: {args.specs[0]} has {len(ids)} cells; this is its default cell {default[0][0].id} "
            f"(-o DIR writes every cell's script; also {others})",
            file=sys.stderr,
        )
        return default[0]
    raise UsageError(
        f"{len(ids)} cells selected, and a shell script runs one: use -o DIR for one script per cell, "
        "or -k to pick a cell (" + ", ".join(ids) + ")"
    )


def _json(launch: Launch, problems: list[Problem]) -> dict[str, Any]:
    return {**launch.to_json(), "warnings": [p.to_json() for p in problems]}


def file_name(cell_id: str) -> str:
    """``rocm/glm5-async[fp8_rollout=true]`` -> ``rocm-glm5-async-fp8_rollout=true``: one path segment."""
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "-", cell_id).strip("-.") or "cell"


def write_files(
    folder: Path, launches: list[tuple[Launch, list[Problem], Path]], form: str, force: bool = False
) -> list[Path]:
    names = [file_name(launch.id) + (".json" if form == "json" else ".sh") for launch, _, _ in launches]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise UsageError(f"-o {folder}: cell ids that map to one file name: {', '.join(clashes)}")
    output_folder(folder, force)
    redact = Redactor.of(os.environ)  # a value of the caller's env a script would carry: its reference
    files = {
        folder / name: redact(
            json.dumps(_json(launch, problems), indent=2) + "\n"
            if form == "json"
            else to_shell(launch, display_path(path))
        )
        for name, (launch, problems, path) in zip(names, launches, strict=True)
    }
    atomic.write_all(files, mode=0o644 if form == "json" else 0o755)  # a link in DIR is refused
    return list(files)


def output_folder(folder: Path, force: bool) -> None:
    """``-o DIR`` is a folder or not there (``write_all`` makes it, and removes it when it fails);
    a link there is refused, or (``force``) removed."""
    if folder.is_symlink():
        atomic.refuse_link(folder, force, f"-o {folder}: {atomic.FORCE_HINT}")
        folder.unlink()
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"-o {folder}: not a directory")
