#!/usr/bin/env python3
"""Compare the checks a launch conventions file offers a spec's ``verify:`` with the functions of a
real miles checkout: each must exist, with exactly the parameters listed (required: no default).

  python tools/launch/check_verifiers.py MILES_CHECKOUT [VERSION]

VERSION is a shipped miles version (default: the newest). The checkout's modules are read as text
(``ast``), never imported. Exit 1 on any difference.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from runner.knowledge import bundled, own_checks
from schemas.conventions import Verifier


def signature(checkout: Path, call: str) -> Verifier | str:
    """The function's parameters as the conventions list them, or why there is none to read."""
    module, _, name = call.rpartition(".")
    path = checkout.joinpath(*module.split(".")).with_suffix(".py")
    if not path.is_file():
        return f"no module {path.relative_to(checkout)}"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if not found:
        return f"{path.relative_to(checkout)} defines no function {name}"
    required, optional = own_checks.parameters(found[0])
    return Verifier(required=required, optional=optional)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("version", nargs="?", default=None)
    args = parser.parse_args()
    conventions = bundled.conventions(args.version)
    wrong = 0
    for call, listed in conventions.verifiers.items():
        found = signature(args.checkout, call)
        same = found == listed
        wrong += not same
        shown = found if isinstance(found, str) else f"required {found.required}, optional {found.optional}"
        print(f"{'ok  ' if same else 'DIFF'} {call}: {shown}")
    commit = (conventions.miles_commit or "?")[:8]
    print(f"{len(conventions.verifiers)} checks of miles {commit}; {wrong} differ from {args.checkout}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
