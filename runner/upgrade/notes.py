"""What follows a new ``miles_version`` by itself, said so the overlay's reason names it: the model
preset (MODEL_ARGS) of the spec's model type, miles' launch conventions, the hardware's stack."""

from __future__ import annotations

from typing import Any

import yaml

from runner.cells import hardware
from runner.errors import RunMatrixError
from runner.knowledge import bundled, preset_data
from runner.upgrade.subject import Subject

MAX_NAMED = 6  # changed MODEL_ARGS or convention fields named before "and N more"


def follows(moved: Subject, old: str, new: str) -> list[str]:
    """One sentence per piece of knowledge that the version change swaps, with what changed."""
    return [_preset(moved, old, new), _conventions(old, new), _stack(moved, new)]


def _preset(moved: Subject, old: str, new: str) -> str:
    model = moved.composed.data.get("model")
    model = model.get("type") if isinstance(model, dict) else None
    if not model:
        return "no model preset (FSDP reads the HF checkpoint)"
    try:
        before, after = (_model_args(str(model), version, moved) for version in (old, new))
    except RunMatrixError:
        return f"the model preset {model} has no shipped version at miles {new}: check model.type"
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    what = "MODEL_ARGS unchanged" if not changed else f"MODEL_ARGS changed: {_named(changed)}"
    return f"the model preset {model} is miles {new}'s ({what})"


def _model_args(model: str, version: str, moved: Subject) -> dict[str, Any]:
    chosen = preset_data.choose(model, version, moved.location("model", "type"))
    data = yaml.safe_load(chosen.path.read_text(encoding="utf-8")) or {}
    args = data.get("model_args", {}) if isinstance(data, dict) else {}
    return args if isinstance(args, dict) else {}


def _conventions(old: str, new: str) -> str:
    before, after = (bundled.conventions(v).model_dump() for v in (old, new))
    changed = sorted(
        k for k in before.keys() | after.keys() if k != "miles_commit" and before.get(k) != after.get(k)
    )
    what = "unchanged" if not changed else f"changed: {_named(changed)}"
    return f"miles' launch conventions are miles {new}'s ({what}; `run-matrix render` shows the command)"


def _stack(moved: Subject, new: str) -> str:
    if moved.is_base:
        return f"each spec that extends it runs on its hardware's stack of miles {new}"
    profile = moved.cells[0].profile
    return hardware.stack_reason(hardware.on_stack(hardware.named(profile.name, "hardware"), new), new)


def _named(names: list[str]) -> str:
    more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
    return ", ".join(names[:MAX_NAMED]) + more
