"""--changed PATH... and --since REF: the options every selecting command shares (one selection:
``runner.changed``)."""

from __future__ import annotations

import argparse

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
