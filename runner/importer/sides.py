"""sides: a test recorded once per platform it registers for, as one set of cells.

    explore (unset) -> sides (platforms.py) -> explore per side, in its CI's environment -> combine

One side is today's import. Two sides (CUDA and ROCm) become a ``platform`` axis whose first value
is the CUDA side: the spec holds what the CUDA cells need, and the ROCm cells get a component that
holds what differs — its hardware, its ``ci:`` block, every flag and variable the ROCm CI's
environment changed — each with a ``why:`` (:func:`explain`). A ROCm side the recorder refuses (the
test raises under that environment, as in miles' own AMD launcher) is a note at its line, and the
CUDA side is imported alone.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from runner.errors import Location, SpecError
from runner.importer import capture, platforms
from runner.importer.knowledge import knowledge
from runner.importer.notes import Note
from runner.importer.plan import Combo, ImportPlan
from runner.importer.platforms import AXIS, NAMES, Side
from runner.importer.registrations import PLATFORM_NAMES
from runner.importer.traced import UPSTREAM, Run
from runner.importer.variants import Record, Variants, explore
from runner.knowledge import ci_platforms
from runner.knowledge.ci_platforms import CIKnowledge
from schemas import LaunchConventions
from schemas.matrix import AxisValue

NO_SWITCH = "which is no known switch"


@dataclass(frozen=True)
class Recorded:
    variants: Variants  # every cell of every side
    sides: tuple[Side, ...]  # the sides imported: none (no registration), one, or CUDA then ROCm
    runs: dict[str, Run]  # each side's run with no switch set
    ci: CIKnowledge
    dropped: frozenset[str] = frozenset()  # platforms whose side was recorded, not imported (a note says why)

    def reject(self, combos: Sequence[Mapping[str, Any]], reason: str) -> None:
        """Raise :class:`SideRejected` when every cell of ``combos`` is of the second side (the first
        side then imports alone); else return, and the import is refused as a whole."""
        if len(self.sides) < 2 or not combos or any(c.get(AXIS) != self.sides[1].platform for c in combos):
            return
        first, second = self.sides
        note = Note(
            f"the {NAMES[second.platform]} side is not imported: {reason}",
            second.registration.at if second.registration else self.variants.notes[0].at,
        )
        alone = dataclasses.replace(
            self.variants,
            axes={axis: values for axis, values in self.variants.axes.items() if axis != AXIS},
            cells=[
                ({k: v for k, v in combo.items() if k != AXIS}, target)
                for combo, target in self.variants.cells
                if combo.get(AXIS) == first.platform
            ],
            notes=[*self.notes_without_ci(second), note],
        )
        runs = {first.platform: self.runs[first.platform]}
        raise SideRejected(Recorded(alone, (first,), runs, self.ci, self.dropped | {second.platform}))

    def notes_without_ci(self, side: Side) -> list[Note]:
        return [
            n
            for n in self.variants.notes
            if not n.message.startswith(f"miles' {PLATFORM_NAMES[side.platform]} CI")
        ]

    def hardware_of(self, default: str | None) -> Callable[[Combo], str | None]:
        """The hardware of a cell: its side's, on a platform axis; else ``default``."""
        if len(self.sides) < 2:
            return lambda combo: default
        chosen = {side.platform: side.hardware for side in self.sides}
        return lambda combo: chosen.get(str(combo.get(AXIS)), default)


class SideRejected(Exception):
    """The second side's cells fail where the first side's do not: import the first alone."""

    def __init__(self, remaining: Recorded) -> None:
        super().__init__("a side of the import was rejected")
        self.remaining = remaining


def knowledge_of(miles_root: Path | None, version: str | None) -> CIKnowledge:
    """miles' CI as the user's checkout has it, else as shipped for ``version``."""
    return (
        ci_platforms.of_checkout(miles_root) if miles_root is not None else ci_platforms.for_version(version)
    )


class Asked(Protocol):
    """What of import's request the sides depend on (``runner.importer.Request``)."""

    @property
    def script(self) -> Path: ...
    @property
    def output(self) -> Path: ...
    @property
    def hardware(self) -> str | None: ...
    @property
    def miles_root(self) -> Path | None: ...


def record(request: Asked, record: Record, conventions: LaunchConventions, version: str | None) -> Recorded:
    """The test recorded in the unset environment, then once per side (:func:`platforms.sides`)."""
    known = knowledge()
    ci = knowledge_of(request.miles_root, version)
    unset_run = record({})  # the sides follow what it registers
    secrets = frozenset(conventions.secrets)
    chosen, notes = platforms.sides(unset_run.registrations, ci, request.output, request.hardware, secrets)
    # a side's first run needs nothing but the sides: asked beside the unset run's variants
    unset, firsts = capture.both(
        functools.partial(explore, request.script, record, conventions, known, unset_run),
        functools.partial(capture.each_of, [functools.partial(_first_run, side, record) for side in chosen]),
    )
    notes += _unread(ci, request.miles_root)
    recorded: list[tuple[Side, Variants]] = []
    registered = {r.name for r in unset.registrations if r.kind == "ci"}
    dropped = (
        set() if request.hardware else {p for p in platforms.ORDER if platforms.REGISTER[p] in registered}
    )
    dropped -= {side.platform for side in chosen}
    # each side's recordings are its own: one the cache lacks is asked beside the other side's
    found_sides = capture.each_of(
        functools.partial(_explored, request.script, side, unset, first, record, conventions)
        for side, first in zip(chosen, firsts, strict=True)
    )
    for side, found in zip(chosen, found_sides, strict=True):
        if isinstance(found, Variants):
            recorded.append((side, found))
            continue
        if len(chosen) == 1:
            raise found
        notes.append(_not_imported(side, found, request.script))
        dropped.add(side.platform)
    if not recorded:
        return Recorded(dataclasses.replace(unset, notes=[*unset.notes, *notes]), (), {}, ci)
    combined = _combined(recorded, notes, ci)
    return dataclasses.replace(combined, dropped=combined.dropped | frozenset(dropped))


def _unread(ci: CIKnowledge, root: Path | None) -> list[Note]:
    """What of the checkout's CI files could not be read: each a note at its line, and import goes on."""
    found = []
    for problem in ci.problems:
        at = problem.locations[0] if problem.locations else Location(Path(".github/workflows"))
        where = Location(root / at.file, at.line) if root is not None else at
        found.append(Note(f"miles' CI is known without it: {problem.message}", where))
    return found


def _first_run(side: Side, record: Record) -> Run | SpecError | None:
    """The side's run with no switch set, or why it is refused; None for a CUDA side, which is
    recorded only once every run of the unset environment says what the test reads (``_explored``)."""
    if side.platform == "cuda":
        return None
    try:
        return record(_environment(side))
    except SpecError as refusal:
        return refusal


def _explored(
    script: Path,
    side: Side,
    unset: Variants,
    first: Run | SpecError | None,
    record: Record,
    conventions: LaunchConventions,
) -> Variants | SpecError:
    """The side's variants: recorded again with its CI's environment (``first``: its run with no
    switch set, when made already), unless nothing of it can matter (a CUDA side whose variables the
    test never reads); else why the side is refused."""
    if side.platform == "cuda" and not set(side.env) & unset.reads:
        return unset
    if isinstance(first, SpecError):
        return first
    extra = _environment(side)

    def in_environment(switches: Any) -> Run:
        return record({**extra, **switches})

    try:
        return explore(script, in_environment, conventions, knowledge(), first)
    except SpecError as refusal:
        return refusal


def _environment(side: Side) -> dict[str, str]:
    """What a run of the side sets: its CI's switches, and its platform for the stand-ins' build."""
    return {**side.switches, capture.BUILD_VARIABLE: side.platform}


def _not_imported(side: Side, refusal: SpecError, script: Path) -> Note:
    problem = refusal.problems[0]
    at = problem.locations[0] if problem.locations else None
    reason = problem.message.partition(" cannot be imported: it ")[2] or problem.message
    upstream = UPSTREAM in reason
    return Note(
        f"the {NAMES[side.platform]} side is not imported: under miles' {NAMES[side.platform]} CI environment"
        f" the test {reason}" + ("; miles raises it itself: an upstream bug to report" if upstream else ""),
        at or (side.registration.at if side.registration else problem.locations[0]),
    )


def _combined(recorded: list[tuple[Side, Variants]], notes: list[Note], ci: CIKnowledge) -> Recorded:
    sides = tuple(side for side, _ in recorded)
    runs = {side.platform: v.run for side, v in recorded if v.run is not None}
    if len(recorded) == 1:
        variants = recorded[0][1]
        return Recorded(dataclasses.replace(variants, notes=[*variants.notes, *notes]), sides, runs, ci)
    (first, a), (second, b) = recorded
    if a.axes != b.axes:
        notes.append(
            Note(
                f"the {NAMES[second.platform]} side is not imported: it has other variants than the"
                f" {NAMES[first.platform]} side ({_axes(b.axes)} against {_axes(a.axes)})",
                second.registration.at if second.registration else a.notes[0].at,
            )
        )
        alone = dataclasses.replace(a, notes=[*a.notes, *notes])
        return Recorded(alone, sides[:1], runs, ci, frozenset({second.platform}))
    axes: dict[str, list[AxisValue]] = {**a.axes, AXIS: [first.platform, second.platform]}
    own = {first.platform: dict(_keyed(a)), second.platform: dict(_keyed(b))}
    cells = []
    for values in itertools.product(*axes.values()):
        combo = dict(zip(axes, values, strict=True))
        rest = tuple((k, v) for k, v in combo.items() if k != AXIS)
        cells.append((combo, own[str(combo[AXIS])][rest]))
    set_by_ci = {name for side in sides for name in side.env}
    kept = [
        n
        for n in [*a.notes, *b.notes]
        if not any(f"reads {name}, {NO_SWITCH}" in n.message for name in set_by_ci)
    ]
    variants = Variants(
        axes,
        cells,
        {**a.switches, **b.switches},
        list(dict.fromkeys([*kept, *notes])),
        a.registrations,
        a.run,
        a.reads | b.reads,
    )
    return Recorded(variants, sides, runs, ci)


def _keyed(variants: Variants) -> list[tuple[tuple[tuple[str, Any], ...], Any]]:
    return [(tuple(combo.items()), target) for combo, target in variants.cells]


def _axes(axes: dict[str, Any]) -> str:
    return ", ".join(f"{axis}: {values}" for axis, values in axes.items()) or "no axes"


def explain(draft: ImportPlan, recorded: Recorded) -> None:
    """The ``why:`` of each component a non-default side's cells get: every key it sets, with its cause."""
    if len(recorded.sides) < 2:
        return
    default, other = recorded.sides
    for name, match in draft.adjust.items():
        if match.get(AXIS) != other.platform or name not in draft.components:
            continue
        component = draft.components[name]
        first = ("hardware", "ci")  # where the side runs, then the rest
        keys = sorted(_keys(component), key=lambda key: first.index(key) if key in first else len(first))
        run = recorded.runs.get(other.platform)
        if run is None or not keys:
            continue
        reasons = platforms.reasons(other, run, recorded.runs.get(default.platform), keys, recorded.ci)
        grouped: dict[str, list[str]] = {}
        for key, reason in reasons.items():
            grouped.setdefault(reason, []).append(key)
        component["why"] = {_named(keys): reason for reason, keys in grouped.items()}


def _named(keys: list[str]) -> str:
    """``args.misc.a, args.misc.b, env.C`` as ``args.misc.{a, b}, env.C``: one entry, short."""
    parents: dict[str, list[str]] = {}
    for key in keys:
        parent, _, leaf = key.rpartition(".")
        parents.setdefault(parent, []).append(leaf)
    return ", ".join(
        ", ".join(leaves)
        if not parent
        else f"{parent}." + (leaves[0] if len(leaves) == 1 else "{" + ", ".join(leaves) + "}")
        for parent, leaves in parents.items()
    )


def _keys(component: dict[str, Any], prefix: Sequence[str] = ()) -> list[str]:
    """The dotted keys a component sets: whole sections for hardware and ci, else each leaf."""
    found: list[str] = []
    for key, value in component.items():
        if key == "why":
            continue
        dotted = [*prefix, key]
        if isinstance(value, dict) and value and not (not prefix and key == "ci"):
            found += _keys(value, dotted)
        else:
            found.append(".".join(dotted))
    return found
