"""The pipeline in one place: load -> compose -> expand -> resolve -> model -> check.

``cells(path)`` and ``_cell`` are the whole design in two dozen lines; ``render`` and
``run`` take their result. Nothing here runs anything.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from runner import check
from runner.cells import adjust, hardware, selection
from runner.cells.cell import Cell
from runner.cells.layout import layout
from runner.cells.matrix import Combo, cell_id, expand
from runner.check import reads as read_checks
from runner.errors import Location, Problem, SpecError, UsageError
from runner.knowledge import flags, launchers, preset_data, versions
from runner.resolved import memo, resolved
from runner.spec import locate, repository, why
from runner.spec.compose import Composed, compose
from runner.spec.load import NO_DOCUMENTS, Documents, Key
from runner.spec.model import build
from runner.spec.resolve import Resolver, resolve
from schemas import HardwareProfile, LaunchConventions, ModelPreset, Spec
from schemas.matrix import Matrix, MatrixBlock

NOT_CELLS = {"hardware", "base", "components"}
DERIVED = ("profile", "runner", "visible_devices")  # names ${...} may use besides the spec's keys


def cells(
    path: Path,
    today: datetime.date | None = None,
    miles_root: Path | None = None,
    documents: Documents = NO_DOCUMENTS,
) -> list[Cell]:
    """Every cell of one spec file: its matrix expanded, each cell resolved and modelled; its flags
    are checked against ``miles_root``'s own when given (else the spec's miles_version). Files of
    ``documents`` (the spec, its components) are read from there: candidates not written yet."""
    try:
        composed = compose(path, documents)
    except SpecError as error:
        raise _unknown_flags_first(error, path, today, miles_root, documents) from None
    try:
        return _cells_of(composed, path, today, miles_root, documents)
    except SpecError as exc:  # a value of a base outside the spec's repository is never quoted
        raise repository.quiet(exc, composed.path, composed.files) from None


def _cells_of(
    composed: Composed, path: Path, today: datetime.date | None, miles_root: Path | None, documents: Documents
) -> list[Cell]:
    matrix = build(MatrixBlock, {"matrix": composed.data.get("matrix", {})}, composed).matrix
    combos = expand(matrix, composed.location) if matrix.axes or matrix.include else [{}]
    name = locate.cell_name(path)
    shared: dict[Any, dict[Key, Any]] = {}  # values no axis changes, per set of overlays applied
    day = today or datetime.date.today()
    found = [_cell(composed, name, combo, matrix, day, shared, miles_root, documents) for combo in combos]
    unwritten = read_checks.across(found)  # G9: what a cell reads at launch, an earlier one writes
    if unwritten:
        raise SpecError(unwritten)
    return found


MAX_TYPO_SEARCH = 32  # why: problems of unset keys under which the pipeline looks for misspelt flags


def _unknown_flags_first(
    error: SpecError, path: Path, today: datetime.date | None, miles_root: Path | None, documents: Documents
) -> SpecError:
    """A ``why:`` that names a flag its file does not set is most often the reason of a flag the file
    misspelt (``sglang-dp-sise: 2`` under ``why: sglang-dp-size: ...``): composed without that check,
    the spec's flags that are no flags (rule F1, with did-you-mean) come first, then the why problem."""
    unset = [p for p in error.problems if p.rule == "why" and why.UNSET in p.message]
    if not unset or len(unset) > MAX_TYPO_SEARCH:
        return error  # none, or more than typos: composing again would cost what the first one did
    try:
        found = _cells_of(compose(path, documents, reasons_checked=False), path, today, miles_root, documents)
    except SpecError:
        return error  # the spec has other problems: the why one stands alone
    unknown = [p for c in found for p in check.RULES["F1"](c, layout(c)) if p.severity == "error"]
    return SpecError([*dict.fromkeys(unknown), *error.problems]) if unknown else error


def cell(path: Path) -> Cell:
    """The spec's default cell: the one named like the spec (every axis at its first value)."""
    found = cells(path)
    name = locate.cell_name(path)
    for each in found:
        if each.id == name:
            return each
    raise UsageError(f"{path} has no default cell {name!r}; its cells: {', '.join(c.id for c in found)}")


def checked(path: Path) -> tuple[Cell, list[Problem]]:
    """A one-cell spec and the warnings of its rules (errors raise)."""
    built = cell(path)
    return built, problems(built)


def problems(built: Cell) -> list[Problem]:
    """The problems the rules find in a cell: errors raise, warnings are returned."""
    found = [*built.notes, *check.run(built)]
    if any(p.severity == "error" for p in found):
        raise SpecError(found)
    return found


def select(
    names: Sequence[str],
    expression: str | None = None,
    broken: list[tuple[Path, SpecError]] | None = None,
    miles_root: Path | None = None,
) -> list[Cell]:
    """The cells named by spec paths, folders or cell ids, then filtered by ``-k``.

    Every command selects through here. With ``broken``, a spec that does not expand is
    collected there (``validate`` reports it with the rest) instead of raised. With
    ``miles_root``, that checkout's own flags decide which flags are valid.
    """
    chosen: list[Cell] = []
    with memo():  # the tree is only read here: each path resolved once
        for name in names:
            spec_name, bracket, _ = name.partition("[")
            for path in spec_files([locate.find_spec(spec_name)]):
                try:
                    found = cells(path, miles_root=miles_root)
                except SpecError as exc:
                    if broken is None:
                        raise
                    broken.append((path, exc))
                    continue
                chosen += [selection.by_id(found, name)] if bracket else found
            _not_a_profile(spec_name, broken is not None)
    if expression is not None and (chosen or not broken):
        chosen = selection.select(chosen, expression)
    return chosen


def _not_a_profile(name: str, validating: bool) -> None:
    """A hardware profile named where a spec is meant: ``validate`` checks it as a profile, any other
    command says what it is rather than finding no cell in it."""
    path = locate.find_spec(name)
    if not validating and path.is_file() and in_hardware(path):
        raise UsageError(
            f"{name} is a hardware profile, not a spec: `run-matrix validate {name}` checks it,"
            f" `run-matrix hardware {path.stem}` shows it"
        )


def one(name: str, miles_root: Path | None = None) -> Cell:
    """The cell ``name`` means: a cell id, or a spec (its default cell when it has several)."""
    found = select([name], miles_root=miles_root)
    if len(found) == 1:
        return found[0]
    default = [c for c in found if "[" not in c.id]
    if len(default) == 1:
        return default[0]
    raise UsageError(f"{name!r} has {len(found)} cells; name one: {', '.join(c.id for c in found)}")


def _cell(
    composed: Composed,
    name: str,
    combo: Combo,
    matrix: Matrix,
    today: datetime.date,
    shared: dict[Any, dict[Key, Any]],
    miles_root: Path | None,
    documents: Documents,
) -> Cell:
    adjustments = adjust.applicable(matrix, combo, composed)
    composed = adjust.with_overlays(composed, adjustments, combo, documents)
    # a value depends on the axes through ${matrix.*}, or through the profile when hardware does
    hardware_varies = "${" in str(composed.data.get("hardware", ""))
    varying = frozenset({"matrix", *DERIVED} if hardware_varies else {"matrix"})
    same = shared.setdefault(tuple(name for name, _ in adjustments), {})
    composed = Composed(
        {**composed.data, "matrix": dict(combo)}, dict(composed.provenance), composed.files, composed.path
    )
    profile = _profile(composed)
    share = hardware.share(profile, os.environ)
    derived = {
        "profile": lambda _: _profile_data(profile),
        "runner": lambda _: {"gpus_per_node": share.gpus},
        "visible_devices": lambda resolver: _visible_devices(resolver, share),
    }
    resolved = {k: v for k, v in resolve(composed, derived, same, varying).data.items() if k != "matrix"}
    table = launchers.shipped()
    spec = build(Spec, resolved, composed, {"launchers": table})
    preset, preset_source, notes = _cell_preset(spec, composed, miles_root)
    preset, preset_source = _with_model_args(preset, preset_source, spec, composed)
    identity = cell_id(name, combo, matrix)
    skip, xfail, timeout = adjust.control(matrix, combo, spec, profile, composed, today, identity)
    return Cell(
        id=identity,
        spec=spec,
        profile=profile,
        preset=preset,
        conventions=conventions(spec.miles_version),
        composed=composed,
        preset_source=preset_source,
        launchers=table,
        hf_config=_hf_config(spec.args.ckpt.get("hf-checkpoint")),
        axes=dict(combo),
        skip=skip,
        xfail=xfail,
        timeout=timeout,
        flags=flags.choose(spec.miles_version, miles_root, composed.location(("miles_version",))),
        step_presets=_step_presets(spec, composed),
        share=share,
        miles_root=miles_root,
        notes=notes,
    )


def _cell_preset(
    spec: Spec, composed: Composed, miles_root: Path | None
) -> tuple[ModelPreset, Composed, tuple[Problem, ...]]:
    """The shipped preset of the cell's model type; with a checkout, one only the checkout has, and
    the note that says so."""
    where = composed.location(("model", "type"))
    try:
        preset, source = load_preset(spec.model.type, where, composed.path, spec.miles_version)
        return preset, source, ()
    except SpecError as exc:
        if miles_root is None or spec.model.type is None or exc.problems[0].rule != "unknown-name":
            raise
        from runner.knowledge import checkout_preset  # reads the checkout: only when one is named

        found = checkout_preset.preset(spec.model.type, miles_root, where)
        if found is None:
            raise
    preset, note = found
    source_path = miles_root.resolve() / preset.source
    return preset, Composed({"model_args": preset.model_args}, {}, (source_path,)), (note,)


def _with_model_args(
    preset: ModelPreset, source: Composed, spec: Spec, composed: Composed
) -> tuple[ModelPreset, Composed]:
    """The preset with the spec's ``model.args`` values, each set where the spec wrote it."""
    if not spec.model.args:
        return preset, source
    problems = _model_args_problems(preset, spec, composed)
    if problems:
        raise SpecError(problems)
    changed = preset.model_copy(update={"model_args": {**preset.model_args, **spec.model.args}})
    where: dict[Key, Any] = {
        ("model_args", name): composed.provenance[("model", "args", name)] for name in spec.model.args
    }
    return changed, replace(source, provenance={**source.provenance, **where})


def _model_args_problems(preset: ModelPreset, spec: Spec, composed: Composed) -> list[Problem]:
    """``model.args`` may change only values the preset sets; an FSDP cell has no preset at all."""
    if spec.model.type is None:
        message = "model.args changes values of model.type's MODEL_ARGS, and there is no model.type (FSDP)"
        where = (composed.location(("model", "args")),)
        return [Problem("model-args", message, "model.args", where, hint="put the flags under args:")]
    return [
        Problem(
            "model-args",
            f"the MODEL_ARGS of {preset.type} have no --{name}: model.args changes a value the"
            " preset sets, in its place",
            f"model.args.{name}",
            (composed.location(("model", "args", name)),),
            hint="a flag of the test's own goes under args:",
        )
        for name in spec.model.args
        if name not in preset.model_args
    ]


def _step_presets(spec: Spec, composed: Composed) -> dict[str, ModelPreset]:
    """The presets of the model types the prepare steps convert for, where not the cell's own."""
    found: dict[str, ModelPreset] = {}
    for name, step in spec.prepare.items():
        wanted = getattr(step, "model_type", None)
        if wanted and wanted != spec.model.type and wanted not in found:
            where = composed.location(("prepare", name, "model_type"))
            found[wanted] = load_preset(wanted, where, composed.path, spec.miles_version)[0]
    return found


def spec_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Every spec named by ``paths``: files as given, folders searched for cells.

    In a folder, ``hardware/`` holds profiles, ``base/`` specs meant to be extended and
    ``components/`` overlays a matrix applies; none is a cell of its own.
    """
    for path in paths:
        if path.is_dir():
            for found in sorted(path.rglob("*.yaml")):
                if not NOT_CELLS & set(found.relative_to(path).parts[:-1]) and not in_hardware(found):
                    yield found
        elif not in_hardware(path):
            yield path


def in_hardware(path: Path) -> bool:
    """Whether ``path`` is a file of a matrices tree's ``hardware/`` folder (a profile, or a family of
    profiles in a folder below): never a spec, also when its folder or the file itself is named alone."""
    absolute = path if path.is_absolute() else resolved(path)
    root = locate.matrices_root(absolute)
    return root is not None and absolute.relative_to(root).parts[:1] == ("hardware",)


def _profile(composed: Composed) -> HardwareProfile:
    name = composed.data.get("hardware")
    where = composed.location(("hardware",))
    if isinstance(name, str) and "${" in name:  # e.g. ${matrix.hardware}: resolved before the profile exists
        name = Resolver(Composed(composed.data, dict(composed.provenance), composed.files), {}).leaf(
            ("hardware",)
        )
    if not isinstance(name, str):
        raise SpecError.one(
            "missing-key" if name is None else "type",
            "'hardware' is required: the name of a profile in matrices/hardware/"
            if name is None
            else f"hardware: expected a profile name, got {name!r}",
            key="hardware",
            at=[where],
        )
    version = composed.data.get("miles_version")  # the stack of the miles version the spec targets
    path = locate.hardware_profile(name, composed.path, where)
    return hardware.target(path, version if isinstance(version, str) and "${" not in version else None)


_PROFILE_DATA: dict[int, tuple[HardwareProfile, dict[str, Any]]] = {}


def _profile_data(profile: HardwareProfile) -> dict[str, Any]:
    """A profile as data for ${profile.*}, dumped once per profile (kept alive beside its dump)."""
    return _PROFILE_DATA.setdefault(id(profile), (profile, profile.model_dump()))[1]


MAX_GPUS_PER_NODE = 1024  # an 8-GPU node is usual; NVL72 racks are 4 per node to Ray


def _visible_devices(resolver: Resolver, share: hardware.Share) -> str:
    """The runner's mask (its first N entries) when it set one, else ``0,...,N-1``."""
    gpus = resolver.lookup(("cluster", "gpus_per_node"), ("visible_devices",))
    if not isinstance(gpus, int) or not 0 < gpus <= MAX_GPUS_PER_NODE:
        raise resolver.error(
            ("cluster", "gpus_per_node"),
            f"visible_devices needs 1 to {MAX_GPUS_PER_NODE} GPUs per node, got {gpus!r}",
            rule="budget" if isinstance(gpus, int) and gpus > 0 else "type",
        )
    if share.devices and len(share.devices) >= gpus:
        return ",".join(share.devices[:gpus])
    return ",".join(str(i) for i in range(gpus))


def _hf_config(checkpoint: Any) -> dict[str, Any] | None:
    """The checkpoint's config.json when it exists on this machine (for rule L12)."""
    path = Path(str(checkpoint)) / "config.json" if checkpoint else None
    try:
        stat = path.stat() if path else None
    except OSError:
        return None
    return _read_hf_config(path, stat.st_mtime_ns, stat.st_size) if path and stat else None


@cache
def _read_hf_config(path: Path, mtime_ns: int, size: int) -> dict[str, Any] | None:
    """Read once per content: a thousand cells share one checkpoint."""
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError.one("L12", f"cannot read {path}: {exc}", key="args.ckpt.hf-checkpoint") from None
    return config if isinstance(config, dict) else None


def _modelled(cls: Any, path: Path) -> Any:
    return _modelled_with_source(cls, path)[0]


@cache
def _modelled_with_source(cls: Any, path: Path) -> tuple[Any, Composed]:
    composed = compose(path)
    return build(cls, resolve(composed, {}).data, composed), composed


def load_preset(
    name: str | None, where: Location, spec: Path, version: str | None = None
) -> tuple[ModelPreset, Composed]:
    """The model preset (MODEL_ARGS) of a Megatron model type at the spec's miles ``version`` (None:
    the newest shipped that has it); none at all without a type (FSDP)."""
    if name is None:
        return ModelPreset(type="", model_args={}), Composed({}, {}, (spec,))
    chosen = preset_data.choose(name, version, where)
    preset, source = _modelled_with_source(ModelPreset, chosen.path)
    return preset, source


def conventions(version: str | None = None) -> LaunchConventions:
    """miles' launch conventions at the spec's miles ``version`` (None, or one no file names: the newest)."""
    shipped = versions.shipped(locate.CONVENTIONS.glob("*.yaml"))
    named = versions.matching(version, shipped) if version else []
    chosen = named[0] if len(named) == 1 else shipped[-1]
    found: LaunchConventions = _modelled(LaunchConventions, chosen.path)
    return found
