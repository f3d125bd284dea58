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
from pathlib import Path

from runner.cells.cell import Cell
from runner.errors import Location
from runner.knowledge import ci_platforms, flags, test_imports, versions
from runner.knowledge.checkout import Tree
from runner.memos import remember
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


class Seen:
    """What one selection over many cells reads once, for as long as it runs (the tree is not written
    meanwhile): each path's real path, each hardware profile's files, each spec's import header, each
    test script's local imports."""

    def __init__(self) -> None:
        self.real: dict[Path, str] = {}
        self.hardware: dict[tuple[str, Path], tuple[tuple[str, str], ...]] = {}
        self.tests: dict[Path, str | None] = {}  # spec -> the test script its import header names
        self.imports: dict[str, tuple[str, ...]] = {}  # test script -> its local imports

    def absolute(self, path: Path) -> str:
        if path not in self.real:
            self.real[path] = str(path.resolve())
        return self.real[path]


def of(cell: Cell, tree: Tree | None = None, seen: Seen | None = None) -> Inputs:
    """Every input of ``cell``; ``tree``: the checkout, whose test scripts' local imports count too
    (``seen``: what a selection over many cells has read already)."""
    seen = Seen() if seen is None else seen
    own = [
        *_spec_files(cell, seen),
        *_hardware_files(cell.profile.name, cell.path, seen),
        *_knowledge(cell, seen),
    ]
    return Inputs(tuple(own), tuple(_checkout_files(cell, tree, seen)), cell.spec.miles_version)


def _spec_files(cell: Cell, seen: Seen) -> list[tuple[str, str]]:
    files = cell.composed.files
    index = files.index(cell.path) if cell.path in files else len(files) - 1
    reasons = ["extends"] * index + ["spec"] + ["component"] * (len(files) - index - 1)
    return [(seen.absolute(path), reason) for path, reason in zip(files, reasons, strict=True)]


def _hardware_files(name: str, spec: Path, seen: Seen) -> tuple[tuple[str, str], ...]:
    if (name, spec) not in seen.hardware:
        profile = locate.hardware_profile(name, spec, Location(spec))
        chain = compose(profile).files
        seen.hardware[name, spec] = tuple(
            (seen.absolute(p), "hardware profile" if p == chain[-1] else "hardware family") for p in chain
        )
    return seen.hardware[name, spec]


def _knowledge(cell: Cell, seen: Seen) -> list[tuple[str, str]]:
    return [
        *((seen.absolute(p), "model preset data") for p in cell.preset_source.files if p.suffix == ".yaml"),
        *_shipped(cell.spec.miles_version),
    ]


@remember("shipped", "the knowledge files run-matrix ships for a miles version", maxsize=64)
def _shipped(version: str | None) -> tuple[tuple[str, str], ...]:
    """The knowledge files of miles ``version`` the checks read: the one named, else the newest."""
    chosen = [
        (_choose(flags.shipped(), version), "flag catalog"),
        (flags.SHIPPED / flags.BRANCH_FILE, "flag catalog"),
        (_choose(sorted(locate.CONVENTIONS.glob("*.yaml")), version), "launch conventions"),
        (_choose([v.path for v in ci_platforms.shipped()], version), "miles CI knowledge"),
    ]
    return tuple((str(path.resolve()), why) for path, why in chosen if path is not None)


def _choose(paths: list[Path], version: str | None) -> Path | None:
    found = versions.shipped(paths)
    named = versions.matching(version, found) if version else []
    return named[0].path if len(named) == 1 else (found[-1].path if found else None)


def _checkout_files(cell: Cell, tree: Tree | None, seen: Seen) -> list[tuple[str, str]]:
    spec = cell.spec
    found = [(f"scripts/models/{spec.model.type}{suffix}", "model preset") for suffix in (".py", ".sh")]
    found = found if spec.model.type else []
    found.append((str(spec.launch.script), "launcher"))
    if cell.path not in seen.tests:
        seen.tests[cell.path] = imported_from(cell.path)
    test = seen.tests[cell.path]
    if test is not None:
        found.append((test, "test script"))
        if tree is not None and test not in seen.imports:
            seen.imports[test] = test_imports.local(tree, test)
        found += [(each, f"local import of {test}") for each in seen.imports.get(test, ())]
    found += [(_called_file(c.call), f"verify: {name}") for name, c in spec.verify.items()]
    found += [(_called_file(h.call), "hook") for _, h in spec.launch.started() if not isinstance(h, str)]
    steps = [(name, step.call) for name, step in spec.prepare.items() if isinstance(step, Call)]
    found += [(_called_file(call), f"prepare: {name}") for name, call in steps]
    return found


def _called_file(call: str) -> str:
    """The file a call names: ``PATH.py`` of ``PATH.py:function``, ``a/b.py`` of ``a.b.function``."""
    return calls.file_of(call) if calls.is_own(call) else call.rpartition(".")[0].replace(".", "/") + ".py"


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
