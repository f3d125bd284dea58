"""roundtrip: does the imported cell render what the script launches?

Compared as ``run-matrix render --format json`` shows a launch: the train script, the GPUs
``ray start`` gets, MODEL_ARGS token for token, the train args as a flag -> values mapping
(values as written: ``0.70`` is not ``0.7``), and the runtime env key for key — a value render
leaves to a run-time probe (``NCCL_NVLS_ENABLE``) matches whatever the probe said during the
recording. With ``WANDB_API_KEY`` set, the W&B flags must agree too, but for ``--wandb-group``:
upstream names the run by the clock, run-matrix by the cell. The checks the script calls after the
launch must be the cell's ``verify:`` entries, in order, with the same arguments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.cells.cell import Cell
from runner.importer.target import RUN_NAMED_BY_CLOCK, Target, flag_map
from runner.launch import checkout
from runner.launch.render import Context, Launch, preset_tokens, render
from runner.launch.runtime_env import MILES_ROOT_REFERENCE
from runner.launch.steps import overridden

WANDB_KEY = "WANDB_API_KEY"


def differences(cell: Cell, target: Target, miles_root: Path | None, trust: bool = False) -> list[str]:
    """Each way the cell's render differs from the script's launch; none when the round trip holds."""
    context = _context(cell, miles_root, trust)
    launch = render(cell, context)
    found = target.launched
    wrong = []
    if launch.train_script != found.train_script:
        wrong.append(f"train script: renders {launch.train_script}, the script launches {found.train_script}")
    if launch.num_gpus_per_node != found.num_gpus_per_node:
        wrong.append(
            f"--num-gpus: renders {launch.num_gpus_per_node}, the script gives {found.num_gpus_per_node}"
        )
    launched_model_args = _model_args(cell, target, context)
    if list(launch.model_args) != list(launched_model_args):
        ours = flag_map(launch.model_args)
        wrong += _mapping(f"MODEL_ARGS of {cell.spec.model.type}", ours, flag_map(launched_model_args)) or [
            f"MODEL_ARGS of {cell.spec.model.type}: the same flags in another order"
        ]
    wrong += _mapping("train arg", flag_map(launch.train_args), flag_map(found.train_args))
    wrong += _env(launch, found.env)
    if target.wandb_args:
        wandb = render(cell, Context({WANDB_KEY: "set"}, context.miles_root, context.model_args))
        ours = {k: v for k, v in flag_map(_added(wandb, launch)).items() if k != RUN_NAMED_BY_CLOCK}
        theirs = flag_map(target.wandb_args)
        wrong += _mapping("W&B flag", ours, theirs)
    return wrong + _verify(cell, target)


def _context(cell: Cell, miles_root: Path | None, trust: bool) -> Context:
    if miles_root is None:
        return Context({}, MILES_ROOT_REFERENCE)
    if cell.spec.model.type is None:  # FSDP: no MODEL_ARGS
        return Context({}, str(miles_root.resolve()))
    found = checkout.model_args(miles_root, cell.spec.model.type, trust)
    tokens = overridden(found.tokens, cell.spec.model.args) if found and found.tokens else None
    return Context({}, str(miles_root.resolve()), tokens)


def _model_args(cell: Cell, target: Target, context: Context) -> tuple[str, ...]:
    """What the script's submission passes: MODEL_ARGS written out, else those of the type it sources."""
    if target.launched.model_args is not None:
        return target.launched.model_args
    if target.launched.model_type != cell.spec.model.type:
        return ()
    return tuple(context.model_args) if context.model_args is not None else preset_tokens(cell)


def _added(wandb: Launch, plain: Launch) -> list[str]:
    """The words render adds to the train args when WANDB_API_KEY is set."""
    words, base = list(wandb.train_args), list(plain.train_args)
    for start in range(len(words)):
        if words[:start] + words[start + len(words) - len(base) :] == base:
            return words[start : start + len(words) - len(base)]
    return words


def _mapping(what: str, ours: dict[str, tuple[str, ...]], theirs: dict[str, tuple[str, ...]]) -> list[str]:
    wrong = []
    for name in dict.fromkeys([*theirs, *ours]):
        if ours.get(name) != theirs.get(name):
            ours_shown, theirs_shown = _shown(ours.get(name)), _shown(theirs.get(name))
            wrong.append(f"{what} --{name}: renders {ours_shown}, the script gives {theirs_shown}")
    return wrong


def _env(launch: Launch, theirs: dict[str, str]) -> list[str]:
    wrong = []
    for name in dict.fromkeys([*theirs, *launch.env]):
        ours = launch.env.get(name)
        probed = name in launch.probes and ours == f"${{{name}}}" and name in theirs
        if ours != theirs.get(name) and not probed:
            wrong.append(f"env {name}: renders {ours!r}, the script sets {theirs.get(name)!r}")
    return wrong


def _verify(cell: Cell, target: Target) -> list[str]:
    """The checks after the launch, in order, each its function and its arguments."""
    ours = [(name, check.call, check.args) for name, check in cell.spec.verify.items()]
    theirs = [(name, check["call"], check["args"]) for name, check in target.verify.items()]
    if ours == theirs:
        return []
    return [f"verify: renders {_checks(ours)}, the script calls {_checks(theirs)}"]


def _checks(checks: list[tuple[str, str, dict[str, Any]]]) -> str:
    return (
        "; ".join(f"{name}: {call}({json.dumps(args, sort_keys=True)})" for name, call, args in checks)
        or "none"
    )


def _shown(values: tuple[str, ...] | None) -> str:
    if values is None:
        return "nothing"
    return " ".join(values) if values else "the switch"
