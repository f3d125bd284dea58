"""The overlay an upgrade writes: extends the spec, sets the new ``miles_version``, renames and
deletes flags (each with its reason in ``why:``), and leaves each open decision in ``todo:``; as YAML
through import's writer (which reads back every value it writes), with port's sections, reasons and
schema line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.port.files import reasons, relative, schema_line, sections
from runner.spec.emit import dump
from runner.upgrade.plan import UpgradePlan

TODO_NOTE = (
    "TODO(upgrade): decide these (upstream's help texts and change are quoted), then delete the entries"
)


def overlay_text(steps: UpgradePlan, follows: list[str], source: Path, out: Path) -> str:
    data: dict[str, Any] = {"extends": relative(source, out), "miles_version": steps.target.version}
    data.update(sections(steps.changes))
    if steps.todo:
        data["todo"] = dict(steps.todo)
    why = {
        "miles_version": f"moved from miles {steps.source} by `run-matrix upgrade`; with it "
        + "; ".join(follows)
    }
    data["why"] = {**why, **reasons(steps.changes)}
    header = [
        schema_line(out),
        f"{source.stem} (miles {steps.source}) moved to miles {steps.target.version} by run-matrix upgrade:",
        "each change says why below (from the flag catalogs and miles/upgrades.yaml). Review the TODOs.",
    ]
    return dump(data, {("todo",): TODO_NOTE}, header)
