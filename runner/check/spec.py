"""G*: spec hygiene — one group per flag, model args, secrets, integer flags."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import newest_first, problem, rule
from runner.errors import Location, Problem

_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
INTEGER_FLAGS = (
    "tensor-model-parallel-size",
    "pipeline-model-parallel-size",
    "context-parallel-size",
    "expert-model-parallel-size",
    "expert-tensor-parallel-size",
    "actor-num-nodes",
    "actor-num-gpus-per-node",
    "critic-num-nodes",
    "critic-num-gpus-per-node",
    "num-gpus-per-node",
    "rollout-num-gpus",
    "rollout-num-gpus-per-engine",
    "sglang-dp-size",
    "sglang-ep-size",
    "sglang-pp-size",
    "global-batch-size",
    "micro-batch-size",
    "num-layers",
    "num-attention-heads",
    "num-experts",
)


@rule("G1")
def flag_in_one_group(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A flag lives in exactly one group; miles would get it twice.

    Source: run-matrix spec hygiene (a spec's `args` groups)
    """
    seen: dict[str, str] = {}
    for group, flags in cell.spec.args.groups():
        for name in flags:
            if name in seen:
                first = seen[name]
                key, places = newest_first(
                    cell,
                    [
                        replace(cell.location("args", group, name), key=f"args.{group}.{name}"),
                        replace(cell.location("args", first, name), key=f"args.{first}.{name}"),
                    ],
                )
                yield Problem(
                    "G1",
                    f"--{name} is set in two groups, args.{first} and args.{group}",
                    key,
                    places,
                    hint=f"keep it in one group (delete the other with `{name}: !delete`).",
                )
            seen.setdefault(name, group)


@rule("G2")
def model_args_not_contradicted(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A test flag that repeats a MODEL_ARGS flag with another value wins silently.

    Source: run-matrix spec hygiene; the test's flags follow MODEL_ARGS on the command line (miles'
    execute_train), so argparse keeps them
    """
    flags = cell.spec.args.flags()
    for name in cell.preset.model_args.keys() & flags.keys():
        if flags[name] != cell.preset.model_args[name]:
            yield Problem(
                "G2",
                f"--{name} {flags[name]} contradicts MODEL_ARGS of {cell.preset.type}"
                f" (--{name} {cell.preset.model_args[name]}); argparse keeps the last",
                f"args.{_group(cell, name)}.{name}",
                (
                    cell.location("args", _group(cell, name), name),
                    replace(cell.preset_source.location(("model_args", name)), key=f"model_args.{name}"),
                ),
                severity="warning",
            )


@rule("G3")
def secrets_are_references(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A secret is written as ${NAME}, never as its value (the value is never printed either).

    Source: run-matrix spec hygiene; the secret flags are `secret_flags` of the launch conventions
    (miles/launch/)
    """
    for name in cell.conventions.secrets:
        value = cell.spec.env.get(name)
        if value is not None and not _REFERENCE.match(str(value)):
            yield Problem(
                "G3",
                f"env.{name} holds a literal secret; it would be printed and stored in reports",
                f"env.{name}",
                (cell.location("env", name),),
                hint=f"write $${{{name}}} and set {name} in the environment that runs run-matrix.",
            )
    for group, flags in cell.spec.args.groups():
        for name in flags.keys() & set(cell.conventions.secret_flags):
            value = flags[name]
            if value is not None and value is not False and not _REFERENCE.match(str(value)):
                variable = cell.conventions.secret_flags[name]
                yield Problem(
                    "G3",
                    f"--{name} holds a literal secret; it would be printed and stored in reports",
                    f"args.{group}.{name}",
                    (cell.location("args", group, name),),
                    hint=f"write $${{{variable}}} and set {variable} where run-matrix runs.",
                )


@rule("G4")
def integer_flags(cell: Cell, _: Layout) -> Iterator[Problem]:
    """Counts are integers of at least 1; anything else would fail miles' argparse or its start-up.

    Source: the int flags of miles miles/utils/arguments.py and Megatron-LM
    megatron/training/arguments.py; a count of 0 breaks their start-up arithmetic
    """
    for name in bad_counts(cell):
        value = cell.flag(name)
        if _integer(value):
            yield problem("G4", cell, (name,), f"--{name} is a count of at least 1, got {value}")
        else:
            yield problem("G4", cell, (name,), f"--{name} takes an integer, got {value!r}")


def bad_counts(cell: Cell) -> list[str]:
    """The count flags the cell sets to something other than an integer of at least 1."""
    values = {name: cell.flag(name) for name in INTEGER_FLAGS}
    return [n for n, v in values.items() if v is not None and not (_integer(v) and int(str(v)) >= 1)]


def _integer(value: object) -> bool:
    return not isinstance(value, bool) and str(value).lstrip("-").isdigit()


def _group(cell: Cell, name: str) -> str:
    return next(group for group, flags in cell.spec.args.groups() if name in flags)


@rule("G5")
def why_not_names_unset_keys(cell: Cell, _: Layout) -> Iterator[Problem]:
    """`why_not:` explains an absence; a key that is set after all makes the explanation stale.

    Source: run-matrix spec hygiene
    """
    if not cell.spec.why_not:
        return  # most cells: no dump of the whole spec to look nothing up in
    data = cell.spec.model_dump(mode="python", exclude_defaults=False)
    for dotted_key in cell.spec.why_not:
        node: object = data
        for part in _split_key(dotted_key, data):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            yield Problem(
                "G5",
                f"why_not: explains why {dotted_key} is unset, but it is set to {node!r}",
                f"why_not.{dotted_key}",
                (cell.location("why_not", dotted_key), *_written(cell, dotted_key)),
                "warning",
                "delete the why_not entry (`why_not: {KEY: !delete}` in an overlay), or the key",
            )


def _split_key(dotted_key: str, data: dict[str, object]) -> list[str]:
    """args.misc.moe-enable-deepep -> [args, misc, moe-enable-deepep]; env names keep their dots."""
    head, _, rest = dotted_key.partition(".")
    if head == "args":
        group, _, flag = rest.partition(".")
        return [head, group, flag]
    return [head, rest] if rest else [head]


def _written(cell: Cell, dotted_key: str) -> tuple[Location, ...]:
    key = tuple(_split_key(dotted_key, {}))
    return (cell.composed.location(key),) if key in cell.composed.provenance else ()


@rule("G6")
def todos_are_open(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A `todo:` entry is a decision nobody has made yet.

    Source: run-matrix spec hygiene
    """
    for key, note in cell.spec.todo.items():
        yield Problem(
            "G6",
            f"left for a person: {note}",
            f"todo.{key}",
            (cell.location("todo", key),),
            "warning",
            "decide, then delete the todo entry",
        )


@rule("G7")
def megatron_needs_a_model_type(cell: Cell, _: Layout) -> Iterator[Problem]:
    """Megatron builds the model from MODEL_ARGS; only FSDP reads the HF checkpoint alone.

    Source: miles scripts/models/ (each model type's MODEL_ARGS, presets in miles/models/); the FSDP
    backend builds from --hf-checkpoint
    """
    backend = cell.flag("train-backend", "megatron")
    if backend == "megatron" and not cell.spec.model.type:
        yield Problem(
            "G7",
            "the Megatron backend needs model.type: its MODEL_ARGS describe the model",
            "model.type",
            (cell.location("model"),),
            hint="set model.type (a preset in miles/models/), or train-backend: fsdp in args",
        )
