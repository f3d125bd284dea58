"""why: the reasons a file gives for what it sets, read into one reason per dotted key.

A ``why:`` stands at the top of a file (dotted keys) or in any mapping, next to what it explains
(keys relative to that mapping; as text, the reason for the mapping itself). One entry may name
several keys — ``a.b, a.c`` or ``a.{b, c}`` — so a reason shared by keys is written once. A
reason must name a key the same file sets; ``compose`` records it in each key's provenance.
"""

from __future__ import annotations

from typing import Any

from runner.errors import Collector, Problem, did_you_mean
from runner.spec.load import Document, Key, dotted, walk

RESERVED = ("extends", "why")  # top-level keys that say how to compose, not what a spec is
# top-level keys about the spec, not the spec: diff leaves them out, and no reason is asked of them
ABOUT_THE_SPEC = ("description", "allowed_deltas", "why_not", "todo")
# mappings whose keys are data, not the spec's own (None: any key): a check's arguments, where a key
# named why is an argument the check is given
DATA = (("verify", None, "args"),)


def is_data(key: Key) -> bool:
    """Whether ``key`` is, or lies inside, a mapping whose keys are data (``verify.NAME.args``)."""
    return any(
        len(key) >= len(pattern) and all(part in (None, k) for part, k in zip(pattern, key, strict=False))
        for pattern in DATA
    )


def own(doc: Document) -> dict[str, Any]:
    """What the file sets: its data without ``extends:`` and without the ``why:`` of any level (but
    inside data, such as a check's arguments)."""

    def without_why(value: dict[str, Any], key: Key) -> dict[str, Any]:
        if is_data(key):
            return value
        return {
            k: without_why(v, (*key, k)) if isinstance(v, dict) else v for k, v in value.items() if k != "why"
        }

    return without_why({k: v for k, v in doc.data.items() if k not in RESERVED}, ())


def reasons(doc: Document, problems: Collector) -> dict[str, str]:
    """Each key's reason. A ``why:`` may stand at the top, with dotted keys, or in any mapping,
    next to what it explains, with keys relative to that mapping (or, as text, the reason for the
    mapping itself); an entry may name several keys (``a.b, a.c``, or ``args.misc.{x, y}``): one
    reason, written once, for every key it names."""
    written = {dotted(key) for key, _ in walk(own(doc))}
    reasons: dict[str, str] = {}
    blocks: list[tuple[Key, Any]] = [((), doc.data.get("why", {}))]
    blocks += [
        (key[:-1], value)
        for key, value in walk(_own_with_why(doc))
        if key[-1] == "why" and len(key) > 1 and not is_data(key[:-1])
    ]
    for prefix, raw in blocks:
        if prefix and isinstance(raw, str):  # a reason for the mapping it stands in
            raw = {"": raw}
        if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
            where = dotted((*prefix, "why"))
            problems.add(
                Problem(
                    "type",
                    f"{where}: expected a mapping of keys (or key lists) to reasons (text)",
                    where,
                    (doc.location((*prefix, "why")),),
                    hint="why is reserved for reasons at every level: text, or keys to reasons",
                )
            )
            continue
        for entry, reason in raw.items():
            _reasons_of(doc, prefix, entry, reason, written, reasons, problems)
    return reasons


def _own_with_why(doc: Document) -> dict[str, Any]:
    return {k: v for k, v in doc.data.items() if k not in RESERVED}


def _reasons_of(
    doc: Document,
    prefix: Key,
    entry: str,
    reason: str,
    written: set[str],
    reasons: dict[str, str],
    problems: Collector,
) -> None:
    """One ``why:`` entry's keys into ``reasons``; what it names wrongly into ``problems``."""
    where = doc.location((*prefix, "why", entry) if entry else (*prefix, "why"))
    key = dotted((*prefix, "why", entry) if entry else (*prefix, "why"))
    try:
        names = [dotted((*prefix, name)) for name in why_keys(entry)] if entry else [dotted(prefix)]
    except ValueError as exc:
        problems.add(Problem("why", f"why: {entry!r}: {exc}", key, (where,)))
        return
    for name in names:
        if name in reasons:
            message = f"why: {name!r} is given a reason twice"
            problems.add(Problem("why", message, key, (where,), hint="name each key once"))
        elif name not in written and problems.room():
            # not a key this entry names already (that one has its reason), nor a mapping above one
            above = {n.rsplit(".", depth)[0] for n in names for depth in range(1, n.count(".") + 1)}
            others = written - set(names) - above
            hint = did_you_mean(name, others) or "a reason belongs in the file that makes the change."
            message = f"why: gives a reason for {name!r}, {UNSET}"
            problems.add(Problem("why", message, key, (where,), hint=hint))
        reasons[name] = reason


UNSET = "which this file does not set"  # a why: naming a key its file does not set: often a typo of it
MAX_WHY_KEYS = 256  # keys one why: entry may name


def why_keys(entry: str) -> list[str]:
    """The dotted keys a ``why:`` entry names: comma-separated keys, each with at most one
    ``{a, b}`` group of alternatives (``env.{NVTE_FUSED_ATTN, NVTE_FLASH_ATTN}``)."""
    names: list[str] = []
    for item in _split_top_level(entry):
        head, brace, rest = item.partition("{")
        if not brace:
            names.append(item)
            continue
        options, close, tail = rest.partition("}")
        if not close or "{" in options or "{" in tail or "}" in tail:
            raise ValueError("a key list takes one {a, b} group per key, closed")
        names += [f"{head}{option.strip()}{tail}" for option in options.split(",")]
    if not names or any(not n or n.startswith(".") or n.endswith(".") or ".." in n for n in names):
        raise ValueError("an empty key: write keys as a.b, a.c or a.{b, c}")
    if len(names) > MAX_WHY_KEYS:
        raise ValueError(f"names more than {MAX_WHY_KEYS} keys")
    return names


def _split_top_level(entry: str) -> list[str]:
    """``a, b.{c, d}`` -> ``a``, ``b.{c, d}``: commas inside braces do not split."""
    items, depth, current = [], 0, ""
    for char in entry:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    return [*items, current.strip()]


def reason_for(key: Key, reasons: dict[str, str]) -> str:
    """The reason for ``key``: its own, or that of its nearest parent."""
    for depth in range(len(key), 0, -1):
        reason = reasons.get(dotted(key[:depth]))
        if reason:
            return reason
    return ""
