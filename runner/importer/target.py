"""target: one recorded ``execute_train`` call -> what one cell of the imported spec must hold.

The spec keys come from the call as the script made it (its flag variables, its own env vars,
its prepare commands); the launch they must render comes from the commands the call runs
(``launch.py``). Secrets written as literals are replaced by references, on both sides. Pure.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner.errors import Location, SpecError
from runner.importer import groups, launch_reads, prepare, shell
from runner.importer.events import refused
from runner.importer.knowledge import Knowledge
from runner.importer.launch import Launched, launched
from runner.importer.notes import Note
from runner.importer.traced import Call, Run
from runner.knowledge import bundled, checkout_preset, launchers, preset_data
from runner.launch.runtime_env import MILES_ROOT_REFERENCE
from runner.launch.steps import tokens
from runner.spec.emit import flag_value
from schemas import GROUPS, Group, LaunchConventions, ModelPreset, calls
from schemas.launchers import Launchers, either
from schemas.values import flag_tokens

RUN_NAMED_BY_CLOCK = "wandb-group"


@dataclass(frozen=True)
class Target:
    """Every spec key the import owns for one cell, and the launch that cell must render."""

    model_type: str | None  # None: the FSDP backend
    gpus_per_node: int
    script: str  # a launcher of miles/launchers.yaml
    master_addr: str
    megatron_path: str | None  # execute_train's, where it is not the conventions'
    before_submit: list[str | dict[str, Any]]  # miles' hook's service, or the test's hook ({call, args})
    flags: dict[str, Any]  # flag -> spec value, in launch order
    group_of: dict[str, Group]
    source_of: dict[str, str]  # flag -> the script variable it came from ("" when inline)
    env: dict[str, str]
    prepare: dict[str, prepare.Step]
    wandb_project: str | None
    launched: Launched  # what the script launches, secrets as references
    wandb_args: tuple[str, ...]  # the flags the script adds when WANDB_API_KEY is set
    verify: dict[str, dict[str, Any]]  # name -> {call, args}: the checks the script runs after it
    model_args: dict[str, Any]  # MODEL_ARGS values other than the preset's (model.args)
    at: Location = field(compare=False)  # the test's execute_train call: where a refusal of it points


def target_of(
    run: Run,
    call: Call,
    conventions: LaunchConventions,
    known: Knowledge,
    earlier: Sequence[tuple[Call, Target]] = (),
) -> tuple[Target, list[Note]]:
    """The target of one call, and what the spec will not hold (notes); ``earlier``: the script's
    calls before it, with their targets."""
    model_type, checkout_preset_of, type_notes = _model_type(call, run.root)
    script = _script(call, run, launchers.shipped())
    found = launched(call.commands, call.args["train_args"], run.root, conventions.secrets, call.at)
    found, wandb_args = _without_wandb(found, run.wandb)
    words, notes = _secret_flags(found, known, call.at)
    found, secret_notes = _secret_env(found, conventions, call.at)
    flags, group_of, source_of = _grouped(words, call, known, notes)
    env, env_notes = _env(found, call, conventions, run.root)
    project = next((wandb_args[i + 1] for i, w in enumerate(wandb_args[:-1]) if w == "--wandb-project"), None)
    steps, step_notes = prepare.steps(call.prepare, run.root, model_type, conventions.megatron_path)
    written = _written(call, earlier, run.root, conventions, model_type)
    steps, kept = launch_reads.kept_steps(steps, written)
    step_notes += [Note(message, call.at) for message in kept]
    built = Target(
        model_type,
        found.num_gpus_per_node,
        script,
        found.env.get("MASTER_ADDR", "127.0.0.1"),
        _megatron_path(call, conventions),
        list(call.args.get("before_submit") or []),
        flags,
        group_of,
        source_of,
        env,
        steps,
        project,
        replace(found, train_args=words),
        wandb_args,
        _verify(call),
        _model_args(found, model_type, conventions, call.at, checkout_preset_of),
        call.at,
    )
    notes += _model_args_note(built, call.at)
    return built, type_notes + notes + secret_notes + env_notes + step_notes


def _written(
    call: Call,
    earlier: Sequence[tuple[Call, Target]],
    root: str,
    conventions: LaunchConventions,
    model_type: str | None,
) -> list[launch_reads.Written]:
    """The folders the earlier launches write, each with the prepare steps the script runs after it."""
    found = []
    for before, built in earlier:
        after = call.prepare[len(before.prepare) :]  # a call's prepare: everything run since the start
        then, _ = prepare.steps(after, root, model_type, conventions.megatron_path)
        for flag, folder in launch_reads.outputs(built.launched.train_args, conventions.output_flags):
            found.append(launch_reads.Written(flag, folder, tuple(then.values())))
    return found


def _model_args_note(built: Target, at: Location) -> list[Note]:
    if not built.model_args:
        return []
    changed = ", ".join(
        f"--{name} {' '.join(flag_tokens(name, v)[1:])}" for name, v in built.model_args.items()
    )
    return [
        Note(
            f"the script launches the MODEL_ARGS of {built.model_type} with {changed} (a knob of the model"
            " script, such as MODEL_ARGS_NUM_LAYERS): written as model.args",
            at,
        )
    ]


def _model_args(
    found: Launched,
    model_type: str | None,
    conventions: LaunchConventions,
    at: Location,
    checkout_preset_of: ModelPreset | None = None,
) -> dict[str, Any]:
    """The values of the MODEL_ARGS the script launches that differ from the preset's (shipped, else
    ``checkout_preset_of``), where the flags are the preset's in its order (a model script's knob,
    such as MODEL_ARGS_NUM_LAYERS=4); any other difference is left to the round trip to name."""
    if found.model_args is None or model_type is None:
        return {}
    preset = checkout_preset_of or bundled.load_preset(model_type, at, at.file, conventions.miles_commit)[0]
    ours, theirs = flag_map(tokens(preset)), flag_map(found.model_args)
    if list(ours) != list(theirs):
        return {}
    return {name: flag_value(values) for name, values in theirs.items() if values != ours[name]}


def _verify(call: Call) -> dict[str, dict[str, Any]]:
    """Each check the script calls after the launch, named by its function (``compare-metrics``,
    then ``compare-metrics-2`` for a second call)."""
    named: dict[str, dict[str, Any]] = {}
    for check in call.checks:
        stem = calls.function_of(check.call).strip("_").replace("_", "-")
        names = itertools.chain([stem], (f"{stem}-{k}" for k in itertools.count(2)))
        name = next(n for n in names if n not in named)
        named[name] = {"call": check.call, "args": check.args}
        if check.launched_by:
            named[name]["launched_by"] = list(check.launched_by)
    return named


def _script(call: Call, run: Run, table: Launchers) -> str:
    """The launcher the call's ``train_script`` names (as miles' tests do: relative, or in the checkout)."""
    given = str(call.args["train_script"])
    for script in table.scripts:
        if given in (script, f"{run.root}/{script}"):
            return script
    raise refused(call.at, f"launches {given}; a spec launches {either(table.scripts)}")


def _megatron_path(call: Call, conventions: LaunchConventions) -> str | None:
    given = str(call.args.get("megatron_path") or conventions.megatron_path)
    return None if given == conventions.megatron_path else given


def _model_type(call: Call, root: str) -> tuple[str | None, ModelPreset | None, list[Note]]:
    """The Megatron model type (a preset run-matrix ships, else one the checkout at ``root`` has:
    that preset, with a note saying so), or None for the FSDP backend."""
    model_type = call.args["megatron_model_type"]
    if model_type is None:
        return None, None, []
    try:
        preset_data.choose(str(model_type), None, call.at)
    except SpecError:  # unknown: an error naming the presets there are, unless the checkout has it
        found = checkout_preset.preset(str(model_type), Path(root), call.at) if Path(root).is_dir() else None
        if found is None:
            raise
        return str(model_type), found[0], [Note(found[1].message, call.at)]
    return str(model_type), None, []


def _without_wandb(found: Launched, texts: Sequence[str]) -> tuple[Launched, tuple[str, ...]]:
    """The launch less the W&B flags of get_default_wandb_args (render adds its own), and those flags
    less ``--wandb-group``: upstream names the run by the clock, so no two recordings agree on it."""
    words = list(found.train_args)
    for text in texts:
        wandb = shell.split(text)
        for start in range(len(words) - len(wandb) + 1):
            if wandb and words[start : start + len(wandb)] == wandb:
                del words[start : start + len(wandb)]
                kept = [(n, v) for n, v in groups.flags(wandb) if n != RUN_NAMED_BY_CLOCK]
                return replace(found, train_args=tuple(words)), tuple(
                    w for n, v in kept for w in (f"--{n}", *v)
                )
    return found, ()


def _secret_flags(found: Launched, known: Knowledge, at: Location) -> tuple[tuple[str, ...], list[Note]]:
    words, notes = list(found.train_args), []
    for index, word in enumerate(words[:-1]):
        name = known.secret_flags.get(word[2:]) if word.startswith("--") else None
        if name and words[index + 1] != f"${{{name}}}":
            words[index + 1] = f"${{{name}}}"
            notes.append(
                Note(f"{word} is a literal secret in the script; the spec reads ${{{name}}} instead", at)
            )
    return tuple(words), notes


def _grouped(
    words: Sequence[str], call: Call, known: Knowledge, notes: list[Note]
) -> tuple[dict[str, Any], dict[str, Group], dict[str, str]]:
    values: dict[str, tuple[str, ...]] = {}
    group_of: dict[str, Group] = {}
    source_of: dict[str, str] = {}
    try:
        segments = groups.segments(words, call.variables)
    except ValueError as exc:
        raise refused(call.at, f"launches train args that do not start with a flag: {exc}") from None
    for segment in segments:
        for name, given in segment.flags:
            if name in values and values[name] != given:
                notes.append(_overridden(name, values[name], source_of[name], given, segment.source, call.at))
                values[name] = given  # argparse keeps the last
            if name not in values:
                values[name], group_of[name], source_of[name] = (
                    given,
                    _group(segment.source, known),
                    segment.source,
                )
    return {name: flag_value(given) for name, given in values.items()}, group_of, source_of


def _overridden(
    name: str, first: tuple[str, ...], first_in: str, last: tuple[str, ...], last_in: str, at: Location
) -> Note:
    return Note(
        f"--{name} is given twice ({' '.join(first) or 'switch'} in {first_in or 'train_args'},"
        f" {' '.join(last) or 'switch'} in {last_in or 'train_args'}); miles' argparse keeps the last,"
        " and so does the spec",
        at,
    )


def _group(source: str, known: Knowledge) -> Group:
    stem = source.lower().removesuffix("_args")
    for group in GROUPS:
        if group == stem:
            return group
    return known.groups.get(stem, "misc")


def _env(
    found: Launched, call: Call, conventions: LaunchConventions, root: str
) -> tuple[dict[str, str], list[Note]]:
    """The test's own env vars: what it passes, and any default of miles it changes; the checkout's
    path in a value as ``${MILES_ROOT}`` (render and run put the checkout there)."""
    given = set(call.args.get("extra_env_vars") or {})
    fill = {
        "master_addr": found.env.get("MASTER_ADDR", "127.0.0.1"),
        "megatron_path": _megatron_path(call, conventions) or conventions.megatron_path,
        "miles_root": root,
    }
    defaults = {d.name: d for d in conventions.runtime_env}
    env, notes = {}, []
    for name, value in found.env.items():
        default = defaults.get(name)
        if default is None or name in given:
            env[name] = _unrooted(value, root)
        elif default.value is not None and not default.from_caller and default.value.format(**fill) != value:
            env[name] = _unrooted(value, root)
            shown = default.value.format(**fill)
            notes.append(Note(f"the launch sets {name}={value} where miles/launch/ says {shown}", call.at))
    return env, notes


def _unrooted(value: str, root: str) -> str:
    """``value`` with the checkout's path (a whole path or a path's start) as ``${MILES_ROOT}``."""
    if not root.strip("/"):
        return value
    return re.sub(re.escape(root.rstrip("/")) + r"(?=$|[/:\s'\"=,;])", lambda _: MILES_ROOT_REFERENCE, value)


def _secret_env(found: Launched, conventions: LaunchConventions, at: Location) -> tuple[Launched, list[Note]]:
    """A secret the script gives the job as a literal becomes a reference (in the launch compared too)."""
    env, notes = dict(found.env), []
    for name in conventions.secrets:
        if name in env and env[name] != f"${{{name}}}":
            env[name] = f"${{{name}}}"
            notes.append(
                Note(f"env {name} is a literal secret in the script; the spec reads ${{{name}}}", at)
            )
    return replace(found, env=env), notes


def flag_map(words: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """``--flag v1 v2 --switch`` -> {flag: (v1, v2), switch: ()}."""
    return {name: values for name, values in groups.flags(words)}
