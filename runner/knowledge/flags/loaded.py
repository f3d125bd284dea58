"""loaded: which custom functions miles' parser loads for a launch, and what one of them adds.

Light on purpose (no door, no parser of Python): a cell names its functions whether or not a checkout
is there to read them from; ``functions.py`` reads them, through the door, only when one is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.knowledge.flags.catalog import Flag

# the flags whose function miles loads at parse time, in the order it loads them
OPTIONS = ("rollout-function-path", "custom-generate-function-path")
LEGACY = "MILES_USE_LEGACY_ROLLOUT_V1"  # miles/utils/environ.py: set, miles adds no function's flags


@dataclass(frozen=True)
class Added:
    """What the function one flag names adds to miles' parser, and why not all of it could be read."""

    option: str  # the flag that names it: rollout-function-path
    function: str  # its dotted path, as written
    flags: tuple[Flag, ...]
    unread: str = ""  # why what it adds could not all be read ("": it was)


def named(flags: Mapping[str, Any], env: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(flag, dotted path) of each function miles' parser loads for a launch with ``flags`` and ``env``."""
    if _truthy(env.get(LEGACY)):
        return ()
    found = []
    for option in OPTIONS:
        value = flags.get(option)
        if option == "rollout-function-path" and flags.get("fully-async"):
            continue  # miles loads its own fully-async rollout instead
        if isinstance(value, str) and value:
            found.append((option, value))
    return tuple(found)


def _truthy(value: Any) -> bool:
    """As miles reads the variable: an integer, nonzero; anything else is not known to be set."""
    try:
        return bool(int(str(value)))
    except ValueError:
        return False
