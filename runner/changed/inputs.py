"""A cell's inputs: the files whose change may change what the cell does, each with its reason.

Two kinds. **Own files** (absolute paths): the spec and its ``extends:`` chain, the components its
matrix adjusts apply, its hardware profile and the family that profile extends, and the knowledge
run-matrix ships for the cell's miles version (model preset data, flag catalog, launch conventions,
miles' CI). **Checkout files** (relative to a miles checkout's root): the model preset
(``scripts/models/<type>.py``), the launcher (``launch.script``), the test script the spec was
imported from (its header's ``${MILES_ROOT}/tests/...``) and that test's local imports (with a
checkout), and the files its ``verify:``, hooks and prepare ``call`` steps name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from runner.cells.cell import Cell
from runner.errors import Location
from runner.knowledge import ci_platforms, flags, test_imports, versions
from runner.knowledge.checkout import Tree
from runner.spec import locate
from runner.spec.compose import compose
from schemas import calls
from schemas.prepare import Call

HEADER_LINES = 12  # the import's header: the schema line, then "imported ... from ${MILES_ROOT}/..."
IMPORTED_FROM = re.compile(r"^# imported .* from \$\{MILES_ROOT\}/(\S+\.py)\b")


@dataclass(frozen=True)
class Inputs:
    """What one cell reads: own files (absolute) and checkout files (relative), each with its reason."""

    own: tuple[tuple[str, str], ...]
    checkout: tuple[tuple[str, str], ...]
    version: str | None  # the miles version the cell targets: its core list applies


def of(cell: Cell, tree: Tree | None = None, imports: dict[str, tuple[str, ...]] | None = None) -> Inputs:
    """Every input of ``cell``; ``tree``: the checkout, whose test scripts' local imports count too
    (``imports``: those already read, by test script, for a selection over many cells)."""
    own = [*_spec_files(cell), *_hardware_files(cell.profile.name, cell.path), *_knowledge(cell)]
    imports = {} if imports is None else imports
    return Inputs(tuple(own), tuple(_checkout_files(cell, tree, imports)), cell.spec.miles_version)


def _spec_files(cell: Cell) -> list[tuple[str, str]]:
    files = cell.composed.files
    index = files.index(cell.path) if cell.path in files else len(files) - 1
    reasons = ["extends"] * index + ["spec"] + ["component"] * (len(files) - index - 1)
    return [(_absolute(path), reason) for path, reason in zip(files, reasons, strict=True)]


@lru_cache(maxsize=256)
def _hardware_files(name: str, spec: Path) -> tuple[tuple[str, str], ...]:
    profile = locate.hardware_profile(name, spec, Location(spec))
    chain = compose(profile).files
    return tuple((_absolute(p), "hardware profile" if p == chain[-1] else "hardware family") for p in chain)


def _knowledge(cell: Cell) -> list[tuple[str, str]]:
    return [
        *((_absolute(p), "model preset data") for p in cell.preset_source.files if p.suffix == ".yaml"),
        *_shipped(cell.spec.miles_version),
    ]


@lru_cache(maxsize=64)
def _shipped(version: str | None) -> tuple[tuple[str, str], ...]:
    """The knowledge files of miles ``version`` the checks read: the one named, else the newest."""
    chosen = [
        (_choose(flags.shipped(), version), "flag catalog"),
        (flags.SHIPPED / flags.BRANCH_FILE, "flag catalog"),
        (_choose(sorted(locate.CONVENTIONS.glob("*.yaml")), version), "launch conventions"),
        (_choose([v.path for v in ci_platforms.shipped()], version), "miles CI knowledge"),
    ]
    return tuple((_absolute(path), why) for path, why in chosen if path is not None)


def _choose(paths: list[Path], version: str | None) -> Path | None:
    found = versions.shipped(paths)
    named = versions.matching(version, found) if version else []
    return named[0].path if len(named) == 1 else (found[-1].path if found else None)


def _checkout_files(
    cell: Cell, tree: Tree | None, imports: dict[str, tuple[str, ...]]
) -> list[tuple[str, str]]:
    spec = cell.spec
    found = [(f"scripts/models/{spec.model.type}{suffix}", "model preset") for suffix in (".py", ".sh")]
    found = found if spec.model.type else []
    found.append((str(spec.launch.script), "launcher"))
    test = imported_from(cell.path)
    if test is not None:
        found.append((test, "test script"))
        if tree is not None and test not in imports:
            imports[test] = test_imports.local(tree, test)
        found += [(each, f"local import of {test}") for each in imports.get(test, ())]
    found += [(_called_file(c.call), f"verify: {name}") for name, c in spec.verify.items()]
    found += [(_called_file(h.call), "hook") for _, h in spec.launch.started() if not isinstance(h, str)]
    steps = [(name, step.call) for name, step in spec.prepare.items() if isinstance(step, Call)]
    found += [(_called_file(call), f"prepare: {name}") for name, call in steps]
    return found


def _called_file(call: str) -> str:
    """The file a call names: ``PATH.py`` of ``PATH.py:function``, ``a/b.py`` of ``a.b.function``."""
    return calls.file_of(call) if calls.is_own(call) else call.rpartition(".")[0].replace(".", "/") + ".py"


@lru_cache(maxsize=1024)
def imported_from(spec: Path) -> str | None:
    """The test script (relative to the checkout) the spec's import header names, if any."""
    try:
        with spec.open(encoding="utf-8", errors="replace") as file:
            lines = [file.readline(4096) for _ in range(HEADER_LINES)]
    except OSError:
        return None
    for line in lines:
        found = IMPORTED_FROM.match(line)
        if found and ".." not in found.group(1).split("/"):
            return found.group(1)
    return None


@lru_cache(maxsize=4096)
def _absolute(path: Path) -> str:
    return str(path.resolve())
