"""diff: two cells compared the way a reviewer reads them — spec, launch, layout.

Pure: cells in, differences out. Each difference carries both values (``None`` when a
side does not have it), the file:line that set each, and the reason. The reason for a
value is the ``why:`` of the side that sets it (B's first); the reason for an absence is
the ``why_not:`` of the side that leaves it out, never the other side's reason for setting
it. The sub-keys of one ``requires:``/``expect:``/``prepare:`` entry make one difference,
and a default nobody wrote is no difference. A launch row that a spec row already shows
is left out when both levels are asked for.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from runner.cell import Cell
from runner.errors import display_path
from runner.layout import Layout, layout
from runner.load import Key, dotted, walk
from runner.render import Launch, render

META = ("description", "allowed_deltas", "why_not", "todo")  # about the spec, not the spec
FOLDED = ("requires", "expect", "prepare")  # each entry is one thing; its sub-keys are one row
LEVELS = ("spec", "launch", "layout")


@dataclass(frozen=True)
class Difference:
    key: str
    a: Any
    b: Any
    a_source: str | None
    b_source: str | None
    why: str
    parts: tuple[str, ...] = ()  # the sub-keys that differ, for a folded entry

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["parts"] = list(self.parts)
        return data


@dataclass(frozen=True)
class Diff:
    a: str
    b: str
    spec: tuple[Difference, ...]
    launch: tuple[Difference, ...]
    layout: tuple[Difference, ...]
    outside_allowed: tuple[str, ...]  # spec keys that differ but no allowed glob covers
    allowed: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "differences": [d.to_json() for d in self.spec],
            "launch": [d.to_json() for d in self.launch],
            "layout": [d.to_json() for d in self.layout],
            "allowed": list(self.allowed),
            "outside_allowed": list(self.outside_allowed),
        }


def diff(a: Cell, b: Cell, allow: Sequence[str] = (), levels: Sequence[str] = LEVELS) -> Diff:
    spec = tuple(_spec_differences(a, b))
    allowed = tuple(dict.fromkeys([*allow, *a.spec.allowed_deltas, *b.spec.allowed_deltas]))
    outside = tuple(d.key for d in spec if not _allowed(d, allowed))
    shown = {d.key for d in spec} if "spec" in levels else set()
    launch = tuple(_launch_differences(a, b, shown)) if "launch" in levels else ()
    return Diff(
        a.id,
        b.id,
        spec if "spec" in levels else (),
        launch,
        tuple(_layout_differences(a, b)) if "layout" in levels else (),
        outside,
        allowed,
    )


def _allowed(difference: Difference, globs: Sequence[str]) -> bool:
    """A glob allows a row by its key, or a folded entry by each of the sub-keys that differ."""
    keys = [difference.key, *(f"{difference.key}.{p}" for p in difference.parts)]
    if any(fnmatch.fnmatchcase(keys[0], glob) for glob in globs):
        return True
    return bool(difference.parts) and all(any(fnmatch.fnmatchcase(k, g) for g in globs) for k in keys[1:])


# --- spec ---------------------------------------------------------------------------------------


def _spec_differences(a: Cell, b: Cell) -> Iterator[Difference]:
    left, right = _leaves(a), _leaves(b)
    entries: set[Key] = set()
    both = {k[:2] for k in left if k[0] in FOLDED} & {k[:2] for k in right if k[0] in FOLDED}
    for key in _merged_order(list(left), list(right)):
        if key[0] in FOLDED and len(key) > 2 and key[:2] not in both:  # an entry one side lacks: one row
            if key[:2] not in entries:
                entries.add(key[:2])
                yield from _entry_difference(a, b, key[:2], left, right)
            continue
        va, vb = left.get(key), right.get(key)
        if va == vb or _unwritten_default(a, b, key, va, vb):
            continue
        yield Difference(dotted(key), va, vb, _source(a, key), _source(b, key), _why(a, b, key, vb is None))


def _unwritten_default(a: Cell, b: Cell, key: Key, va: Any, vb: Any) -> bool:
    """One side lacks the key and the other has only its default there: nobody wrote a difference."""
    if va is None:
        return key not in b.composed.provenance
    return vb is None and key not in a.composed.provenance


def _entry_difference(
    a: Cell, b: Cell, entry: Key, left: dict[Key, Any], right: dict[Key, Any]
) -> Iterator[Difference]:
    """One row for an entry only one side has: the sub-keys someone wrote, nested as written."""
    ea, eb = _written(a, entry, left), _written(b, entry, right)
    if ea == eb:
        return
    parts = tuple(name for name in dict.fromkeys([*ea, *eb]) if ea.get(name) != eb.get(name))
    yield Difference(
        dotted(entry),
        _nested(ea) or None,
        _nested(eb) or None,
        _entry_source(a, entry, ea),
        _entry_source(b, entry, eb),
        _why(a, b, (*entry, *next(iter(eb or ea)).split(".")), not eb),
        parts,
    )


def _written(cell: Cell, entry: Key, leaves: dict[Key, Any]) -> dict[str, Any]:
    """The entry's leaves that a file sets (defaults left out), by their path under the entry."""
    provenance = cell.composed.provenance
    keys = [key for key in leaves if key[: len(entry)] == entry and key in provenance]
    keys.sort(key=lambda k: provenance[k][-1].location.line or 0)  # as the file has them
    return {".".join(key[len(entry) :]): leaves[key] for key in keys}


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"extra.strategy": "block"}`` -> ``{"extra": {"strategy": "block"}}``."""
    nested: dict[str, Any] = {}
    for path, value in flat.items():
        *parents, name = path.split(".")
        here = nested
        for parent in parents:
            here = here.setdefault(parent, {})
        here[name] = value
    return nested


def _entry_source(cell: Cell, entry: Key, written: dict[str, Any]) -> str | None:
    return _source(cell, (*entry, *next(iter(written)).split("."))) if written else None


def _leaves(cell: Cell) -> dict[Key, Any]:
    data = cell.spec.model_dump(mode="python")
    return {key: value for key, value in walk(data) if not isinstance(value, dict) and key[0] not in META}


def _merged_order(first: list[Key], second: list[Key]) -> list[Key]:
    """A's keys in A's order, B's other keys after the B key before them; siblings kept together."""
    merged = list(first)
    for index, key in enumerate(second):
        if key not in merged:
            before = next((k for k in reversed(second[:index]) if k in merged), None)
            merged.insert(merged.index(before) + 1 if before else len(merged), key)
    parents = {parent: rank for rank, parent in enumerate(dict.fromkeys(k[:-1] for k in merged))}
    return sorted(merged, key=lambda k: parents[k[:-1]])


def _source(cell: Cell, key: Key) -> str | None:
    steps = cell.composed.provenance.get(key)
    return f"{display_path(steps[-1].location.file)}:{steps[-1].location.line}" if steps else None


def _why(a: Cell, b: Cell, key: Key | None, b_lacks: bool) -> str:
    """Why B differs: its reason for what it sets, or its why_not for what it leaves out; else A's."""
    if key is None:
        return ""
    if b_lacks:  # never A's reason for setting what B removes
        return _why_not(b, key) or _deleted_because(b, key)
    return _set_reason(b, key) or _why_not(a, key) or _set_reason(a, key)


def _deleted_because(cell: Cell, key: Key) -> str:
    """The reason written for a ``!delete`` of the key (or of an entry above it)."""
    for depth in range(len(key), 0, -1):
        steps = cell.composed.provenance.get(key[:depth], ())
        if steps and steps[-1].op == "delete":
            return steps[-1].why
    return ""


def _set_reason(cell: Cell, key: Key) -> str:
    steps = cell.composed.provenance.get(key, ())
    return next((s.why for s in reversed(steps) if s.why), "")


def _why_not(cell: Cell, key: Key) -> str:
    """The ``why_not:`` of the key or of an entry above it."""
    return next(
        (
            cell.spec.why_not[d]
            for d in (dotted(key[:n]) for n in range(len(key), 0, -1))
            if d in cell.spec.why_not
        ),
        "",
    )


# --- launch ---------------------------------------------------------------------------------------


_LAUNCH_FACTS = (("train_script", ("launch", "script")), ("num_gpus_per_node", ("cluster", "gpus_per_node")))


def _launch_differences(a: Cell, b: Cell, shown: set[str]) -> Iterator[Difference]:
    """What the rendered launches differ in, less what a spec row in ``shown`` already says."""
    la, lb = render(a), render(b)
    for name, key in (
        ("train_script", ("launch", "script")),
        ("num_gpus_per_node", ("cluster", "gpus_per_node")),
    ):
        if getattr(la, name) != getattr(lb, name) and dotted(key) not in shown:
            yield Difference(name, getattr(la, name), getattr(lb, name), None, None, _why(a, b, key, False))
    fa, fb = _flags(la), _flags(lb)
    for (name,) in _merged_order([(f,) for f in fa], [(f,) for f in fb]):
        key_a, key_b = _flag_key(a, name), _flag_key(b, name)
        if fa.get(name) != fb.get(name) and not {dotted(k) for k in (key_a, key_b) if k} & shown:
            source_a = _source(a, key_a) if key_a else None
            source_b = _source(b, key_b) if key_b else None
            why = _why(a, b, key_b or key_a, name not in fb)
            yield Difference(f"--{name}", _shown(fa.get(name)), _shown(fb.get(name)), source_a, source_b, why)
    for (name,) in _merged_order([(k,) for k in la.env], [(k,) for k in lb.env]):
        key = ("env", name)
        if la.env.get(name) != lb.env.get(name) and dotted(key) not in shown:
            yield Difference(
                f"env {name}",
                la.env.get(name),
                lb.env.get(name),
                _source(a, key),
                _source(b, key),
                _why(a, b, key, name not in lb.env),
            )


def _flags(launch: Launch) -> dict[str, tuple[str, ...]]:
    """The job's argv as flag -> values (a repeated flag keeps its last values, as argparse does)."""
    flags: dict[str, list[str]] = {}
    current: str | None = None
    for token in (*launch.model_args, *launch.train_args):
        if token.startswith("--"):
            current = token[2:]
            flags[current] = []
        elif current is not None:
            flags[current].append(token)
    return {name: tuple(values) for name, values in flags.items()}


def _flag_key(cell: Cell, name: str) -> Key | None:
    for group, flags in cell.spec.args.groups():
        if name in flags:
            return ("args", group, name)
    return None


def _shown(values: tuple[str, ...] | None) -> str | None:
    if values is None:
        return None
    return " ".join(values) if values else "(switch)"


# --- layout ---------------------------------------------------------------------------------------


def _layout_differences(a: Cell, b: Cell) -> Iterator[Difference]:
    fa, fb = _layout_facts(a, layout(a)), _layout_facts(b, layout(b))
    for name, (value_a, _) in fa.items():
        value_b, cause = fb[name]
        if value_a != value_b:
            why = _why(a, b, cause, False) if isinstance(cause, tuple) else cause
            yield Difference(name, value_a, value_b, None, None, why)


Cause = Key | str  # the spec key whose reason explains a fact, or how the fact is derived


def _layout_facts(cell: Cell, facts: Layout) -> dict[str, tuple[Any, Cause]]:
    e, act = facts.engine, facts.actor
    mode = (
        "colocate" if facts.colocate else ("async" if cell.spec.launch.script == "train_async.py" else "sync")
    )
    flag = {name: key for name in _LAYOUT_FLAGS if (key := _flag_key(cell, name))}
    return {
        "mode": (mode, ("launch", "script")),
        "GPUs for training": (facts.actor_gpus + facts.critic_gpus, flag.get("actor-num-gpus-per-node", "")),
        "GPUs for rollout": (facts.rollout_gpus, flag.get("rollout-num-gpus", "= the GPUs training leaves")),
        "actor TP x PP x CP": (f"{act.tp} x {act.pp} x {act.cp}", flag.get("tensor-model-parallel-size", "")),
        "actor DP": (_count(act.dp), "= training GPUs / (TP x PP x CP)"),
        "actor EP x ETP": (f"{act.ep} x {act.etp}", flag.get("expert-model-parallel-size", "")),
        "engines": (facts.engines, "= rollout GPUs / GPUs per engine"),
        "GPUs per engine": (e.gpus, flag.get("rollout-num-gpus-per-engine", "")),
        "engine TP / DP / EP": (f"{e.tp} / {e.dp} / {e.ep}", flag.get("sglang-dp-size", "")),
        "DP-attention": (e.dp_attention, flag.get("sglang-enable-dp-attention", "")),
        "attention-TP per DP rank": (_count(e.attention_tp), "= engine TP / DP with DP-attention"),
        "MoE-TP": (_count(e.moe_tp), "= engine TP / EP"),
    }


_LAYOUT_FLAGS = (
    "actor-num-gpus-per-node",
    "rollout-num-gpus",
    "tensor-model-parallel-size",
    "expert-model-parallel-size",
    "rollout-num-gpus-per-engine",
    "sglang-dp-size",
    "sglang-enable-dp-attention",
)


def _count(value: float) -> int | float:
    return int(value) if value.is_integer() else round(value, 2)
