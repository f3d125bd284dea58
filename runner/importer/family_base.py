"""family_base: the base a folder import extracts — what every case shares, and only what validates.

    shared keys of the cases -> check the base as a spec -> drop what an error names -> again

A key goes to the base only with everything its schema requires: the cases may share a prepare
step's ``kind`` and differ in its ``local_dir``, and ``prepare.model: {kind: hf-download}`` alone
is no step. The base is checked in memory as ``validate`` checks a spec (model, then rules); each
error's key drops the deepest part of it the base holds (``prepare.model.local_dir`` is required:
``prepare.model`` goes, and each case says it whole). A base that cannot be made valid so is None:
then every case is written whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner import pipeline
from runner.errors import Problem, SpecError
from runner.spec import emit
from runner.spec.load import WrittenFloat

NOT_SHARED = ("description", "matrix", "extends")  # each case says these itself
MAX_ROUNDS = 32  # checks of a candidate base, at the most (each drops at least one key)
KEEP = ("description",)  # never dropped: a base without them is no base


def extract(specs: list[dict[str, Any]], description: str, path: Path) -> dict[str, Any] | None:
    """The base to write at ``path``: what every spec of ``specs`` shares that validates; None when
    nothing valid is left to share."""
    shared = {"description": description, **shared_keys([_plain(spec) for spec in specs])}
    # checked on the first case's hardware when the cases differ in it: a profile is needed to build
    # a cell at all, and what the base lacks is each case's to say
    stand_in = {} if "hardware" in shared else {"hardware": specs[0].get("hardware")}
    for _ in range(MAX_ROUNDS):
        held = {key for p in _errors(text({**shared, **stand_in}, []), path) if (key := _held(shared, p.key))}
        if not held:
            return shared if set(shared) - set(KEEP) else None
        for key in sorted(held, key=len):
            _drop(shared, key)
    return None


def text(shared: dict[str, Any], header: list[str]) -> str:
    return emit.dump(shared, None, header)


def _errors(text: str, path: Path) -> list[Problem]:
    """The errors of the base as a spec: its schema's, and what building its cells finds (not the
    rules': a base is a part, and a rule may ask for what each case says)."""
    try:
        pipeline.cells(path, documents={path: text})
    except SpecError as exc:
        return [p for p in exc.problems if p.severity == "error"]
    return []


def _drop(data: dict[str, Any], held: tuple[str, ...]) -> None:
    """Remove the value at ``held`` (if an earlier drop left it), and the maps that leaves empty."""
    holder = data
    for part in held[:-1]:
        if not isinstance(holder.get(part), dict):
            return
        holder = holder[part]
    if held[-1] in holder:
        del holder[held[-1]]
        _prune(data, list(held[:-1]))


def _held(data: dict[str, Any], key: str) -> tuple[str, ...]:
    """The longest part of dotted ``key`` that names a value of ``data`` (``*``: the first name that
    does); () when none does, or only a key a base always keeps."""
    found = tuple(_prefix(data, [part for part in key.split(".") if part]))
    return () if found in {(name,) for name in KEEP} else found


def _prefix(data: dict[str, Any], parts: list[str]) -> list[str]:
    """The longest prefix of ``parts`` that names a value of ``data`` (``*``: the first name that does)."""
    if not parts or not isinstance(data, dict):
        return []
    names = list(data) if parts[0] == "*" else [parts[0]]
    for name in names:
        if name in data:
            return [name, *_prefix(data[name], parts[1:])] if isinstance(data[name], dict) else [name]
    return []


def _prune(data: dict[str, Any], path: list[str]) -> None:
    """Remove the maps along ``path`` that the removal left empty, innermost first."""
    for depth in range(len(path), 0, -1):
        holder = data
        for part in path[: depth - 1]:
            holder = holder[part]
        if holder[path[depth - 1]] == {}:
            del holder[path[depth - 1]]


def shared_keys(specs: list[dict[str, Any]]) -> dict[str, Any]:
    """The keys every spec sets to the same value (maps compared key by key)."""
    first, others = specs[0], specs[1:]
    shared: dict[str, Any] = {}
    for key, value in first.items():
        if key in NOT_SHARED or not all(key in other for other in others):
            continue
        values = [other[key] for other in others]
        if isinstance(value, dict) and all(isinstance(v, dict) for v in values):
            inner = shared_keys([value, *values])
            if inner:
                shared[key] = inner
        elif all(_same(value, v) for v in values):
            shared[key] = value
    return shared


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b and str(a) == str(b)


def _plain(value: Any) -> Any:
    """Loaded YAML as import writes it: a float keeps its text, ``$${`` is a literal ``${`` again."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, WrittenFloat):
        return emit.Text(value.text)
    if isinstance(value, str):
        return (
            emit.Text(value.replace("$${", "${"))
            if isinstance(value, emit.Text)
            else value.replace("$${", "${")
        )
    return value
