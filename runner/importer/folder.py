"""folder: import a whole folder of miles tests as one family — a base and one overlay per case.

    import each CUDA case alone -> base = what every case shares that validates -> each case as an
    overlay of the base (else whole) -> each ``test_amd_*.py`` as an overlay of the CUDA sibling its
    docstring names (else whole) -> write

The base goes to ``OUT/base/<OUT's name>.yaml`` (``base/`` holds specs to extend: ``coverage``
names the family after it); ``test_<case>.py`` becomes ``OUT/<case>.yaml``. A key goes to the base
only with everything its schema requires (``family_base.py``); a case whose overlay does not import
is written whole, and the base's header says why. An AMD variant's sibling is the first CUDA case
its docstring names, else the case whose launch differs from its own in the fewest flags
(``siblings.py``). Each step's imports go through ``Folder.batch`` (``batch.py``; ``suite.py`` runs
them side by side). Every import runs in a hidden folder beside ``OUT``, with its round trip checked,
and nothing lands in ``OUT`` until every case has; a refused case stops the whole import (with
``skip_refused``, it is left out and named in the base's header). A test file that is a link is
refused, never followed.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from runner import atomic
from runner.errors import Location, Problem, SpecError, UsageError, counted
from runner.importer import Imported, components_folder, family_base, plan
from runner.importer.batch import Folder as Folder  # a folder import's request, named here too
from runner.importer.batch import Job, runner
from runner.importer.siblings import AMD_PREFIX, named_sibling, nearest
from runner.knowledge import checkout
from runner.spec.load import load

MAX_TESTS = 200
MAX_WHY = 300  # characters of a refusal's reason in one line


@dataclass(frozen=True)
class FolderImported:
    files: list[Path]
    cases: dict[str, Imported]  # test file name -> its import
    siblings: dict[str, str]  # AMD test -> the CUDA test it overlays
    refused: dict[str, list[Problem]]  # test file name -> why (skip_refused only)
    whole: dict[str, str] = field(default_factory=dict)  # a case written whole -> why not an overlay


def import_folder(request: Folder) -> FolderImported:
    if request.output.is_symlink():  # -o DIR names a folder to fill, never where a link points
        atomic.refuse_link(request.output, request.force, f"-o {request.output}: {atomic.FORCE_HINT}")
        request.output.unlink()
    cuda, amd, links = _tests(request.tests)
    family = request.output.resolve().name
    final_base = request.output / "base" / f"{family}.yaml"
    atomic.refuse_existing(
        [final_base, *(request.output / case_file(t) for t in [*cuda, *amd])],
        request.force,
        atomic.GENERATED_HINT,
    )
    hidden = Path(tempfile.mkdtemp(prefix=f".{family}.import-", dir=_existing_parent(request.output)))
    try:
        return _import(request, cuda, amd, links, _Staging(hidden, family, request.output), final_base)
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
        return self.hidden / "alone" / self.family / case_file(test)

    def written(self) -> dict[Path, str]:
        """What lands: the family's files under OUT, components in OUT's tree's components folder."""
        found = {self.output / path.relative_to(self.cases): path for path in self.cases.rglob("*.yaml")}
        if self.in_tree:
            final = components_folder(self.output / "x.yaml")
            folder = self.hidden / "components"
            found |= {final / path.relative_to(folder): path for path in folder.rglob("*.yaml")}
        return {to: plan.with_schema_line(path.read_text(encoding="utf-8"), to) for to, path in found.items()}


def _import(
    request: Folder, cuda: list[Path], amd: list[Path], links: list[Path], staging: _Staging, final_base: Path
) -> FolderImported:
    refused = {link.name: [_link(link)] for link in links}
    for link in links:
        _report(request, link, "refused", why(refused[link.name]))
    run = runner(request, refused)
    found = run([(t, staging.alone(t), None, request.hardware) for t in cuda])
    alone = {t: r for t, r in zip(cuda, found, strict=True) if r is not None}
    for test in cuda:
        if test not in alone:
            _report(request, test, "refused", why(refused[test.name]))
    if not alone and not amd:
        raise _all_refused(request, refused)
    base_path = staging.cases / "base" / final_base.name
    base_path.parent.mkdir(parents=True)
    shared = _base(request, alone, base_path) if alone else None
    cases, whole = _cases(request, list(alone), staging, run, refused, base_path if shared else None)
    siblings = _amd(request, amd, [t for t in alone if t.name in cases], staging, run, refused, cases, whole)
    if refused and not request.skip_refused:
        raise _all_refused(request, refused)
    extending = [t for t in alone if t.name in cases and t.name not in whole]
    if shared is not None and extending:
        header = _header(request, extending, whole, refused)
        base_path.write_text(family_base.text(shared, header), encoding="utf-8")
    elif shared is not None:  # every case was written whole: a base nothing extends is not written
        base_path.unlink()
    files = staging.written()
    atomic.write_generated(files, request.force)
    return FolderImported(list(files), cases, siblings, refused, whole)


def _base(request: Folder, alone: dict[Path, Imported], path: Path) -> dict[str, Any] | None:
    """What the CUDA cases share that validates, written at ``path`` (None: no base, each case whole)."""
    family = request.output.resolve().name
    specs = [load(next(iter(r.files))).data for r in alone.values()]
    shared = family_base.extract(specs, f"{family}: what its cases share", path)
    if shared is not None:
        path.write_text(family_base.text(shared, _header(request, list(alone), {}, {})), encoding="utf-8")
    return shared


def _cases(
    request: Folder,
    cuda: list[Path],
    staging: _Staging,
    run: Callable[[list[Job]], list[Imported | None]],
    refused: dict[str, list[Problem]],
    base: Path | None,
) -> tuple[dict[str, Imported], dict[str, str]]:
    """Each CUDA case as an overlay of the base; one whose overlay does not import, written whole."""
    jobs: list[Job] = [(t, staging.cases / case_file(t), base, request.hardware) for t in cuda]
    found = dict(zip(cuda, run(jobs), strict=True))
    cases = {t.name: r for t, r in found.items() if r is not None}
    whole = _whole(request, [t for t in cuda if found[t] is None], staging, run, refused, cases)
    for test in cuda:
        if test.name in cases and test.name not in whole:
            _report(request, test, "imported", "")
    return cases, whole


def _whole(
    request: Folder,
    tests: list[Path],
    staging: _Staging,
    run: Callable[[list[Job]], list[Imported | None]],
    refused: dict[str, list[Problem]],
    cases: dict[str, Imported],
    hardware: str | None = None,
) -> dict[str, str]:
    """``tests`` imported again, each whole (no base): test name -> why its overlay was not written."""
    reasons = {t.name: why(refused[t.name]) for t in tests if t.name in refused}
    hardware = hardware or request.hardware
    whole: dict[str, str] = {}
    jobs: list[Job] = [(t, staging.cases / case_file(t), None, hardware) for t in tests]
    for test, found in zip(tests, run(jobs), strict=True):
        if found is None:
            _report(request, test, "refused", why(refused[test.name]))
            continue
        cases[test.name] = found
        whole[test.name] = reasons.get(test.name, "no case to overlay")
        _report(request, test, "imported", f"written whole: {whole[test.name]}")
    return whole


def _amd(
    request: Folder,
    amd: list[Path],
    cuda: list[Path],
    staging: _Staging,
    run: Callable[[list[Job]], list[Imported | None]],
    refused: dict[str, list[Problem]],
    cases: dict[str, Imported],
    whole: dict[str, str],
) -> dict[str, str]:
    """Each AMD variant as an overlay of its CUDA sibling; one with none, or whose overlay does not
    import, written whole."""
    named = {t: named_sibling(t, cuda) for t in amd}
    unnamed = [t for t in amd if named[t] is None] if cuda else []
    jobs: list[Job] = [(t, staging.alone(t), None, request.rocm_hardware) for t in unnamed]
    alone = dict(zip(unnamed, run(jobs), strict=True))
    for test, found in alone.items():
        if found is None:  # imported whole it would be refused alike
            _report(request, test, "refused", why(refused[test.name]))
        else:
            named[test] = nearest(staging.alone(test), cuda, staging.alone)
    pairs = [(t, s) for t, s in named.items() if s is not None]
    jobs = [
        (t, staging.cases / case_file(t), staging.cases / case_file(s), request.rocm_hardware)
        for t, s in pairs
    ]
    siblings = {}
    for (test, sibling), found in zip(pairs, run(jobs), strict=True):
        if found is not None:
            cases[test.name], siblings[test.name] = found, sibling.name
            _report(request, test, "imported", f"an overlay of {sibling.name}")
    rest = [t for t in amd if t.name not in cases and not (t in alone and alone[t] is None)]
    whole |= _whole(request, rest, staging, run, refused, cases, request.rocm_hardware)
    return siblings


def _report(request: Folder, test: Path, outcome: str, detail: str) -> None:
    if request.progress is not None:
        request.progress(test, outcome, detail)


def _tests(folder: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """The folder's CUDA tests, its AMD variants, and the links among them (never followed)."""
    if not folder.is_dir():
        raise UsageError(f"no folder {folder}")
    tests = sorted(folder / name for name in _names(folder) if fnmatch.fnmatchcase(name, "test_*.py"))
    if not tests:
        raise UsageError(f"{folder} holds no test_*.py")
    if len(tests) > MAX_TESTS:
        raise UsageError(f"{folder} holds {len(tests)} tests; import at most {MAX_TESTS} at once")
    links = [t for t in tests if t.is_symlink()]
    amd = [t for t in tests if t.name.startswith(AMD_PREFIX) and t not in links]
    return [t for t in tests if t not in amd and t not in links], amd, links


def _names(folder: Path) -> list[str]:
    """What ``folder`` holds (nothing, where it cannot be listed)."""
    _, others, folders = next(walk(folder), (None, [], []))
    return [*others, *folders]


def walk(folder: Path) -> Iterator[tuple[PurePosixPath, list[str], list[str]]]:
    """The folders below ``folder`` listed through the door (a checkout's tests are a stranger's files)."""
    try:
        yield from checkout.Tree.at(folder).walk()
    except checkout.TooLarge:
        raise UsageError(f"{folder} holds too many entries to list; import a part of it") from None


def _link(test: Path) -> Problem:
    """A test that is a link: refused with where it points (it may leave the checkout, and the sandbox
    reads only the checkout)."""
    return Problem(
        "import",
        f"{test.name} is a link (to {os.readlink(test)}): run-matrix imports only the checkout's own files",
        locations=(Location(test),),
        hint="copy the test into the folder, or leave it out with --skip-refused",
    )


def case_file(test: Path) -> str:
    return f"{test.stem.removeprefix('test_')}.yaml"


def _existing_parent(output: Path) -> Path:
    """Where the staging folder goes: beside OUT, so profiles and components resolve as they will."""
    folder = output.resolve().parent
    if not folder.is_dir():
        raise UsageError(f"{output}: its folder {folder} does not exist")
    return folder


def _header(
    request: Folder, extending: list[Path], whole: dict[str, str], refused: dict[str, list[Problem]]
) -> list[str]:
    family = request.output.resolve().name
    return [
        f"the {family} family: what its {len(extending)} CUDA cases share"
        f" (imported by `run-matrix import` from {request.tests.name}/; nothing of it was run)",
        *(f"case: {test.name}" for test in extending),
        *(f"written whole: {name}: {reason}" for name, reason in whole.items()),
        *(f"left out: {name}: {why(problems)}" for name, problems in refused.items()),
    ]


def why(problems: list[Problem]) -> str:
    """A refusal in one line: the reason, and the rules behind it (``[L3] args.*.num-gpus-per-node``)."""
    rules = [
        f"[{p.rule}] {p.key}".strip() for p in problems[1:] if p.rule != "import" and p.severity == "error"
    ]
    message = problems[0].message.split(" cannot be imported: it ", 1)[-1].replace(" below)", ")")
    message = " ".join(message.split())  # a test's output quoted in it: one line, of bounded length
    message = message if len(message) <= MAX_WHY else message[: MAX_WHY - 3] + "..."
    return message + (f": {'; '.join(rules)}" if rules else "")


def _all_refused(request: Folder, refused: dict[str, list[Problem]]) -> SpecError:
    lines = [f"{name}: {why(problems)}" for name, problems in refused.items()]
    problems = [p for found in refused.values() for p in found]
    summary = SpecError.one(
        "import",
        f"{counted(len(refused), 'test')} of {request.tests} cannot be imported; nothing was written:\n  "
        + "\n  ".join(lines),
        at=[Location(request.tests)],
        hint="fix them, or leave them out: --skip-refused writes the others",
    )
    return SpecError([*summary.problems, *problems])
