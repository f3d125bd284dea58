"""Does a spec's value fit a flag: is it a switch or a value, the right count, type and choice.

Each verdict is what argparse would do with the tokens run-matrix renders for the value
(``true`` -> ``--flag``, a list -> its items after the flag, anything else -> one token).
"""

from __future__ import annotations

from typing import Any

from runner.knowledge.flags.catalog import Flag

Verdict = tuple[str, str, str] | None  # (rule, message, hint)


def judge(flag: Flag, value: Any) -> Verdict:
    if value is False:
        return None  # renders nothing
    if flag.kind == "switch":
        if value is True:
            return None
        return (
            "F4",
            f"--{flag.name} is a switch and takes no value, got {value!r}",
            f"write `{flag.name}: true`",
        )
    if flag.kind == "other":
        return _items(flag, value if isinstance(value, list) else [value]) if value is not True else None
    if value is True:
        if flag.nargs in ("?", "*"):
            return None
        return "F4", f"--{flag.name} takes {_arity(flag)}, got true (it would be passed with none)", ""
    items = value if isinstance(value, list) else [value]
    wrong = _count(flag, items, isinstance(value, list))
    return wrong or _items(flag, items)


def _count(flag: Flag, items: list[Any], is_list: bool) -> Verdict:
    nargs = flag.nargs
    expected = 1 if nargs in (None, "?") else nargs
    if isinstance(expected, int) and len(items) != expected:
        shown = f"a list of {len(items)}" if is_list else "one value"
        return "F4", f"--{flag.name} takes {_arity(flag)}, got {shown}", ""
    if nargs == "+" and not items:
        return "F4", f"--{flag.name} takes {_arity(flag)}, got an empty list", ""
    return None


def _items(flag: Flag, items: list[Any]) -> Verdict:
    for item in items:
        if isinstance(item, str) and "${" in item:
            continue  # a shell reference ($${NAME}): its value is the environment's
        converted = _convert(flag.type, item)
        if converted is None:
            return "F4", f"--{flag.name} takes {_type_name(flag.type)}, got {item!r}", ""
        if (
            flag.choices is not None
            and converted not in flag.choices
            and str(item) not in map(str, flag.choices)
        ):
            choices = ", ".join(map(str, flag.choices))
            return "F3", f"--{flag.name} {item} is not one of its choices: {choices}", ""
    return None


def _convert(type_name: str, item: Any) -> Any:
    """The value argparse's ``type=`` would produce, or None where it would fail."""
    if isinstance(item, bool):
        return None if type_name in ("int", "float") else str(item)
    try:
        if type_name == "int":
            return int(item) if not isinstance(item, float) else None
        if type_name == "float":
            return float(item)
    except ValueError:
        return None
    return item if type_name == "unknown" else str(item)


def _arity(flag: Flag) -> str:
    what = _type_name(flag.type)
    if flag.nargs in (None, "?"):
        return f"one value ({what})"
    if flag.nargs == "+":
        return f"one or more values ({what})"
    if flag.nargs == "*":
        return f"any number of values ({what})"
    return f"{flag.nargs} values ({what})"


def _type_name(type_name: str) -> str:
    return {"int": "an integer", "float": "a number", "str": "text"}.get(type_name, "a value")
