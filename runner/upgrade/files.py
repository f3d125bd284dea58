"""The overlay an upgrade writes: extends the spec, sets the new ``miles_version``, renames and
deletes flags (each with its reason in ``why:``), and leaves each open decision in ``todo:``; as YAML
through import's writer, which reads back every value it writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import schemas
from runner.emit import Expression, dump
from runner.load import DELETE
from runner.upgrade.plan import UpgradePlan

TODO_NOTE = (
    "TODO(upgrade): decide these (upstream's help texts and change are quoted), then delete the entries"
)


def overlay_text(steps: UpgradePlan, follows: list[str], source: Path, out: Path) -> str:
    data: dict[str, Any] = {"extends": _relative(source, out), "miles_version": steps.target.version}
    for change in steps.changes:
        place = data.setdefault("args", {})
        for name in change.key[1:-1]:
            place = place.setdefault(name, {})
        place[change.key[-1]] = DELETE if change.value is None else _value(change.value)
    if steps.todo:
        data["todo"] = dict(steps.todo)
    why = {
        "miles_version": f"moved from miles {steps.source} by `run-matrix upgrade`; with it "
        + "; ".join(follows)
    }
    data["why"] = {**why, **_reasons(steps)}
    header = [
        f"yaml-language-server: $schema={_relative(Path(schemas.__file__).parent / 'spec.schema.json', out)}",
        f"{source.stem} (miles {steps.source}) moved to miles {steps.target.version} by run-matrix upgrade:",
        "each change says why below (from the flag catalogs and miles/upgrades.yaml). Review the TODOs.",
    ]
    return dump(data, {("todo",): TODO_NOTE}, header)


def _reasons(steps: UpgradePlan) -> dict[str, str]:
    keys: dict[str, list[str]] = {}
    for change in steps.changes:
        named = keys.setdefault(change.reason, [])
        if change.dotted not in named:
            named.append(change.dotted)
    return {", ".join(names): reason for reason, names in keys.items()}


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return Expression(value)
    if isinstance(value, list):
        return [_value(item) for item in value]
    return value


def _relative(path: Path, start: Path) -> str:
    return Path(os.path.relpath(path.resolve(), start.resolve().parent)).as_posix()
