"""folder: import a whole folder of miles tests as one family — a base and one overlay per case.

    import each CUDA case alone -> base = what every case shares -> each case as an overlay of the
    base -> each ``test_amd_*.py`` as an overlay of the CUDA sibling its docstring names -> write

The base goes to ``OUT/base/<OUT's name>.yaml`` (``base/`` holds specs to extend: ``coverage``
names the family after it); ``test_<case>.py`` becomes ``OUT/<case>.yaml``. An AMD variant's
sibling is the first CUDA case its docstring names ("AMD 4-GPU variant of
test_deepep_fp8_bridge.py"), else the case whose launch differs from its own in the fewest
flags. Every import runs in a hidden folder beside ``OUT``, with its round trip checked, and
nothing lands in ``OUT`` until every case has; a refused case stops the whole import (with
``skip_refused``, it is left out and named in the base's header).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import atomic
from runner.errors import Location, Problem, SpecError, UsageError
from runner.importer import Imported, Request, components_folder, emit, import_test, plan, write
from runner.load import WrittenFloat, load

AMD_PREFIX = "test_amd_"
SIBLING = re.compile(r"\btest_\w+\.py\b")
NOT_SHARED = ("description", "matrix", "extends")  # each case says these itself
MAX_TESTS = 200


@dataclass(frozen=True)
class Folder:
    tests: Path
    output: Path
    hardware: str | None = None  # for the CUDA cases (default: each one's CI suite)
    rocm_hardware: str | None = None  # for the AMD cases (default: each one's CI suite)
    miles_root: Path | None = None
    force: bool = False
    timeout: float = 60.0
    trust_checkout: bool = False
    skip_refused: bool = False
    allow_system_steps: bool = False


@dataclass(frozen=True)
class FolderImported:
    files: list[Path]
    cases: dict[str, Imported]  # test file name -> its import
    siblings: dict[str, str]  # AMD test -> the CUDA test it overlays
    refused: dict[str, list[Problem]]  # test file name -> why (skip_refused only)


def import_folder(request: Folder) -> FolderImported:
    if request.output.is_symlink():  # -o DIR names a folder to fill, never where a link points
        atomic.refuse_link(request.output, request.force, f"-o {request.output}: {atomic.FORCE_HINT}")
        request.output.unlink()
    cuda, amd = _tests(request.tests)
    family = request.output.resolve().name
    final_base = request.output / "base" / f"{family}.yaml"
    write.refuse_existing([final_base, *(request.output / _case(t) for t in [*cuda, *amd])], request.force)
    hidden = Path(tempfile.mkdtemp(prefix=f".{family}.import-", dir=_existing_parent(request.output)))
    try:
        return _import(request, cuda, amd, _Staging(hidden, family, request.output), final_base)
    finally:
        shutil.rmtree(hidden, ignore_errors=True)


@dataclass(frozen=True)
class _Staging:
    """A hidden tree beside OUT laid out as the written one will be, so that every relative path an
    import writes (``extends:``, a component's ``overlay:`` and its file name) is already the final one:
    ``<hidden>/<family>/`` becomes OUT, ``<hidden>/components/`` OUT's tree's components folder (when OUT
    lies in a matrices tree), and ``<hidden>/alone/`` holds the single imports the base is taken from."""

    hidden: Path
    family: str
    output: Path

    def __post_init__(self) -> None:
        self.cases.mkdir(parents=True)
        if self.in_tree:
            (self.hidden / "components").mkdir()

    @property
    def in_tree(self) -> bool:
        return components_folder(self.output / "x.yaml") != self.output.resolve() / "components"

    @property
    def cases(self) -> Path:
        return self.hidden / self.family

    def alone(self, test: Path) -> Path:
        return self.hidden / "alone" / self.family / _case(test)

    def written(self) -> dict[Path, str]:
        """What lands: the family's files under OUT, components in OUT's tree's components folder."""
        found = {self.output / path.relative_to(self.cases): path for path in self.cases.rglob("*.yaml")}
        if self.in_tree:
            final = components_folder(self.output / "x.yaml")
            folder = self.hidden / "components"
            found |= {final / path.relative_to(folder): path for path in folder.rglob("*.yaml")}
        return {to: plan.with_schema_line(path.read_text(encoding="utf-8"), to) for to, path in found.items()}


def _import(
    request: Folder, cuda: list[Path], amd: list[Path], staging: _Staging, final_base: Path
) -> FolderImported:
    refused = _linked(cuda + amd)
    cuda, amd = [t for t in cuda if t.name not in refused], [t for t in amd if t.name not in refused]
    if refused and not request.skip_refused:
        raise _all_refused(request, refused)
    attempt = _attempt(request, refused)
    alone = {t: r for t in cuda if (r := attempt(t, staging.alone(t), None, request.hardware))}
    if not alone:
        raise _all_refused(request, refused)
    base = staging.cases / "base" / final_base.name
    base.parent.mkdir(parents=True)
    base.write_text(_base_text(request, alone, refused), encoding="utf-8")
    cases: dict[str, Imported] = {}
    for test in alone:
        found = attempt(test, staging.cases / _case(test), base, request.hardware)
        if found:
            cases[test.name] = found
    siblings = {}
    for test in amd:
        sibling = _sibling(test, [t for t in alone if t.name in cases], staging, attempt, request)
        if sibling is None:
            continue
        found = attempt(
            test, staging.cases / _case(test), staging.cases / _case(sibling), request.rocm_hardware
        )
        if found:
            cases[test.name], siblings[test.name] = found, sibling.name
    if refused and not request.skip_refused:
        raise _all_refused(request, refused)
    files = staging.written()
    write.write_all(files, request.force)
    return FolderImported(list(files), cases, siblings, refused)


def _attempt(
    request: Folder, refused: dict[str, list[Problem]]
) -> Callable[[Path, Path, Path | None, str | None], Imported | None]:
    def attempt(test: Path, output: Path, base: Path | None, hardware: str | None) -> Imported | None:
        one = Request(
            test,
            output,
            base,
            hardware,
            request.miles_root,
            force=True,
            timeout=request.timeout,
            trust_checkout=request.trust_checkout,
            allow_system_steps=request.allow_system_steps,
        )
        try:
            return import_test(one)
        except SpecError as exc:
            refused[test.name] = list(exc.problems)
            return None

    return attempt


def _tests(folder: Path) -> tuple[list[Path], list[Path]]:
    if not folder.is_dir():
        raise UsageError(f"no folder {folder}")
    tests = sorted(folder.glob("test_*.py"))
    if not tests:
        raise UsageError(f"{folder} holds no test_*.py")
    if len(tests) > MAX_TESTS:
        raise UsageError(f"{folder} holds {len(tests)} tests; import at most {MAX_TESTS} at once")
    amd = [t for t in tests if t.name.startswith(AMD_PREFIX)]
    return [t for t in tests if t not in amd], amd


def _linked(tests: list[Path]) -> dict[str, list[Problem]]:
    """The tests that are links: refused, each with where it points (it may leave the checkout,
    and the sandbox reads only the checkout)."""
    return {
        test.name: [
            Problem(
                "import",
                f"{test.name} is a link (to {os.readlink(test)}): run-matrix imports only the checkout's own "
                "files",
                locations=(Location(test),),
                hint="copy the test into the folder, or leave it out with --skip-refused",
            )
        ]
        for test in tests
        if test.is_symlink()
    }


def _case(test: Path) -> str:
    return f"{test.stem.removeprefix('test_')}.yaml"


def _existing_parent(output: Path) -> Path:
    """Where the staging folder goes: beside OUT, so profiles and components resolve as they will."""
    folder = output.resolve().parent
    if not folder.is_dir():
        raise UsageError(f"{output}: its folder {folder} does not exist")
    return folder


def _sibling(
    test: Path,
    cuda: list[Path],
    staging: _Staging,
    attempt: Callable[[Path, Path, Path | None, str | None], Imported | None],
    request: Folder,
) -> Path | None:
    """The CUDA case an AMD variant overlays: the first its docstring names, else the nearest launch."""
    named = {t.name: t for t in cuda}
    for mention in SIBLING.findall(_docstring(test)):
        if mention in named:
            return named[mention]
    alone = staging.alone(test)
    if not cuda or attempt(test, alone, None, request.rocm_hardware) is None:
        return None
    flags = _flags(load(alone).data)
    return min(cuda, key=lambda t: _distance(flags, _flags(load(staging.alone(t)).data)))


def _docstring(test: Path) -> str:
    try:
        return ast.get_docstring(ast.parse(test.read_text(encoding="utf-8"))) or ""
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return ""


def _flags(data: dict[str, Any]) -> dict[str, Any]:
    return {flag: value for group in (data.get("args") or {}).values() for flag, value in group.items()}


def _distance(a: dict[str, Any], b: dict[str, Any]) -> int:
    return sum(a.get(flag) != b.get(flag) for flag in {*a, *b})


def _base_text(request: Folder, alone: dict[Path, Imported], refused: dict[str, list[Problem]]) -> str:
    shared = _shared([_plain(load(next(iter(r.files))).data) for r in alone.values()])
    header = [
        f"the {request.output.resolve().name} family: what its {len(alone)} CUDA cases share"
        f" (imported by `run-matrix import` from {request.tests.name}/; nothing of it was run)",
        *(f"case: {test.name}" for test in alone),
        *(f"left out: {name}: {why(problems)}" for name, problems in refused.items()),
    ]
    return emit.dump(
        {"description": f"{request.output.resolve().name}: what its cases share", **shared}, None, header
    )


def _shared(specs: list[dict[str, Any]]) -> dict[str, Any]:
    """The keys every spec sets to the same value (maps compared key by key)."""
    first, others = specs[0], specs[1:]
    shared: dict[str, Any] = {}
    for key, value in first.items():
        if key in NOT_SHARED or not all(key in other for other in others):
            continue
        values = [other[key] for other in others]
        if isinstance(value, dict) and all(isinstance(v, dict) for v in values):
            inner = _shared([value, *values])
            if inner:
                shared[key] = inner
        elif all(_same(value, v) for v in values):
            shared[key] = value
    return shared


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b and str(a) == str(b)


def _plain(value: Any) -> Any:
    """Loaded YAML as import writes it: a float keeps its text, ``$${`` is a literal ``${`` again."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, WrittenFloat):
        return emit.Text(value.text)
    if isinstance(value, str):
        return (
            emit.Text(value.replace("$${", "${"))
            if isinstance(value, emit.Text)
            else value.replace("$${", "${")
        )
    return value


def why(problems: list[Problem]) -> str:
    """A refusal in one line: the reason, and the rules behind it (``[L3] args.*.num-gpus-per-node``)."""
    rules = [
        f"[{p.rule}] {p.key}".strip() for p in problems[1:] if p.rule != "import" and p.severity == "error"
    ]
    message = problems[0].message.split(" cannot be imported: it ", 1)[-1].replace(" below)", ")")
    return message + (f": {'; '.join(rules)}" if rules else "")


def _all_refused(request: Folder, refused: dict[str, list[Problem]]) -> SpecError:
    lines = [f"{name}: {why(problems)}" for name, problems in refused.items()]
    problems = [p for found in refused.values() for p in found]
    summary = SpecError.one(
        "import",
        f"{len(refused)} test(s) of {request.tests} cannot be imported; nothing was written:\n  "
        + "\n  ".join(lines),
        at=[Location(request.tests)],
        hint="fix them, or leave them out: --skip-refused writes the others",
    )
    return SpecError([*summary.problems, *problems])
