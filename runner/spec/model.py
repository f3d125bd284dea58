"""model: resolved data -> frozen pydantic models, with errors that point at the YAML.

Unknown keys are found by walking the data along the model (so each gets a
"did you mean" from the fields at its own level); pydantic then checks types.
Every problem names the file and line that wrote the value.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from runner.errors import Collector, Problem, did_you_mean
from runner.spec.compose import Composed
from runner.spec.load import Key, dotted

M = TypeVar("M", bound=BaseModel)


def build(
    cls: type[M], data: dict[str, Any], composed: Composed, context: Mapping[str, Any] | None = None
) -> M:
    """Validate ``data`` as ``cls``; raise every problem at once as a SpecError. ``context``: the data a
    model's validators read besides ``data`` (a spec's: the launchers ``launch.script`` may name).

    pydantic decides; only when it refuses do we walk the data for unknown keys, so that
    each gets a "did you mean" from the fields at its own level (the walk costs more than
    validating, and a thousand-cell matrix validates cleanly).
    """
    try:
        return cls.model_validate(data, context=context)
    except ValidationError:
        pass
    problems = Collector()
    for key, known in _unknown_keys(data, cls, ()):
        if not problems.room():
            continue
        problems.add(
            Problem(
                "unknown-key",
                f"unknown key {key[-1]!r}",
                dotted(key),
                (composed.location(key),),
                hint=did_you_mean(key[-1], known) or f"expected one of: {', '.join(sorted(known))}",
            )
        )
    problems.raise_if_errors()
    try:
        return cls.model_validate(data, context=context)
    except ValidationError as exc:
        for error in exc.errors():
            if problems.room():
                problems.add(_problem(error, data, composed))
    problems.raise_if_errors()
    raise AssertionError("unreachable: validation failed without problems")


def _problem(error: Any, data: dict[str, Any], composed: Composed) -> Problem:
    key = _data_key(error["loc"], data)
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "missing":
        return Problem("missing-key", f"{key[-1]!r} is required", dotted(key), (composed.location(key[:-1]),))
    if "input" in error and error["type"] != "value_error":
        message += f", got {error['input']!r}"
    return Problem("type", message, dotted(key), (composed.location(key),))


def _data_key(loc: tuple[Any, ...], data: Any) -> Key:
    """pydantic's error location as a key of the data (dropping union tags it inserts)."""
    key: list[str] = []
    node = data
    tagged: object = None  # the mapping whose tag the location has named already
    for index, part in enumerate(loc):
        inside = index < len(loc) - 1  # a member's error names one of its keys after the tag
        if isinstance(node, dict) and node is not tagged and inside and part == node.get("kind"):
            tagged = node  # a tagged union's member, named by its tag: a step of kind call has a key call too
            continue
        if isinstance(node, dict) and part in node:
            key.append(str(part))
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]  # lists are leaves: their items have no key of their own
        elif index == len(loc) - 1 and part != "[key]":
            key.append(str(part))
    return tuple(key)


def _unknown_keys(data: Any, cls: Any, prefix: Key) -> Iterator[tuple[Key, list[str]]]:
    model = _model_for(cls, data)
    if model is not None and isinstance(data, dict):
        fields = {field.alias or name: field.annotation for name, field in model.model_fields.items()}
        for name, value in data.items():
            if name not in fields:
                yield (*prefix, name), list(fields)
            else:
                yield from _unknown_keys(value, fields[name], (*prefix, name))
    elif get_origin(cls) is dict and isinstance(data, dict):
        value_type = get_args(cls)[1]
        for name, value in data.items():
            yield from _unknown_keys(value, value_type, (*prefix, str(name)))


def _model_for(annotation: Any, data: Any) -> type[BaseModel] | None:
    """The model class ``data`` is meant for: the class itself, or the union member its ``kind`` picks."""
    if get_origin(annotation) is Annotated:
        return _model_for(get_args(annotation)[0], data)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        models = [m for m in (_model_for(a, data) for a in get_args(annotation)) if m]
        if len(models) == 1:
            return models[0]
        kind = data.get("kind") if isinstance(data, dict) else None
        for model in models:
            field = model.model_fields.get("kind")
            if field is not None and kind in get_args(field.annotation):
                return model
    return None
