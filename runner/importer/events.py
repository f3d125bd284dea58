"""What the import sandbox's trace holds before a launch, as run-matrix reads it, and the one shape of
a refusal. A module of its own so that ``prepare`` (which maps events to steps) and ``capture`` (which
asks ``prepare`` which commands a step runs) need not import each other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import Location, SpecError


@dataclass(frozen=True)
class Event:
    """One thing the script did before launching: a command, a helper call, a file its own code wrote,
    or a call of a function of its own that prepares the node (recorded, its body never run)."""

    kind: str  # command | helper | write | call
    name: str  # exec_command, hf_download_dataset, convert_checkpoint, the function called, ...
    command: str  # the command; the path written; PATH.py:function called
    args: dict[str, Any]
    at: Location


def location(at: Sequence[Any]) -> Location:
    """A trace's [file, line] as a Location."""
    return Location(Path(at[0]), at[1])


def refused(at: Location, reason: str) -> SpecError:
    """The one shape of every import refusal: which script, the line, why; nothing was written."""
    return SpecError.one(
        "import", f"{at.file.name} cannot be imported: it {reason}", at=[at], hint="nothing was written"
    )
