"""build: a spec's cells from its composed text — the matrix expanded, each cell adjusted, resolved and
modelled, with its hardware profile, model preset, launch conventions and flag catalog. Nothing is
checked here: the rules run on what this returns (``runner.pipeline`` chains the two).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner.cells import adjust, hardware
from runner.cells.cell import Cell
from runner.cells.matrix import Combo, cell_id, expand
from runner.errors import Problem, SpecError
from runner.knowledge import flags, launchers
from runner.knowledge.bundled import conventions, load_preset
from runner.knowledge.flags import loaded
from runner.memos import resolved
from runner.spec import locate
from runner.spec.compose import Composed
from runner.spec.documents import file_bytes, json_data
from runner.spec.load import NO_DOCUMENTS, Documents, Key
from runner.spec.model import build
from runner.spec.resolve import Resolver, resolve
from schemas import HardwareProfile, ModelPreset, Spec
from schemas.launchers import Launchers
from schemas.matrix import Matrix, MatrixBlock

NOT_CELLS = {"hardware", "base", "components"}
DERIVED = ("profile", "runner", "visible_devices")  # names ${...} may use besides the spec's keys


class Memo:
    """What building reads once per command however many cells share it: a profile's data for
    ``${profile.*}`` (by the profile object, kept alive beside its dump) and a checkpoint's
    ``config.json`` (by path, modification time and size: a thousand cells share one checkpoint)."""

    def __init__(self) -> None:
        self.profiles: dict[int, tuple[HardwareProfile, dict[str, Any]]] = {}
        self.hf_configs: dict[tuple[Path, int, int], dict[str, Any] | None] = {}


@dataclass(frozen=True)
class Inputs:
    """What building a cell reads besides its spec, given once by the command: the day (for a skip's
    expiry), the ``--miles-root`` checkout (its flags and presets; the cell carries it to render and
    run), documents not written yet (the spec and components a command checks in memory), the
    memo of what the cells share, and the launchers a spec may name (``miles/launchers.yaml``)."""

    today: datetime.date = field(default_factory=datetime.date.today)
    miles_root: Path | None = None
    documents: Documents = field(default_factory=lambda: NO_DOCUMENTS)  # read-only, one for all
    memo: Memo = field(default_factory=Memo, compare=False, repr=False)
    launchers: Launchers = field(default_factory=launchers.shipped, repr=False)  # launch.script's choices


def cells(composed: Composed, name: str, inputs: Inputs) -> list[Cell]:
    """Every cell of one composed spec (``name``: its cell name, ``nv/glm5-colocate``), in the order
    they run."""
    matrix = build(MatrixBlock, {"matrix": composed.data.get("matrix", {})}, composed).matrix
    combos = expand(matrix, composed.location) if matrix.axes or matrix.include else [{}]
    shared: dict[Any, dict[Key, Any]] = {}  # values no axis changes, per set of overlays applied
    return [_cell(composed, name, combo, matrix, shared, inputs) for combo in combos]


def _cell(
    composed: Composed,
    name: str,
    combo: Combo,
    matrix: Matrix,
    shared: dict[Any, dict[Key, Any]],
    inputs: Inputs,
) -> Cell:
    composed, spec, profile, share = _modelled(composed, combo, matrix, shared, inputs)
    preset, preset_source, notes = _cell_preset(spec, composed, inputs.miles_root)
    preset, preset_source = _with_model_args(preset, preset_source, spec, composed)
    identity = cell_id(name, combo, matrix)
    skip, xfail, timeout = adjust.control(matrix, combo, spec, profile, composed, inputs.today, identity)
    return Cell(
        id=identity,
        spec=spec,
        profile=profile,
        preset=preset,
        conventions=conventions(spec.miles_version),
        composed=composed,
        preset_source=preset_source,
        launchers=inputs.launchers,
        hf_config=_hf_config(spec.args.ckpt.get("hf-checkpoint"), inputs.memo),
        axes=dict(combo),
        skip=skip,
        xfail=xfail,
        timeout=timeout,
        flags=(catalog := _catalog(spec, preset, composed, inputs.miles_root)),
        step_presets=_step_presets(spec, composed),
        share=share,
        miles_root=inputs.miles_root,
        notes=(*notes, *_skipped_flags(catalog, composed)),
    )


def _skipped_flags(choice: flags.Choice, composed: Composed) -> tuple[Problem, ...]:
    """A warning for each argument of the checkout's parser whose option is no flag name: left out of the
    catalog, said (its text escaped) with the file and line it was read at."""
    where = composed.location(("miles_version",))
    return tuple(
        Problem("flag-name", f"the checkout's {skipped}", "miles_version", (where,), "warning")
        for skipped in choice.catalog.skipped
    )


def _catalog(spec: Spec, preset: ModelPreset, composed: Composed, miles_root: Path | None) -> flags.Choice:
    """The flag catalog of the cell's miles, with the flags its custom functions add to miles' parser."""
    choice = flags.choose(spec.miles_version, miles_root, composed.location(("miles_version",)))
    named = loaded.named({**preset.model_args, **spec.args.flags()}, spec.env)
    return flags.with_functions(choice, named, miles_root)


def _modelled(
    composed: Composed, combo: Combo, matrix: Matrix, shared: dict[Any, dict[Key, Any]], inputs: Inputs
) -> tuple[Composed, Spec, HardwareProfile, hardware.Share]:
    """One combination's spec: its ``adjust:`` overlays applied, every ``${...}`` resolved (with the
    profile's data, the runner's share and the visible devices), then modelled."""
    adjustments = adjust.applicable(matrix, combo, composed)
    composed = adjust.with_overlays(composed, adjustments, combo, inputs.documents)
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
        "profile": lambda _: _profile_data(profile, inputs.memo),
        "runner": lambda _: {"gpus_per_node": share.gpus},
        "visible_devices": lambda resolver: _visible_devices(resolver, share),
    }
    values = {k: v for k, v in resolve(composed, derived, same, varying).data.items() if k != "matrix"}
    spec = build(Spec, values, composed, {"launchers": inputs.launchers})
    return composed, spec, profile, share


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


def _profile_data(profile: HardwareProfile, memo: Memo) -> dict[str, Any]:
    """A profile as data for ${profile.*}, dumped once per profile."""
    if id(profile) not in memo.profiles:
        memo.profiles[id(profile)] = (profile, profile.model_dump())
    return memo.profiles[id(profile)][1]


MAX_CONFIG_BYTES = 1 << 20  # a model's config.json is a few KiB
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


def _hf_config(checkpoint: Any, memo: Memo) -> dict[str, Any] | None:
    """The checkpoint's config.json when it exists on this machine (for rule L12)."""
    path = Path(str(checkpoint)) / "config.json" if checkpoint else None
    try:
        stat = path.stat() if path else None
    except OSError:
        return None
    if not path or not stat:
        return None
    key = (path, stat.st_mtime_ns, stat.st_size)
    if key not in memo.hf_configs:
        memo.hf_configs[key] = _read_hf_config(path)
    return memo.hf_configs[key]


def _read_hf_config(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        config = json_data(file_bytes(path, MAX_CONFIG_BYTES), MAX_CONFIG_BYTES)
    except (OSError, ValueError) as exc:
        raise SpecError.one("L12", f"cannot read {path}: {exc}", key="args.ckpt.hf-checkpoint") from None
    return config if isinstance(config, dict) else None


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
