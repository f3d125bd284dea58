"""residual: what a file must still say so that a resolved cell becomes its target. Pure.

The answer is an edit in the spec's own shape: keys to set, and ``DELETE`` for keys to remove
(written ``!delete``). A flag is compared by the words it renders (``0.70`` is not ``0.7``);
a flag already set in some group is changed in that group, so a flag never lives in two.
Prepare steps are matched by content first, then by name; a step the script does not run is
deleted only when the import itself wrote it (a base's steps may be ones the recorder cannot
see, such as a config patch in plain Python).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner.importer.prepare import STEP
from runner.importer.target import Target
from runner.spec.load import DELETE
from schemas import GROUPS, Spec
from schemas.values import flag_tokens

Edit = dict[str, Any]


def residual(spec: Spec, target: Target, hardware: str | None, own_steps: set[str]) -> Edit:
    edit: Edit = {}
    if hardware is not None and spec.hardware != hardware:
        edit["hardware"] = hardware
    if spec.model.type != target.model_type:  # FSDP: no type, so a base's is deleted
        edit["model"] = {"type": target.model_type if target.model_type is not None else DELETE}
    if model_args := data_residual(spec.model.args, target.model_args):
        edit.setdefault("model", {})["args"] = model_args
    cluster = {
        "nodes": (spec.cluster.nodes, 1),
        "gpus_per_node": (spec.cluster.gpus_per_node, target.gpus_per_node),
    }
    launch = {
        "script": (spec.launch.script, target.script),
        "master_addr": (spec.launch.master_addr, target.master_addr),
        "megatron_path": (spec.launch.megatron_path, target.megatron_path),
        "before_submit": (
            [
                e if isinstance(e, str) else e.model_dump(exclude_defaults=True)
                for e in spec.launch.before_submit
            ],
            target.before_submit,
        ),
    }
    for name, pairs in (("cluster", cluster), ("launch", launch)):
        changed = {
            key: DELETE if wanted is None else wanted for key, (old, wanted) in pairs.items() if old != wanted
        }
        if changed:
            edit[name] = changed
    if target.wandb_project and spec.wandb.project != target.wandb_project:
        edit["wandb"] = {"project": target.wandb_project}
    for name, part in (
        ("prepare", _steps(spec, target, own_steps)),
        ("args", _flags(spec, target)),
        ("env", _env(spec.env, target.env)),
        ("verify", _verify(spec, target)),
    ):
        if part:
            edit[name] = part
    return edit


def skeleton(target: Target, hardware: str | None) -> Edit:
    """The keys every spec needs before it can be resolved at all."""
    edit: Edit = {} if hardware is None else {"hardware": hardware}
    if target.model_type is not None:
        edit["model"] = {"type": target.model_type}
    return {**edit, "cluster": {"gpus_per_node": target.gpus_per_node}, "launch": {"script": target.script}}


def _flags(spec: Spec, target: Target) -> Edit:
    current = {name: (group, value) for group, flags in spec.args.groups() for name, value in flags.items()}
    edits: dict[str, Edit] = {}
    for name, value in target.flags.items():
        group, old = current.get(name, (target.group_of[name], None))
        if old is None or flag_tokens(name, old) != flag_tokens(name, value):
            edits.setdefault(group, {})[name] = value
    for name, (group, old) in current.items():
        if name not in target.flags and flag_tokens(name, old):
            edits.setdefault(group, {})[name] = DELETE
    return {group: edits[group] for group in GROUPS if group in edits}


def _env(current: Mapping[str, str], wanted: Mapping[str, str]) -> Edit:
    edit: Edit = {name: value for name, value in wanted.items() if current.get(name) != value}
    return edit | {name: DELETE for name in current if name not in wanted}


def _verify(spec: Spec, target: Target) -> Edit:
    """The checks after the launch, each whole as the script calls it; any other goes."""
    current = {  # launched_by only where a check has it, as import writes it
        name: {key: value for key, value in check.model_dump().items() if key != "launched_by" or value}
        for name, check in spec.verify.items()
    }
    edit: Edit = {}
    for name, wanted in target.verify.items():
        if name not in current:
            edit[name] = wanted
        elif changed := data_residual(current[name], wanted):
            edit[name] = changed
    return edit | {name: DELETE for name in current if name not in target.verify}


def _steps(spec: Spec, target: Target, own: set[str]) -> Edit:
    current = {
        name: step.model_dump(exclude_defaults=True) | {"kind": step.kind}
        for name, step in spec.prepare.items()
    }
    edit: Edit = {}
    matched = set()
    for name, step in target.prepare.items():
        wanted = STEP.validate_python(step).model_dump(exclude_defaults=True) | {"kind": step["kind"]}
        same = next((n for n, c in current.items() if n not in matched and same_data(c, wanted)), None)
        if same is not None:
            matched.add(same)
        elif name in current:
            matched.add(name)
            edit[name] = data_residual(current[name], step)
        else:
            edit[name] = step
    edit |= {name: DELETE for name in current if name not in matched and name in own}
    return edit


def data_residual(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> Edit:
    """What ``wanted`` has that ``current`` lacks or holds otherwise; ``DELETE`` for what only it has."""
    edit: Edit = {}
    for name, value in wanted.items():
        old = current.get(name)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            if sub := data_residual(old, value):
                edit[name] = sub
        elif old is None or not same_data(old, value):
            edit[name] = value
    return edit | {name: DELETE for name in current if name not in wanted}


def same_data(a: Any, b: Any) -> bool:
    """Equal as a spec renders them: mappings and lists item by item, other values by their text."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_data(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_data(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return not isinstance(a, (Mapping, list)) and not isinstance(b, (Mapping, list)) and str(a) == str(b)
