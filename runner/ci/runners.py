"""runners.yaml -> runner classes, every problem with file:line and key (``runners[2].gpus``).

The file is read by ``load`` (safe, budgeted, duplicate keys refused); the lines of the keys
inside list items, which ``load`` does not keep apart, are read from the YAML node tree.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from runner.errors import Collector, Location, Problem, SpecError, did_you_mean
from runner.spec.load import Document, loads
from runner.spec.paths import read_text
from schemas.runners import RunnerClass, Runners

MAX_RUNNERS = 10_000  # a budget: shards are planned one by one
ItemLines = list[dict[str, int]]  # per item: its own line under "" and each key's line


def load_runners(path: Path, hardware: Iterable[str]) -> tuple[RunnerClass, ...]:
    """The runner classes of ``path``; ``hardware``: the profile names a class may name."""
    text = read_text(path)
    document = loads(text, path)
    lines = _item_lines(text)
    problems = Collector()
    items = _runners_list(document, problems)
    classes = [_one(path, index, item, lines, problems) for index, item in enumerate(items)]
    built = [c for c in classes if c is not None]
    if not problems.problems:
        _check_together(path, built, lines, sorted(set(hardware)), problems)
    problems.raise_if_errors()
    total = sum(c.count for c in built)
    if total > MAX_RUNNERS:
        raise SpecError.one(
            "budget",
            f"{total:,} runners in all; a plan spreads cells over at most {MAX_RUNNERS:,}",
            key="runners",
            at=[document.location(("runners",))],
            hint="count the runners a CI really has",
        )
    return tuple(Runners(runners=built).runners)


def _runners_list(document: Document, problems: Collector) -> list[Any]:
    """The file's one key, ``runners``: a list (anything else raises, with every problem so far)."""
    for key in document.data:
        if key != "runners":
            problems.add(
                Problem(
                    "unknown-key",
                    f"unknown key {key!r}",
                    key,
                    (document.location((key,)),),
                    hint=did_you_mean(key, ["runners"]) or "expected one of: runners",
                )
            )
    items = document.data.get("runners")
    if isinstance(items, list) and items:
        return items
    where = document.location(("runners",)) if "runners" in document.data else Location(document.path, 1)
    problems.add(
        Problem(
            "missing-key" if items is None else "type",
            "'runners' must be a list of runner classes: {label, hardware, gpus, count}",
            "runners",
            (where,),
        )
    )
    raise SpecError(problems.problems)


def _one(path: Path, index: int, item: Any, lines: ItemLines, problems: Collector) -> RunnerClass | None:
    own = lines[index] if index < len(lines) else {}
    where = Location(path, own.get(""))
    if not isinstance(item, dict):
        problems.add(
            Problem(
                "type",
                f"a runner class is a mapping {{label, hardware, gpus, count}}, got {item!r}",
                f"runners[{index}]",
                (where,),
            )
        )
        return None
    try:
        return RunnerClass.model_validate(item)
    except ValidationError as exc:
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else ""
            key = f"runners[{index}].{field}" if field else f"runners[{index}]"
            at = Location(path, own.get(field, own.get("")))
            problems.add(_problem(error, key, at, field))
        return None


def _problem(error: Any, key: str, at: Location, field: str) -> Problem:
    if error["type"] == "missing":
        return Problem("missing-key", f"{field!r} is required", key, (at,))
    if error["type"] == "extra_forbidden":
        known = list(RunnerClass.model_fields)
        return Problem(
            "unknown-key",
            f"unknown key {field!r}",
            key,
            (at,),
            hint=did_you_mean(field, known) or f"expected one of: {', '.join(known)}",
        )
    return Problem("type", f"{error['msg']}, got {error['input']!r}", key, (at,))


def _check_together(
    path: Path, classes: list[RunnerClass], lines: ItemLines, hardware: list[str], problems: Collector
) -> None:
    """Hardware that no profile has; two classes under one label (runs-on could not tell them apart)."""
    seen: dict[str, int] = {}
    for index, each in enumerate(classes):
        own = lines[index]
        if each.hardware not in hardware:
            problems.add(
                Problem(
                    "unknown-name",
                    f"no hardware profile named {each.hardware!r} (known: {', '.join(hardware)})",
                    f"runners[{index}].hardware",
                    (Location(path, own.get("hardware")),),
                    hint=did_you_mean(each.hardware, hardware) or "add matrices/hardware/<name>.yaml",
                )
            )
        if each.name in seen:
            first = seen[each.name]
            problems.add(
                Problem(
                    "duplicate-key",
                    f"runner classes {first} and {index} have one label {each.name!r}",
                    f"runners[{index}].label",
                    (Location(path, own.get("label")), Location(path, lines[first].get("label"))),
                    hint="runs-on cannot tell them apart: give each class its own label",
                )
            )
        seen.setdefault(each.name, index)


def _item_lines(text: str) -> ItemLines:
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if (
            isinstance(key, yaml.ScalarNode)
            and key.value == "runners"
            and isinstance(value, yaml.SequenceNode)
        ):
            return [_keys(item) for item in value.value]
    return []


def _keys(item: yaml.Node) -> dict[str, int]:
    lines = {"": item.start_mark.line + 1}
    if isinstance(item, yaml.MappingNode):
        for key, _ in item.value:
            if isinstance(key, yaml.ScalarNode):
                lines[key.value] = key.start_mark.line + 1
    return lines
