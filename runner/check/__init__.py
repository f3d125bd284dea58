"""check: rules over a cell, each a small generator of problems with a stable id.

Ids: F* flags against the miles version's flag catalog, G* spec hygiene (G16, an overlay's
values without a reason, only when ``validate --strict`` asks for the review bar), L* miles,
S* SGLang (one rollout engine), M* Megatron (the actor), P* platform capabilities from the
hardware profile. L/S/M ids are those of shared/reference/parallelism-rules.md. Rules never
raise; ``run`` collects every problem so a user sees them all at once.

Each rule says what it checks and where that knowledge comes from in its docstring: a first
paragraph (one or two sentences for a rules table), then a ``Source:`` paragraph (where the real
system enforces it). :func:`documented` reads them back, with the rules raised outside the
registry (:data:`OUTSIDE_REGISTRY`), for the documentation's rule table.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from runner import errors
from runner.cells.cell import Cell
from runner.cells.layout import Layout, layout
from runner.errors import Location, Problem, Severity
from runner.spec.load import Key, dotted
from runner.spec.references import is_set, references

Rule = Callable[[Cell, Layout], Iterator[Problem]]
RULES: dict[str, Rule] = {}
STRICT: set[str] = set()  # rules of the review bar: run by ``validate --strict`` alone


def rule(rule_id: str, strict: bool = False) -> Callable[[Rule], Rule]:
    def register(function: Rule) -> Rule:
        assert rule_id not in RULES, f"rule {rule_id} registered twice"
        RULES[rule_id] = function
        if strict:
            STRICT.add(rule_id)
        return function

    return register


SOURCE = "Source:"  # the docstring paragraph that names where a rule's knowledge comes from
FAMILIES = "FGLSMP"  # the order of the rule table: flags, spec, miles, SGLang, Megatron, platform


@dataclass(frozen=True)
class RuleDoc:
    """One row of the rule table: what a rule checks, where the real system enforces it (or where
    run-matrix's knowledge comes from), the module that raises it, and whether only
    ``validate --strict`` runs it."""

    id: str
    checks: str
    source: str
    module: str
    strict: bool = False


# Rules raised outside the registry: F0 while the flag catalog is chosen, G9 across a spec's cells in
# the order they run (``across``, from pipeline.cells), G14 while a spec is composed.
OUTSIDE_REGISTRY = (
    RuleDoc(
        "F0",
        "A `miles_version` that names no single shipped flag catalog: no flag of the launch could be"
        " checked against what that miles accepts.",
        "run-matrix's shipped flag catalogs (miles/flags/), chosen in runner/knowledge/flags",
        "runner.knowledge.flags",
    ),
    RuleDoc(
        "G9",
        "A value read at launch names a file an earlier cell's `--save` folder holds, and the reading"
        " cell's own prepare does not remove it: otherwise the file is not there when the cell starts.",
        "run-matrix's launch-time reads; the output flags are `output_flags` of the launch conventions"
        " (miles/launch/)",
        "runner.check.reads",
    ),
    RuleDoc(
        "G14",
        "A file a spec names to compose (an `extends:` base, an `adjust:` overlay) lies inside the spec's"
        " root, run-matrix's own files or an `--allow-root` folder; any other is refused before it is"
        " opened.",
        "run-matrix's trust boundary (runner/spec/repository.py), raised while the spec is composed",
        "runner.spec.repository",
    ),
)


def described(checks: str, source: str) -> str:
    """The docstring of a rule made by code (a table's entry): read back by :func:`rule_doc`."""
    return f"{checks}\n\n{SOURCE} {source}"


def rule_doc(rule_id: str, function: Rule) -> RuleDoc:
    """A registered rule's row: its docstring's first paragraph and its ``Source:`` paragraph, each
    on one line (empty where the docstring lacks it)."""
    paragraphs = [" ".join(part.split()) for part in re.split(r"\n\s*\n", inspect.getdoc(function) or "")]
    paragraphs = [part for part in paragraphs if part]
    checks = paragraphs[0] if paragraphs and not paragraphs[0].startswith(SOURCE) else ""
    source = next((p.removeprefix(SOURCE).strip() for p in paragraphs if p.startswith(SOURCE)), "")
    return RuleDoc(rule_id, checks, source, function.__module__, rule_id in STRICT)


def documented() -> list[RuleDoc]:
    """Every rule id, registered or not, in the rule table's order: by family (F, G, L, S, M, P),
    then by number. The registry is full here: this module imports every rule module at its end."""
    rows = [rule_doc(rule_id, function) for rule_id, function in RULES.items()]
    return sorted([*rows, *OUTSIDE_REGISTRY], key=lambda row: (FAMILIES.index(row.id[0]), int(row.id[1:])))


# counts of the rollout side alone: Megatron's rules (M) do not reason from them
ROLLOUT_COUNTS = frozenset(
    {"rollout-num-gpus", "rollout-num-gpus-per-engine", "sglang-dp-size", "sglang-ep-size", "sglang-pp-size"}
)


def run(cell: Cell, strict: bool = False) -> Iterator[Problem]:
    """Every rule's problems (``strict``: the review bar's too)."""
    found: list[Problem] = []
    facts = layout(cell)
    bad = set(spec.bad_counts(cell))
    for rule_id, check in RULES.items():
        if (bad and _waits(rule_id, bad)) or (rule_id in STRICT and not strict):
            continue  # G4's errors come first
        found += check(cell, facts)
    yield from found


def across(cells: Sequence[Cell]) -> list[Problem]:
    """What must hold across a spec's cells, in the order they run (rule G9: what a cell reads at
    launch, an earlier cell writes); each cell's own rules are ``run``'s."""

    return reads.across(cells)


def _waits(rule_id: str, bad_counts: set[str]) -> bool:
    """Whether a rule waits for the counts G4 rejects: the L, S and P rules reason from counts of at
    least 1, the M rules from the actor's (a rollout of 0 GPUs leaves Megatron's verdicts standing)."""
    if rule_id[0] in "GF":
        return False
    if rule_id[0] == "M":
        return bool(bad_counts - ROLLOUT_COUNTS)
    return True


def problem(
    rule_id: str,
    cell: Cell,
    flags: tuple[str, ...],
    message: str,
    hint: str = "",
    severity: Severity = "error",
) -> Problem:
    """A problem about miles flags, headlined where the user wrote last.

    Every flag that is set, and every key a derived one was computed from through ``${...}``,
    is a place: the headline is the most recently written of them (the latest file of the
    chain: the overlay the user edited, over the spec, over its bases and the model preset),
    the others follow as "also at", each with its key.
    """
    places = [place for name in flags if cell.flag(name) is not None for place in _places(cell, name)]
    if not places:
        return Problem(
            rule_id, message, key_of(cell, flags[0]) if flags else "", (Location(cell.path),), severity, hint
        )
    key, locations = newest_first(cell, places)
    return Problem(rule_id, message, key, locations, severity, hint)


def newest_first(cell: Cell, places: list[Location]) -> tuple[str, tuple[Location, ...]]:
    """The key of the most recently written place (the headline), and every place, that one first."""
    ordered = errors.newest_first(places, cell.composed.files)
    return ordered[0].key, (replace(ordered[0], key=""), *ordered[1:])


def _places(cell: Cell, name: str) -> list[Location]:
    """Where --name was written, then where each key it was derived from was written."""
    key = key_of(cell, name)
    places = [replace(cell.where(name), key=key)]
    if key.startswith("args."):
        for source in derived_from(cell, tuple(key.split(".", 2))):
            places.append(replace(cell.composed.location(source), key=dotted(source)))
    return places


def derived_from(cell: Cell, key: Key, seen: set[Key] | None = None) -> list[Key]:
    """The keys whose values ``key``'s ``${...}`` read, and theirs, each once."""
    seen = set() if seen is None else seen
    raw: Any = cell.composed.data
    for name in key:
        raw = raw.get(name) if isinstance(raw, dict) else None
    found: list[Key] = []
    for source in references(raw):
        if source not in seen and source[0] != "matrix" and is_set(cell.composed.data, source):
            seen.add(source)
            found += [source, *derived_from(cell, source, seen)]
    return found


def key_of(cell: Cell, name: str) -> str:
    found = cell.spelling(name)
    if found is None:
        return f"args.*.{name}"
    group, written = found
    if group is not None:
        return f"args.{group}.{written}"
    return f"model.args.{written}" if written in cell.spec.model.args else f"model_args.{written}"


# The rule modules register themselves on import, in this order: the order problems are shown in.
# isort: off
from runner.check import argv, megatron, miles, verify, sglang, platform, spec  # noqa: E402, F401
from runner.check import reads, hooks, prepared, run_id, memory, reasons  # noqa: E402, F401
# isort: on
