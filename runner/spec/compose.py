"""compose: follow ``extends:``, merge the chain, apply ``!delete``, keep provenance.

Merge rules, named (STYLE.md §4): mappings merge key by key, the later file
wins; scalars and lists replace; ``!delete`` removes a key and is an error when
there is nothing to remove. Every key remembers the chain of steps that set it
(file, line, operation, reason) — ``explain`` and every later error read it.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from runner.errors import Collector, Location, Problem, SpecError, did_you_mean
from runner.memos import Table, resolved
from runner.spec import repository, why
from runner.spec.load import (
    DELETE,
    NO_DOCUMENTS,
    Document,
    Documents,
    Key,
    dotted,
    is_document,
    load_from,
    walk,
)
from runner.spec.paths import readable_file
from runner.spec.provenance import Composed, Operation, Provenance, Step

MAX_EXTENDS_DEPTH = 32  # files in one extends chain (GLM-5's is 2 deep)

__all__ = ["MAX_EXTENDS_DEPTH", "Composed", "Provenance", "Step", "compose", "overlay", "stamps"]


def compose(path: Path, documents: Documents = NO_DOCUMENTS, reasons_checked: bool = True) -> Composed:
    """The composed chain of ``path``. Each file is composed once however often it is reached
    (a diamond of extends, a base shared by many specs): the result is kept while no file of
    its chain changed. Callers get their own provenance table; data is shared and never mutated.
    A file of ``documents`` is read from there (a candidate checked before it is written).
    ``reasons_checked=False`` lets a ``why:`` name a key its file does not set (the pipeline then
    looks for the typo behind it); such a composition is never kept.
    """
    composed = _compose(resolved(path), (), Location(path), (documents, reasons_checked))
    return replace(composed, provenance=dict(composed.provenance))


MAX_KEPT = 4096  # composed files kept, as load keeps parsed ones
_COMPOSED: Table[Path, tuple[Composed, tuple[tuple[int, int], ...]]] = Table(
    "runner.spec.compose._COMPOSED",
    "stamped",
    "a chain by its spec's real path, used only while every file of it has the modification time and"
    " size it had (never a candidate's, nor one composed leniently)",
    MAX_KEPT,
)


Chain = tuple[tuple[Path, Location], ...]  # each file above and its extends: line, the user's first


Reading = tuple[Documents, bool]  # the documents, and whether a why: must name keys its file sets


def _compose(path: Path, stack: Chain, named_at: Location, reading: Reading) -> Composed:
    documents = reading[0]
    kept = _COMPOSED.get(path)
    if kept and kept[1] == stamps(kept[0].files) and not any(f in documents for f in kept[0].files):
        return kept[0]
    files_above = [above for above, _ in stack]
    if path in files_above:
        chain = " -> ".join(p.name for p in (*files_above[files_above.index(path) :], path))
        cycle = SpecError.one(
            "extends-cycle",
            f"forms a cycle: {chain}",
            key="extends",
            at=[named_at],
            hint="a spec cannot extend itself, directly or through its bases.",
        )
        raise _reached_through(cycle, stack[:-1])
    if len(stack) >= MAX_EXTENDS_DEPTH:
        too_deep = SpecError.one(
            "budget",
            f"the extends chain is deeper than {MAX_EXTENDS_DEPTH} files",
            key="extends",
            at=[named_at],
            hint="extend a base that holds what the chain shares; a chain is a few files deep",
        )
        raise _reached_through(too_deep, stack[:-1])
    composed = _compose_file(path, stack, named_at, reading)
    if any(f in documents for f in composed.files) or not reading[1]:
        return composed  # a candidate, or composed leniently: afresh each time
    _COMPOSED.put(path, (composed, stamps(composed.files)))
    return composed


def _compose_file(path: Path, stack: Chain, named_at: Location, reading: Reading) -> Composed:
    return _composed_file(path, stack, reading)


def _composed_file(path: Path, stack: Chain, reading: Reading) -> Composed:
    documents, reasons_checked = reading
    try:
        doc = load_from(path, documents)
    except SpecError as exc:
        raise _reached_through(exc, stack) from None
    problems = Collector()
    data: dict[str, Any] = {}
    provenance: Provenance = {}
    files: list[Path] = []
    for base_path in _extends(doc, stack, documents):
        where = doc.location(("extends",))
        base = _compose(base_path, (*stack, (path, where)), where, reading)
        _merge_composed(data, provenance, base)
        files += [f for f in base.files if f not in files]
    reasons = why.reasons(doc, problems if reasons_checked else Collector())  # lenient: none of its problems
    _apply(data, provenance, why.own(doc), doc, reasons, (), problems)
    if problems.problems and stack:
        problems = Collector(list(_reached_through(SpecError(problems.problems), stack).problems))
    problems.raise_if_errors()
    return Composed(data, provenance, (*files, path))


def stamps(files: tuple[Path, ...]) -> tuple[tuple[int, int], ...]:
    """What says a file is unchanged: its modification time and size (-1 when it is gone)."""
    stamps = []
    for file in files:
        try:
            info = file.stat()
            stamps.append((info.st_mtime_ns, info.st_size))
        except OSError:
            stamps.append((-1, -1))
    return tuple(stamps)


def _reached_through(error: SpecError, stack: Chain) -> SpecError:
    """A problem in an extended file also says how the user's spec reached it."""
    if not stack:
        return error
    via = tuple(where for _, where in reversed(stack))
    return SpecError([replace(p, via=(*p.via, *via)) for p in error.problems])


def _extends(doc: Document, stack: Chain, documents: Documents) -> list[Path]:
    raw = doc.data.get("extends", [])
    names = [raw] if isinstance(raw, str) else raw
    where = doc.location(("extends",))
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _reached_through(
            SpecError.one(
                "type", f"expected a path or a list of paths, got {raw!r}", key="extends", at=[where]
            ),
            stack,
        )
    if len(names) > MAX_EXTENDS_DEPTH or len(set(names)) < len(names):
        repeated = next((n for n in names if names.count(n) > 1), "")
        problem = (
            f"{repeated!r} is listed twice"
            if repeated
            else f"{len(names)} files, more than {MAX_EXTENDS_DEPTH}"
        )
        raise _reached_through(
            SpecError.one(
                "extends", f"extends: {problem}", key="extends", at=[where], hint="list each base once"
            ),
            stack,
        )
    paths = [Path(os.path.normpath(doc.path.parent / name)) for name in names]
    spec = stack[0][0] if stack else doc.path  # the user's spec: its root decides
    for name, base in zip(names, paths, strict=True):
        try:
            repository.check_inside(spec, base, where, "extends", name)
            if not is_document(base, documents):
                readable_file(base, where, "extends", name)
        except SpecError as exc:
            raise _reached_through(exc, stack) from None
    return [resolved(base) for base in paths]


def _apply(
    target: dict[str, Any],
    provenance: Provenance,
    source: dict[str, Any],
    doc: Document,
    reasons: dict[str, str],
    prefix: Key,
    problems: Collector,
) -> None:
    """Apply one file's own keys on top of what its bases composed."""
    for name, value in source.items():
        key = (*prefix, name)
        step = Step(doc.location(key), "set", value, why.reason_for(key, reasons))
        old = target.get(name, _MISSING)
        if value is DELETE:
            if old is _MISSING:
                if problems.room():
                    problems.add(_delete_missing(key, target, step.location))
                continue
            del target[name]
            _record_subtree(provenance, key, old, replace(step, op="delete", value=None))
        elif isinstance(value, dict) and isinstance(old, dict):
            _append(provenance, key, replace(step, value={}))
            _apply(old, provenance, value, doc, reasons, key, problems)
        else:
            if isinstance(value, dict):
                _refuse_nested_deletes(value, key, doc, problems)
            if old is not _MISSING:
                op: Operation = "replace" if isinstance(old, dict) != isinstance(value, dict) else "override"
                step = replace(step, op=op)
                _forget_subtree(provenance, key)
            target[name] = _copied(value)
            _append(provenance, key, step)
            if isinstance(value, dict):
                for sub, sub_value in walk(value, key):
                    _append(
                        provenance,
                        sub,
                        Step(doc.location(sub), "set", sub_value, why.reason_for(sub, reasons)),
                    )


def _merge_composed(data: dict[str, Any], provenance: Provenance, base: Composed) -> None:
    """Merge one composed base onto the bases before it (``extends: [a, b]``: b wins)."""

    def merge(target: dict[str, Any], source: dict[str, Any], prefix: Key) -> None:
        for name, value in source.items():
            key = (*prefix, name)
            old = target.get(name, _MISSING)
            if isinstance(value, dict) and isinstance(old, dict):
                merge(old, value, key)
                continue
            if old is not _MISSING:
                _forget_subtree(provenance, key)
            target[name] = _copied(value)
        return None

    merge(data, base.data, ())
    for key, steps in base.provenance.items():
        earlier = provenance.get(key, ())
        new = tuple(s for s in steps if s not in earlier)
        if earlier and new and new[0].op == "set":
            new = (replace(new[0], op="override"), *new[1:])
        provenance[key] = earlier + new


def _refuse_nested_deletes(value: dict[str, Any], key: Key, doc: Document, problems: Collector) -> None:
    for sub, sub_value in walk(value, key):
        if sub_value is DELETE and problems.room():
            problems.add(_delete_missing(sub, {}, doc.location(sub)))


def _delete_missing(key: Key, siblings: dict[str, Any], where: Location) -> Problem:
    return Problem(
        "delete",
        "!delete of a key that nothing before this file sets",
        dotted(key),
        (where,),
        hint=did_you_mean(key[-1], siblings) or "remove the line: there is nothing to delete.",
    )


def _append(provenance: Provenance, key: Key, step: Step) -> None:
    provenance[key] = (*provenance.get(key, ()), step)


def _record_subtree(provenance: Provenance, key: Key, old: Any, step: Step) -> None:
    _append(provenance, key, step)
    if isinstance(old, dict):
        for sub, _ in walk(old, key):
            _append(provenance, sub, step)


def _forget_subtree(provenance: Provenance, key: Key) -> None:
    """A replaced mapping's children are gone; so is their history."""
    for other in [k for k in provenance if len(k) > len(key) and k[: len(key)] == key]:
        del provenance[other]


class _Missing:
    pass


_MISSING: Any = _Missing()


def _copied(value: Any) -> Any:
    """A copy of loaded data (mappings, lists, immutable scalars) that compose may change in place;
    ``copy.deepcopy``'s memo is not needed: a loaded file shares no mapping or list between keys."""
    if isinstance(value, dict):
        return {name: _copied(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def overlay(base: Composed, path: Path, documents: Documents = NO_DOCUMENTS) -> Composed:
    """Apply one overlay file's keys on top of a composed spec (a matrix cell's ``adjust``)."""
    doc = load_from(path, documents)
    if "extends" in doc.data:
        raise SpecError.one(
            "extends",
            "an overlay applied by a matrix cannot extend another spec: it applies on top of the cell",
            key="extends",
            at=[doc.location(("extends",))],
            hint="move what it extends into the spec, or extend that file from the overlay's own base",
        )
    problems = Collector()
    data = _copied(base.data)
    provenance = dict(base.provenance)
    _apply(data, provenance, why.own(doc), doc, why.reasons(doc, problems), (), problems)
    problems.raise_if_errors()
    return Composed(data, provenance, (*base.files, resolved(path)), base.path)
