"""import_checkout: the miles checkout an import reads, and the line that says which.

``--miles-root`` (or ``$MILES_ROOT``) names it; else it is the miles tree the test stands in
(``knowledge.checkout.enclosing``); ``--without-checkout`` imports against the recorder's stand-ins
alone. A test in no tree, with none named, is refused once, saying what to do.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from runner.cli.output import checked_miles_root, needs_miles_root
from runner.errors import display_path, printable


def recorder_version() -> str:
    from runner.importer.capture import RECORDER_MILES_VERSION

    return RECORDER_MILES_VERSION[:8]


def chosen(args: argparse.Namespace) -> Path | None:
    """The miles checkout the import reads — ``--miles-root``, else the one the test stands in — said on
    stderr with its commit and flag catalog; None with ``--without-checkout``."""
    from runner.errors import EnvironmentProblem
    from runner.knowledge import checkout

    if args.without_checkout:
        return None
    if args.miles_root is not None:
        from_env = os.environ.get("MILES_ROOT") and Path(os.environ["MILES_ROOT"]) == args.miles_root
        root: Path = args.miles_root
        checked_miles_root(root)
        how = "$MILES_ROOT" if from_env else "--miles-root"
    elif (found := checkout.enclosing(args.script)) is not None:
        root, how = found, f"the one {display_path(args.script)} stands in; --miles-root DIR names another"
    else:
        needs_miles_root(args)  # --miles-python runs a checkout's parser: none is named, none found
        raise EnvironmentProblem(
            f"{display_path(args.script)} lies in no miles checkout (no folder at or above it holds the"
            " miles package beside a .git, or a setup.py or pyproject.toml naming miles): name one with"
            " --miles-root DIR (or $MILES_ROOT), or import with the recorder's stand-ins for miles"
            f" {recorder_version()} with --without-checkout"
        )
    said = f"run-matrix: importing with the miles checkout {root} ({how}): {_described(root)}"
    print(printable(said), file=sys.stderr)  # a path, a catalog's reason: the checkout's words
    return root


def _described(root: Path) -> str:
    """The checkout's commit, and which flags its launches are checked against."""
    from runner.errors import Location
    from runner.knowledge import checkout, flags

    commit = checkout.head_commit(root)
    said = f"commit {commit[:12]}" if commit else "commit unknown: not a git checkout"
    choice = flags.choose(None, root, Location(root))
    if choice.checkout is None:
        newest = choice.catalog.origin
        return f"{said}; flags: the newest shipped catalog ({newest}): it has no miles/utils/arguments.py"
    return f"{said}; flags: {choice.reason.removeprefix(f'the checkout at {choice.checkout}: ')}"
