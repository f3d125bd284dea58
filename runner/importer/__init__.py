"""run-matrix import: an existing miles test script -> a spec that renders exactly what it launches.

    record (capture) -> explore (variants) -> fit -> check (rules, round trip) -> write

Glossary:

* **sandbox** — a fresh interpreter (``harness.py``) that runs the script with miles' command
  helpers replaced by recorders (``recorder.py``, or miles' own module with its process and
  network calls swapped out); nothing is executed, downloaded or started.
* **run** — one run of the script in the sandbox, with some variant switches set.
* **call** — one ``execute_train`` call of a run: its arguments, the commands it would run, the
  script's flag-string variables at that moment.
* **target** — what one cell of the imported spec must hold (spec keys) and render (the launch).
* **switch** — an environment variable that selects a variant of the test (``miles/import.yaml``);
  switches that change the launch, and repeated calls, become matrix axes.
* **plan** — the files to write as data: the spec (with ``--base``, an overlay) and a component
  per cell that differs from the default cell.
* **round trip** — ``render`` of every imported cell equals the script's launch; checked before
  anything is written.

State that outlives one call, all of it here, with why it is safe (everything else is passed down).
Declared through ``runner.memos`` (``remember``, with its kind and why), as every memo of run-matrix:
``knowledge.knowledge()`` (``miles/import.yaml``), ``shell.split`` (``shlex.split``, pure) and
``recordings.own_code()`` (the hash of run-matrix's own files). Kept here, with why:

* ``recordings._CONTENTS``: a bound tree's content hash under its stamp (size, times and inode of
  every file): a changed tree has another stamp, so a stale hash is never found;
* ``recordings._HELD``: only within ``recordings.held(paths)`` (a suite import, a worker): a tree's
  stamp taken once; the suite stamps it afresh at its end and keeps nothing if it changed;
* ``capture.looking()``: a context variable, only within its ``with``: a missing recording raises;
* in the sandbox's interpreter, which records one run (or one fork's): ``trace.TRACE``, the record
  that every guard and recorder writes, and ``trace._source``, a file's text, read once.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import atomic, pipeline
from runner.cells import hardware
from runner.cells.cell import Cell
from runner.errors import Location, Problem, SpecError, UsageError, counted, display_path
from runner.importer import capture, ci_block, launch_reads, plan, registrations, roundtrip, sides
from runner.importer.events import refused
from runner.importer.fit import Destination, built, cell_of, final_texts, grow
from runner.importer.notes import Note, SystemStep
from runner.importer.variants import Variants
from runner.importer.version import miles_version
from runner.knowledge import bundled, checkout, preset_data
from runner.launch import system_steps
from runner.memos import memo
from runner.redact import Redactor
from runner.spec import locate
from runner.spec.compose import compose
from schemas.matrix import AxisValue


@dataclass(frozen=True)
class Request:
    script: Path
    output: Path
    base: Path | None = None
    hardware: str | None = None
    miles_root: Path | None = None
    force: bool = False
    timeout: float = capture.TIMEOUT_S
    trust_checkout: bool = False  # run the script without the sandbox's isolation (where it has none)
    today: datetime.date | None = None  # sets an imported skip's expiry (default: the real today)
    allow_system_steps: bool = False  # import prepare steps that write /etc, remove what no step made, ...
    cache: Path | None = None  # where recordings are kept by what they read (None: recorded afresh)
    hf_configs: tuple[tuple[str, Path], ...] = ()  # --hf-config: repo -> its config.json, past the HF cache
    components: Path | None = None  # where its components go (default: components_folder(output))


@dataclass(frozen=True)
class Imported:
    files: dict[Path, str]  # what was written
    cells: list[str]  # the ids of the spec's cells
    axes: dict[str, list[AxisValue]]
    switches: dict[str, str]  # environment variable -> axis
    notes: list[Note]  # what the spec does not hold
    warnings: list[Problem]  # what the rules say about the imported cells
    launches: tuple[tuple[dict[str, AxisValue], Location], ...] = ()  # each cell's axis values, its test line


def import_test(request: Request) -> Imported:
    destination = Destination(_unlinked(request.output), _components(request))
    _check_request(request)
    record = functools.partial(
        capture.record,
        request.script,
        secrets=bundled.conventions().secrets,
        verifiers=tuple(bundled.conventions().verifiers),
        miles_root=request.miles_root,
        timeout=request.timeout,
        trust=request.trust_checkout,
        cache=request.cache,
        hf_configs=request.hf_configs,
    )
    version = miles_version(request.miles_root, record)
    conventions = bundled.conventions(version)
    recorded = sides.record(request, record, conventions, version)
    capture.all_looked_up()
    steps = _refuse_system_steps(recorded.variants, conventions.output_flags, request.allow_system_steps)
    recorded = dataclasses.replace(recorded, variants=steps)
    try:
        return _imported(request, recorded, version, conventions.secrets, destination)
    except sides.SideRejected as rejected:  # the other side alone, with the reason in a note
        return _imported(request, rejected.remaining, version, conventions.secrets, destination)


def _imported(
    request: Request,
    recorded: sides.Recorded,
    version: str | None,
    secrets: Sequence[str],
    destination: Destination,
) -> Imported:
    variants = recorded.variants
    request = _with_hardware(request, variants, recorded)
    draft = _plan(request, variants, version, recorded)
    render = functools.partial(plan.texts, header=_header(request, variants), notes=variants.notes)
    checkout = _presets_from(request.miles_root, variants)
    with memo():  # the checkout and the output are only read until the files are written
        grow(draft, variants.cells, recorded.hardware_of(request.hardware), destination, render, checkout)
        sides.explain(draft, recorded)
        warnings = _checked(built(draft, destination, render, checkout), variants, request, recorded)
        files, scrubbed = _without_secrets(final_texts(draft, destination, render), secrets, request.script)
    atomic.write_generated(files, request.force, named=(destination.spec,))
    ids = [cell.id for cell in pipeline.cells(request.output, miles_root=checkout)]
    launches = tuple((combo, target.at) for combo, target in variants.cells)
    notes = [*variants.notes, *scrubbed]
    return Imported(files, ids, variants.axes, variants.switches, notes, warnings, launches)


def _presets_from(miles_root: Path | None, variants: Variants) -> Path | None:
    """The checkout the cells are built with where a model type only it has is launched (its preset
    comes from there, and its flags are checked against it, as ``validate --miles-root`` does); else
    None: the shipped presets and flag catalogs of the spec's miles_version, as for every import."""
    types = {target.model_type for _, target in variants.cells if target.model_type is not None}
    shipped = {path.stem for version in preset_data.shipped() for path in version.path.glob("*.yaml")}
    return miles_root if miles_root is not None and types - shipped else None


def _without_secrets(
    files: dict[Path, str], names: Sequence[str], script: Path
) -> tuple[dict[Path, str], list[Note]]:
    """The files with any value of the caller's secrets replaced by its ``${NAME}`` reference."""
    redact = Redactor.of(os.environ, names)
    found: dict[str, None] = {}
    for path, text in files.items():
        files[path], names_found = redact.found(text)
        found |= dict.fromkeys(names_found)
    return files, [
        Note(f"the value of your ${name} reached the spec; written as ${{{name}}} instead", Location(script))
        for name in found
    ]


def _refuse_system_steps(variants: Variants, output_flags: Sequence[str], allowed: bool) -> Variants:
    """Each prepare step that touches the system, refused at the test's line (unless ``allowed``:
    then it stays a note of the import). Removing what a launch of the test writes (``--save``) is
    the test's own clean-up."""
    written = [
        f for _, t in variants.cells for _, f in launch_reads.outputs(t.launched.train_args, output_flags)
    ]
    own = [
        n
        for n in variants.notes
        if isinstance(n, SystemStep) and n.removed and system_steps.holds(written, n.removed)
    ]
    variants = dataclasses.replace(variants, notes=[n for n in variants.notes if n not in own])
    found = [note for note in variants.notes if isinstance(note, SystemStep)]
    if found and not allowed:
        raise SpecError(
            [
                Problem(
                    "system-step",
                    f"{note.at.file.name} cannot be imported: it {note.message} before launching, which"
                    " changes the machine rather than the test's data",
                    locations=(note.at,),
                    hint=f"nothing was written; {system_steps.ALLOW_HINT}",
                )
                for note in found
            ]
        )
    return variants


def _unlinked(path: Path) -> Path:
    """``path`` absolute, its folder's links resolved but not its own: a spec path that is a link
    names the link (replaced with --force), never what it points to."""
    return path.absolute().parent.resolve() / path.name


def _components(request: Request) -> Path:
    return request.components or components_folder(request.output)


def components_folder(spec: Path) -> Path:
    """``matrices/components/`` for a spec in a matrices tree (the folder above it is a matrices root:
    it holds ``hardware/`` or an import's marker), else ``components/`` beside it — inside the
    spec's root either way, so that the spec may compose them (rule G14).

    A folder anyone may write to (``/tmp``) is never taken for a tree: ``-o /tmp/x/spec.yaml`` would
    otherwise put its components in ``/tmp/components/``, which any user can have made, or made a link.
    """
    folder = _unlinked(spec).parent
    above = folder.parent
    tree = not _writable_by_all(above) and (
        (above / "hardware").is_dir() or (above / locate.ROOT_MARKER).is_file()
    )
    return above / "components" if tree else folder / "components"


def _writable_by_all(folder: Path) -> bool:
    try:
        return bool(folder.stat().st_mode & stat.S_IWOTH)
    except OSError:
        return False


def _check_request(request: Request) -> None:
    if not request.script.is_file():
        raise UsageError(f"no test script {request.script}")
    if request.miles_root is not None and not request.miles_root.is_dir():
        raise UsageError(f"--miles-root {request.miles_root}: no such directory")
    if request.miles_root is not None:
        _refuse_link_out(request.script, checkout.Tree.at(request.miles_root))
    if request.hardware is not None:
        locate.hardware_profile(request.hardware, request.output, Location(request.output))
    atomic.refuse_existing([request.output], request.force, atomic.GENERATED_HINT)


def _refuse_link_out(script: Path, tree: checkout.Tree) -> None:
    """A test in the checkout that is a link out of it (``test_x.py -> ~/notes.py``) is refused: the
    sandbox would bind and run what it points to, a file of this machine, not of the checkout."""
    named = _unlinked(script)
    if not named.is_relative_to(tree.root):
        return  # a script outside the checkout: the one the caller named
    try:
        tree.locate(named.relative_to(tree.root).as_posix())
    except checkout.OutsideCheckout:
        raise UsageError(
            f"{script} leads out of the checkout at {tree.root}: run-matrix imports only the checkout's"
            " own files (copy the test into the checkout)"
        ) from None


def _with_hardware(request: Request, variants: Variants, recorded: sides.Recorded) -> Request:
    """``--hardware``, else the first side's (its CI suite's: ``stage-c-8-gpu-h100``), else the base's."""
    if request.hardware is not None:
        return request
    if recorded.sides and recorded.sides[0].hardware is not None:
        return dataclasses.replace(request, hardware=recorded.sides[0].hardware)
    suite, named = registrations.hardware_of(variants.registrations, request.output)
    if named is not None:
        return dataclasses.replace(request, hardware=named)
    if suite is None and request.base is not None:
        return request
    known = sorted(p.stem for p in (locate.BUNDLED_MATRICES / "hardware").glob("*.yaml"))
    raise UsageError(
        "the test does not say which hardware it runs on"
        + (f" (its CI suite {suite} names no profile run-matrix has)" if suite else "")
        + f": pass --hardware NAME ({', '.join(known)})"
        + ("" if suite else ", or --base SPEC to take it from a spec")
    )


def _platform(request: Request) -> str:
    name = request.hardware
    if name is None and request.base is not None:
        name = compose(request.base).data.get("hardware")
    path = locate.hardware_profile(str(name), request.output, Location(request.output))
    return str(hardware.load(path).platform)


def _plan(
    request: Request, variants: Variants, version: str | None, recorded: sides.Recorded
) -> plan.ImportPlan:
    """The spec's fixed keys, and the axes it must declare itself (a base may declare some)."""
    spec: dict[str, Any] = {"description": _description(request.script)}
    base_matrix: dict[str, Any] = {}
    base: dict[str, Any] = {}
    base_version = None
    if request.base is not None:
        spec = {"extends": os.path.relpath(request.base.resolve(), _unlinked(request.output).parent), **spec}
        base = compose(request.base).data
        base_matrix, base_version = base.get("matrix") or {}, base.get("miles_version")
    if version is not None and version != base_version:
        spec["miles_version"] = version
    base_axes: dict[str, Any] = base_matrix.get("axes") or {}
    axes = {axis: values for axis, values in variants.axes.items() if base_axes.get(axis) != values}
    axes |= {axis: values[:1] for axis, values in base_axes.items() if axis not in variants.axes}
    taken = set(base_matrix.get("adjust") or {})
    spec_path = _unlinked(request.output).with_suffix("")
    prefix = os.path.relpath(spec_path, _components(request).parent).replace(os.sep, "-")
    draft = plan.ImportPlan(prefix, spec, axes, sources=_sources(variants), taken=taken)
    today = request.today or datetime.date.today()
    ci_block.default_side(draft, variants, base, recorded, _platform(request), request.script, today)
    if len(recorded.sides) > 1:
        ci_block.other_side(draft, variants, recorded, request.script, today)
    return draft


def _sources(variants: Variants) -> dict[str, str]:
    found: dict[str, str] = {}
    for _, target in variants.cells:
        for name, source in target.source_of.items():
            found.setdefault(name, source)
    return found


def _description(script: Path) -> str:
    """The first paragraph of the script's docstring, read through the door (a link out of its
    folder, a FIFO, a file over 4 MiB or one Python's parser cannot hold has none)."""
    docstring = checkout.docstring(checkout.Tree.at(script.parent), script.name)
    paragraph = docstring.strip().split("\n\n")[0]
    return " ".join(paragraph.split()) or f"imported from {script.name}"


def _shown_script(request: Request) -> str:
    """The script as the header names it: in the checkout as ``${MILES_ROOT}/...``, never its path here."""
    script = request.script.resolve()
    if request.miles_root is not None and script.is_relative_to(request.miles_root.resolve()):
        return "${MILES_ROOT}/" + str(script.relative_to(request.miles_root.resolve()))
    return display_path(request.script)


def _header(request: Request, variants: Variants) -> list[str]:
    lines = [f"imported by `run-matrix import` from {_shown_script(request)}; nothing of it was run"]
    lines += [f"switch {name} is the {axis} axis" for name, axis in variants.switches.items()]
    return lines


def _checked(
    cells: list[Cell], variants: Variants, request: Request, recorded: sides.Recorded
) -> list[Problem]:
    """The rules on every cell (an error stops the import), then the round trip of each. An error
    only in the cells of a second side drops that side (:class:`sides.SideRejected`)."""
    warnings: list[Problem] = []
    errors: dict[str, list[Problem]] = {}
    for cell in cells:
        try:  # with the checkout the test came from: a test's own function is checked in it (L16)
            warnings += pipeline.problems(dataclasses.replace(cell, miles_root=request.miles_root))
        except SpecError as exc:
            errors[cell.id] = list(exc.problems)
    found = _unique([p for problems in errors.values() for p in problems])
    first = f"[{found[0].rule}] {found[0].key}: {found[0].message}" if found else ""
    if errors:
        recorded.reject([c.axes for c in cells if c.id in errors], f"run-matrix's rules reject it: {first}")
        at = Location(request.script)
        broken = refused(
            at, f"launches what run-matrix's rules reject ({counted(len(found), 'error')} below)"
        )
        raise SpecError([*broken.problems, *found])
    wrong = {
        _shown(combo): roundtrip.differences(
            cell_of(cells, combo), target, request.miles_root, request.trust_checkout
        )
        for combo, target in variants.cells
    }
    if any(wrong.values()):
        lines = [f"{cell}: {line}" for cell, found in wrong.items() for line in found]
        differing = [combo for combo, target in variants.cells if wrong[_shown(combo)]]
        recorded.reject(differing, "its spec does not render what the test launches: " + lines[0])
        raise SpecError.one(
            "import-roundtrip",
            "the imported spec does not render what the script launches:\n  " + "\n  ".join(lines),
            at=[Location(request.script)],
            hint="nothing was written; please report it with the script",
        )
    return _unique(warnings)


def _shown(combo: Mapping[str, AxisValue]) -> str:
    return (
        "[" + ",".join(f"{axis}={value}" for axis, value in combo.items()) + "]" if combo else "default cell"
    )


def _unique(problems: list[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))
