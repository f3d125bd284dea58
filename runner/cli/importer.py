"""run-matrix import: turn an existing miles test script into a spec (nothing of it is run)."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.cli import import_checkout
from runner.cli.output import (
    add_allow_system_steps,
    add_format,
    add_miles_python,
    add_miles_root,
    add_trust_checkout,
    needs_miles_root,
    print_json,
    print_problems,
)
from runner.errors import Problem, counted, display_path, printable

if TYPE_CHECKING:
    from runner.importer.parses import Parser, Written

MAX_JOBS = 64


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Run a miles test script with miles' command helpers replaced by recorders (nothing is "
        "executed, downloaded or started), capture every execute_train call and the prepare commands before "
        "it, and write a spec that renders exactly that launch: flags grouped by the script's variables, env "
        "vars, train script, GPUs, model type, prepare steps. Variant switches the script reads "
        "(MILES_TEST_USE_FP8_ROLLOUT, MILES_TEST_FEW_GPU, ...) and repeated execute_train calls become "
        "matrix axes. The test's CI registrations become the ci: block, its metric gates expect: bands. "
        "A test registered for CUDA and ROCm is recorded once per platform, each with what that platform's "
        "CI sets (MILES_HARDWARE_PLATFORM=rocm), as one spec with a platform axis: the AMD cells' component "
        "holds only what differs, each difference with its why:. "
        "Given a folder (-o OUT/), every folder below it that holds test_*.py, each into the same place "
        "under OUT/ (tests/e2e/ckpt -> OUT/ckpt): a base spec of what its cases share that validates "
        "(OUT/ckpt/base/ckpt.yaml), one overlay per case (a case whose overlay does not import: written "
        "whole), and each test_amd_*.py as a ROCm overlay of the CUDA case its docstring names. With a "
        "checkout the tests are first recorded together (miles' helpers loaded once per sandbox, each "
        "test in a fork that runs it as it runs alone), then imported side by side (-j), each recording "
        "kept by the hash of what the sandbox showed it, so an unchanged tree imports again without "
        "recording; a bar in a terminal (a line per test otherwise), "
        "then a table: imported, refused by reason, never launching. A refused test costs the others "
        "nothing (exit 4: specs written, some tests refused); OUT gets a marker, OUT/.run-matrix-root, "
        "listing what was written, which --force replaces exactly. The round trip is checked for every "
        "case before anything is written.",
    )
    parser.add_argument(
        "script", type=Path, metavar="TEST.py|DIR", help="the miles test script, or a folder of them"
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE|DIR",
        help="the spec to write (default: ./<script name>.yaml); for a folder, the folder to write",
    )
    parser.add_argument(
        "--base", metavar="SPEC", help="write an overlay of this spec: only what differs from it"
    )
    parser.add_argument(
        "--hardware",
        metavar="NAME",
        help="the hardware profile, and so the one platform imported, in its CI's environment (default:"
        " each platform the test registers for, on the hardware its CI suite names; else the base's);"
        " for a folder, that of its CUDA cases",
    )
    parser.add_argument(
        "--rocm-hardware", metavar="NAME", help="for a folder: the hardware of its test_amd_*.py cases"
    )
    checkout = parser.add_mutually_exclusive_group()
    checkout.add_argument(
        "--without-checkout",
        action="store_true",
        help="import a test that lies in no miles checkout: miles' command helpers are the recorder's"
        f" stand-ins (those of miles {import_checkout.recorder_version()}), its flags are checked against"
        " that version's shipped catalog, and a test that needs more of miles is refused",
    )
    add_miles_root(
        checkout,
        "its own helper module is loaded, its command and network calls replaced by recorders; "
        "MODEL_ARGS come from its scripts/models/; a check the test defines itself, called after a launch, "
        "becomes a verify: entry PATH.py:function; a function of the test's own that prepares with what no "
        "prepare step runs or lists a download, starts code beside the launch, or checks its launches' "
        "output in its own lines becomes a prepare step of kind call (what it returns reaching the launch's "
        "flags as $${prepared:FUNCTION}, as the spec's YAML writes it), a launch.before_submit hook, or a "
        "verify: entry calling it again (launched_by)",
        default="$MILES_ROOT, else the miles tree the test stands in: the first folder at or above it that"
        " holds the miles package beside a .git, or a setup.py or pyproject.toml naming miles; a test in"
        " none is refused without --without-checkout",
    )
    add_miles_python(
        parser,
        "after writing, run the --miles-root checkout's own parse_args() on each written cell's launch in"
        " the sandbox; a launch miles refuses is named at the test's execute_train line with miles' message"
        " and the spec line (the files stay written; exit 2); for a folder, per test in the summary (exit 4)",
    )
    parser.add_argument(
        "--hf-config",
        action="append",
        default=[],
        type=_hf_config,
        metavar="REPO=FILE",
        help="the config.json of a Hub repo the test downloads and reads before it launches (native LoRA's"
        " preflight), where run-matrix ships none and your Hugging Face cache ($HF_HOME/hub, else"
        " ~/.cache/huggingface/hub: models--ORG--NAME/snapshots/<refs/main>/config.json) has none;"
        " repeatable",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace files that exist (a link among them is replaced itself, never what it points "
        "to; without --force a link is refused)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        metavar="N",
        help="for a folder: tests imported side by side, and twice as many sandboxes recording them "
        "together (default: the machine's cores)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="for a folder: record every test again, into a cache of this run's own (default: a recording "
        "is kept in $RUN_MATRIX_CACHE_DIR/recordings, else $XDG_CACHE_HOME/run-matrix/recordings, and "
        "used while nothing it read changed)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        metavar="S",
        help="seconds the script may take in the sandbox, in all its runs together (import runs it again"
        " to record functions of its own as calls; default: 60)",
    )
    add_allow_system_steps(parser)
    add_trust_checkout(parser)
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def _jobs(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of jobs from 1 to {MAX_JOBS}")
    return int(text)


def _hf_config(text: str) -> tuple[str, Path]:
    from runner.errors import UsageError
    from runner.knowledge import checkpoints

    try:
        return checkpoints.parse_given(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def run(args: argparse.Namespace) -> int:
    args.miles_root = import_checkout.chosen(args)
    parser = _miles_parser(args)  # a PY that is no interpreter: exit 3 before anything is imported
    if args.script.is_dir():
        return _folder(args, parser)
    from runner.importer import Request, import_test, parses
    from runner.spec import locate
    from runner.spec.paths import writable

    output = args.output or Path(f"{args.script.stem}.yaml")
    writable(output)  # before the script runs: a path that cannot be written is exit 3 now, not later
    base = locate.find_spec(args.base) if args.base else None
    request = Request(
        args.script,
        output,
        base,
        args.hardware,
        args.miles_root,
        args.force,
        timeout=args.timeout,
        trust_checkout=args.trust_checkout,
        allow_system_steps=args.allow_system_steps,
        hf_configs=tuple(args.hf_config),
    )
    result = import_test(request)
    print_problems(result.warnings, sys.stderr)
    for note in result.notes if args.format != "json" else []:
        print(printable(f"{note.at}: note: {note.message}"), file=sys.stderr)
    refused = _refused([parses.Written(args.script, output, result.launches)], parser)
    if args.format == "json":
        print_json(
            {
                "files": [display_path(path) for path in result.files],
                "cells": result.cells,
                "axes": result.axes,
                "switches": result.switches,
                "notes": [{"message": n.message, "at": str(n.at)} for n in result.notes],
                "warnings": [p.to_json() for p in result.warnings],
                **({"miles": [p.to_json() for p in refused]} if parser else {}),
            }
        )
        return 2 if refused else 0
    print(printable(f"wrote {', '.join(display_path(path) for path in result.files)}"))
    print(
        f"{counted(len(result.cells), 'cell')}: {printable(', '.join(result.cells))};"  # named by the test
        " each renders what the script launches"
    )
    return 2 if refused else 0


def _miles_parser(args: argparse.Namespace) -> Parser | None:
    """``--miles-python`` as a checked interpreter and the checkout it runs, or None."""
    from runner import miles_parser
    from runner.importer import parses

    needs_miles_root(args)
    if args.miles_python is None:
        return None
    python = miles_parser.checked_python(args.miles_python)
    return parses.Parser(python, args.miles_root, args.trust_checkout)


def _refused(written: list[Written], parser: Parser | None) -> list[Problem]:
    """miles' refusals of what was written, printed (none without ``--miles-python``)."""
    from runner.importer import parses

    if parser is None:
        return []
    found = [p for problems in parses.refusals(written, parser).values() for p in problems]
    print_problems(found, sys.stderr)
    if found:
        print(f"run-matrix: miles' parser refuses {len(found)} written launch(es)", file=sys.stderr)
    return found


def _folder(args: argparse.Namespace, parser: Parser | None) -> int:
    from runner.cli import import_progress
    from runner.importer import parses
    from runner.importer.folder import Folder
    from runner.importer.suite import Suite, import_suite, test_folders
    from runner.knowledge import cache
    from runner.spec.paths import writable

    if args.output is None or args.base:
        raise _usage("a folder imports into -o OUT/ (its own base; --base does not apply)")
    writable(args.output / "base" / "x.yaml")
    options = Folder(
        args.script,
        args.output,
        args.hardware,
        args.rocm_hardware,
        args.miles_root,
        args.force,
        args.timeout,
        args.trust_checkout,
        args.allow_system_steps,
        cache=None if args.no_cache else cache.folder("recordings"),
        hf_configs=tuple(args.hf_config),
    )
    total = sum(len(tests) for tests in test_folders(args.script).values())
    with import_progress.Shown(total, args.script) as shown:
        jobs = args.jobs or os.cpu_count() or 1
        result = import_suite(Suite(args.script, options, jobs), shown, shown.phase)
    if result.changed:
        print(
            f"run-matrix: {display_path(args.miles_root)} changed while it was imported: what was recorded"
            " from it is not kept (import it again once it is still)",
            file=sys.stderr,
        )
    by_miles = parses.confirm_suite(result, args.script, args.output, parser) if parser else {}
    files = [path for found in result.folders.values() for path in found.files]
    if args.format == "json":
        print_json(
            {
                "files": [display_path(path) for path in files],
                "removed": [display_path(path) for path in result.removed],
                "tests": import_progress.as_json(result.outcomes, args.script),
                "siblings": {a: c for found in result.folders.values() for a, c in found.siblings.items()},
            }
        )
    else:
        _told(result)
        print_problems([p for problems in by_miles.values() for p in problems], sys.stderr)
        import_progress.summary(result.outcomes, args.script)
        where = f"{counted(len(result.folders), 'folder')} under {display_path(args.output)}"
        print(f"wrote {counted(len(files), 'file')} in {where}")
        if result.removed:
            gone = counted(len(result.removed), "file")
            print(f"removed {gone} the last import wrote and this one did not")
    return _folder_exit(result, bool(files), bool(by_miles))


def _folder_exit(result: Any, wrote: bool, refused_by_miles: bool) -> int:
    """2: nothing written; 4: specs written, and a test refused (by import, or by miles' parser); 0."""
    from runner.cli.import_progress import NEVER_LAUNCHES
    from runner.errors import ExitCode

    refused = refused_by_miles or any(
        outcome != "imported" and NEVER_LAUNCHES not in why for outcome, why in result.outcomes.values()
    )
    if not wrote:
        return ExitCode.INVALID_SPEC
    return ExitCode.SOME_REFUSED if refused else ExitCode.OK


def _told(result: Any) -> None:
    """Each folder that wrote nothing and why; each test left out; each AMD overlay's sibling."""
    from runner.importer.folder import why

    for folder, message in result.failed.items():
        print(f"run-matrix: {printable(f'{folder}/: {message}', lines=True)}", file=sys.stderr)
    for found in result.folders.values():
        for name, problems in found.refused.items():
            print(printable(f"left out {name}: {why(problems)}"), file=sys.stderr)
        for amd, cuda in found.siblings.items():
            print(printable(f"{amd} is an overlay of {cuda}"))


def _usage(message: str) -> Exception:
    from runner.errors import UsageError

    return UsageError(message)
