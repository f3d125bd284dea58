"""diff: two cells compared the way a reviewer reads them — spec, launch, layout.

Pure: cells in, differences out. Each difference carries both values (``None`` when a
side does not have it), the file:line that set each, and the reason: the variant's
(B's) ``why:`` or ``why_not:``, else A's.
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


@dataclass(frozen=True)
class Difference:
    key: str
    a: Any
    b: Any
    a_source: str | None
    b_source: str | None
    why: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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


def diff(a: Cell, b: Cell, allow: Sequence[str] = ()) -> Diff:
    spec = tuple(_spec_differences(a, b))
    allowed = tuple(dict.fromkeys([*allow, *a.spec.allowed_deltas, *b.spec.allowed_deltas]))
    outside = tuple(d.key for d in spec if not any(fnmatch.fnmatchcase(d.key, glob) for glob in allowed))
    return Diff(
        a.id, b.id, spec, tuple(_launch_differences(a, b)), tuple(_layout_differences(a, b)), outside, allowed
    )


# --- spec ---------------------------------------------------------------------------------------


def _spec_differences(a: Cell, b: Cell) -> Iterator[Difference]:
    left, right = _leaves(a), _leaves(b)
    for key in _merged_order(list(left), list(right)):
        if left.get(key) != right.get(key):  # an unset default (None) is no difference from absent
            yield Difference(
                dotted(key),
                left.get(key),
                right.get(key),
                _source(a, key),
                _source(b, key),
                _why(a, b, key),
            )


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


def _reason(cell: Cell, key: Key) -> str:
    steps = cell.composed.provenance.get(key, ())
    written = next((s.why for s in reversed(steps) if s.why), "")
    return written or cell.spec.why_not.get(dotted(key), "")


# --- launch ---------------------------------------------------------------------------------------


def _launch_differences(a: Cell, b: Cell) -> Iterator[Difference]:
    la, lb = render(a), render(b)
    for name in ("train_script", "num_gpus_per_node"):
        if getattr(la, name) != getattr(lb, name):
            yield Difference(name, getattr(la, name), getattr(lb, name), None, None, "")
    fa, fb = _flags(la), _flags(lb)
    for (name,) in _merged_order([(f,) for f in fa], [(f,) for f in fb]):
        if fa.get(name) != fb.get(name):
            key_a, key_b = _flag_key(a, name), _flag_key(b, name)
            source_a = _source(a, key_a) if key_a else None
            source_b = _source(b, key_b) if key_b else None
            why = _why(a, b, key_b or key_a)
            yield Difference(f"--{name}", _shown(fa.get(name)), _shown(fb.get(name)), source_a, source_b, why)
    for (name,) in _merged_order([(k,) for k in la.env], [(k,) for k in lb.env]):
        if la.env.get(name) != lb.env.get(name):
            key = ("env", name)
            yield Difference(
                f"env {name}",
                la.env.get(name),
                lb.env.get(name),
                _source(a, key),
                _source(b, key),
                _why(a, b, key),
            )


def _why(a: Cell, b: Cell, key: Key | None) -> str:
    return (_reason(b, key) or _reason(a, key)) if key else ""


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
    for name in fa:
        if fa[name] != fb[name]:
            yield Difference(name, fa[name], fb[name], None, None, "")


def _layout_facts(cell: Cell, facts: Layout) -> dict[str, Any]:
    e, act = facts.engine, facts.actor
    mode = (
        "colocate" if facts.colocate else ("async" if cell.spec.launch.script == "train_async.py" else "sync")
    )
    return {
        "mode": mode,
        "GPUs for training": facts.actor_gpus + facts.critic_gpus,
        "GPUs for rollout": facts.rollout_gpus,
        "actor TP x PP x CP": f"{act.tp} x {act.pp} x {act.cp}",
        "actor DP": _count(act.dp),
        "actor EP x ETP": f"{act.ep} x {act.etp}",
        "engines": facts.engines,
        "GPUs per engine": e.gpus,
        "engine TP / DP / EP": f"{e.tp} / {e.dp} / {e.ep}",
        "DP-attention": e.dp_attention,
        "attention-TP per DP rank": _count(e.attention_tp),
        "MoE-TP": _count(e.moe_tp),
    }


def _count(value: float) -> int | float:
    return int(value) if value.is_integer() else round(value, 2)
