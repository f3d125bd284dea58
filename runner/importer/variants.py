"""variants: run a script once per variant and turn what differs into matrix axes.

* **Switches** (``miles/import.yaml``): each environment variable the script reads that is a
  known switch is tried at both values, every combination once, always in the same order. A
  switch whose values launch the same thing is no axis; otherwise it is an axis whose first
  value is the one that launches what the script launches with the variable unset.
* **Calls**: a script that calls ``execute_train`` several times (``for mode in MODES:
  execute(mode)``) gets one more axis, named after the one argument of the calling function
  that differs between the calls, else ``call`` (1, 2, ...).

The result is every cell's axis values and target, in the order the matrix expands them.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.errors import Location
from runner.importer import capture
from runner.importer.events import refused
from runner.importer.knowledge import Knowledge
from runner.importer.notes import Note
from runner.importer.target import Target, target_of
from runner.importer.traced import Registration, Run
from schemas import LaunchConventions
from schemas.matrix import AxisValue

Combo = dict[str, AxisValue]
Record = Callable[[Mapping[str, str]], Run]  # one run of the script with these switches set
MAX_SWITCHES = 4
# an axis value named after the caller's argument: a word (a mode, a version), not an object's text
AXIS_WORD = re.compile(r"[A-Za-z0-9_.+-]{1,40}")
NO_WANDB = (
    "the script adds no W&B flags (it never calls get_default_wandb_args); with WANDB_API_KEY set,"
    " run-matrix adds them"
)


@dataclass(frozen=True)
class Variants:
    axes: dict[str, list[AxisValue]]  # the first value of each is its default
    cells: list[tuple[Combo, Target]]  # in the order the matrix expands them
    switches: dict[str, str]  # environment variable -> axis
    notes: list[Note]
    registrations: tuple[Registration, ...] = ()  # register_*_ci and register_ci_gate, at module level
    run: Run | None = None  # the run with no switch set
    reads: frozenset[str] = frozenset()  # every variable a run read


def explore(
    script: Path, record: Record, conventions: LaunchConventions, known: Knowledge, unset: Run | None = None
) -> Variants:
    """The script's variants (``unset``: its run with no switch set, when made already)."""
    unset = record({}) if unset is None else unset
    switches, runs = _runs(script, record, unset, known)
    notes = [note for run in (unset, *runs.values()) for note in run.notes]
    built = {combo: _targets(run, conventions, known, notes) for combo, run in runs.items()}
    defaults = _defaults(script, switches, _targets(unset, conventions, known, []), built)
    axes: dict[str, list[AxisValue]] = {}
    for name, default in zip(switches, defaults, strict=True):
        if default is not None:
            axes[known.switches[name].axis] = [default, not default]
    call_axis, call_values = _call_axis(unset)
    if len(call_values) > 1:
        axes[call_axis] = call_values
    cells = _cells(script, axes, switches, known, built, call_axis)
    notes += _other_reads(unset, switches, known)
    if not unset.wandb:
        notes.append(Note(NO_WANDB, Location(script)))
    used = {name: known.switches[name].axis for name in switches if known.switches[name].axis in axes}
    reads = frozenset(name for run in (unset, *runs.values()) for name in run.env_reads)
    return Variants(axes, cells, used, _unique(notes), unset.registrations, unset, reads)


def _runs(
    script: Path, record: Record, unset: Run, known: Knowledge
) -> tuple[list[str], dict[tuple[bool, ...], Run]]:
    """A run per combination of the switches read (a switch read only in some variant is found too)."""
    switches = _switches_read(script, [unset], known)
    while True:
        combos = _combos(len(switches))
        envs = [_env(combo, switches, known) for combo in combos]
        made = capture.each_of(functools.partial(record, env) if env else lambda: unset for env in envs)
        runs = dict(zip(combos, made, strict=True))
        more = _switches_read(script, [unset, *runs.values()], known)
        if more == switches:
            return switches, runs
        switches = more


def _switches_read(script: Path, runs: list[Run], known: Knowledge) -> list[str]:
    names = list(dict.fromkeys(name for run in runs for name in run.env_reads if name in known.switches))
    if len(names) > MAX_SWITCHES:
        raise refused(
            Location(script),
            f"reads {len(names)} variant switches ({', '.join(names)}); more than {MAX_SWITCHES} are not"
            " tried (each doubles the runs)",
        )
    return names


def _combos(count: int) -> list[tuple[bool, ...]]:
    return list(itertools.product((False, True), repeat=count))


def _env(combo: tuple[bool, ...], switches: list[str], known: Knowledge) -> dict[str, str]:
    return {name: known.switches[name].value(on) for name, on in zip(switches, combo, strict=True)}


def _targets(run: Run, conventions: LaunchConventions, known: Knowledge, notes: list[Note]) -> list[Target]:
    found: list[Target] = []
    for call in run.calls:
        earlier = list(zip(run.calls, found, strict=False))  # the calls before this one, built
        built, call_notes = target_of(run, call, conventions, known, earlier)
        found.append(built)
        notes += call_notes
    return found


def _defaults(
    script: Path, switches: list[str], unset: list[Target], built: dict[tuple[bool, ...], list[Target]]
) -> list[bool | None]:
    """Per switch: the value that launches what unset launches; None for a switch that changes nothing."""
    idle = [all(built[c] == built[_flip(c, i)] for c in built) for i in range(len(switches))]
    same = [c for c in built if built[c] == unset and not any(c[i] for i in range(len(c)) if idle[i])]
    if not same:
        raise refused(
            Location(script),
            f"launches with {', '.join(switches)} unset what no value of them launches; the axes would have"
            " no default",
        )
    return [None if idle[i] else same[0][i] for i in range(len(switches))]


def _flip(combo: tuple[bool, ...], index: int) -> tuple[bool, ...]:
    return tuple(not v if i == index else v for i, v in enumerate(combo))


def _call_axis(run: Run) -> tuple[str, list[AxisValue]]:
    """The axis several execute_train calls make: the caller's one differing argument (a number, a
    word), else ``call``."""
    if len(run.calls) < 2:
        return "call", [1]
    names = {n for c in run.calls for n in c.parameters}
    differing = [n for n in sorted(names) if len({repr(c.parameters.get(n)) for c in run.calls}) > 1]
    values = [c.parameters.get(differing[0]) for c in run.calls] if len(differing) == 1 else []
    scalars = [
        v
        for v in values
        if isinstance(v, (bool, int, float)) or (isinstance(v, str) and AXIS_WORD.fullmatch(v))
    ]
    if values and len(scalars) == len(values) and len(set(map(repr, values))) == len(values):
        return differing[0], scalars
    return "call", list(range(1, len(run.calls) + 1))


def _cells(
    script: Path,
    axes: dict[str, list[AxisValue]],
    switches: list[str],
    known: Knowledge,
    built: dict[tuple[bool, ...], list[Target]],
    call_axis: str,
) -> list[tuple[Combo, Target]]:
    cells = []
    for values in itertools.product(*axes.values()):
        combo = dict(zip(axes, values, strict=True))
        run = tuple(bool(combo.get(known.switches[name].axis, False)) for name in switches)
        calls = built[run]
        if len(calls) != len(built[next(iter(built))]):
            raise refused(
                Location(script), "calls execute_train a different number of times in different variants"
            )
        index = axes[call_axis].index(combo[call_axis]) if call_axis in combo else 0
        cells.append((combo, calls[index]))
    return cells


def _other_reads(run: Run, switches: list[str], known: Knowledge) -> list[Note]:
    return [
        Note(f"reads {name}, which is no known switch; imported as the script runs with it unset", at)
        for name, at in run.env_reads.items()
        if name not in switches
        and name not in run.switches  # set for every run: a platform's CI environment
        and name not in known.helper_env
        and name not in known.switches
        and name not in capture.SANDBOX_VARIABLES
        and name not in capture.BUILD_QUESTIONS
    ]


def _unique(notes: list[Note]) -> list[Note]:
    return list(dict.fromkeys(notes))
