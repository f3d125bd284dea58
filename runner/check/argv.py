"""F*: every flag of the launch against the catalog of the miles version the cell targets.

Aliases are resolved before any rule runs (``Cell.flag`` sees canonical names); these rules
look at the names and values as written, in the spec's groups and in MODEL_ARGS.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from runner.cell import Cell
from runner.check import rule
from runner.check.spec import INTEGER_FLAGS
from runner.errors import Location, Problem, did_you_mean
from runner.knowledge.flags import Choice, Flag, load, shipped
from runner.knowledge.flags.values import Verdict, judge
from runner.layout import Layout

# values a dedicated rule already judges (G4 integers, M12 dispatchers, M13 attention backends, S12 NSA
# backends): F3/F4 leave them to it, so one wrong value is one error
JUDGED_ELSEWHERE = frozenset(
    {
        *INTEGER_FLAGS,
        "moe-token-dispatcher-type",
        "attention-backend",
        "sglang-nsa-prefill-backend",
        "sglang-nsa-decode-backend",
    }
)

# miles loads these functions at parse time, and each may add flags of its own (add_arguments)
CUSTOM_FUNCTIONS = ("rollout-function-path", "custom-generate-function-path")


def _written(cell: Cell) -> Iterator[tuple[str, str, Any, Location]]:
    """(dotted key, name as written, value, where) of every flag the launch passes."""
    for name, value in cell.preset.model_args.items():
        yield f"model_args.{name}", name, value, cell.preset_source.location(("model_args", name))
    for group, flags in cell.spec.args.groups():
        for name, value in flags.items():
            yield f"args.{group}.{name}", name, value, cell.location("args", group, name)


@rule("F1")
def known_flags(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A flag the launched programs do not accept makes argparse exit before anything starts."""
    if cell.flags is None:
        return
    catalog = cell.flags.catalog
    custom = [f for f in CUSTOM_FUNCTIONS if cell.flag(f)]
    for key, name, _, where in _written(cell):
        if catalog.lookup(name, cell.backend) is not None:
            continue
        knowing = _knowing(cell.flags, name, cell.backend)
        hint = (
            f"drop it, or check against miles {knowing[0]} (miles_version: {knowing[0]})"
            if knowing
            else did_you_mean(name, catalog.names(cell.backend))
            or "search the catalog: run-matrix flags show TEXT"
        )
        also = f"; miles {', '.join(knowing)} accepts it" if knowing else ""
        message = f"--{name} is not a flag of {_version(cell.flags, cell.backend)}{also}"
        if knowing and not cell.flags.stated:
            note = "; the spec names no miles_version, so this is not an error"
            yield Problem("F1", message + note, key, (where,), "warning", hint)
        elif name.startswith("sglang-") and not did_you_mean(name, catalog.names(cell.backend)):
            sglang = catalog.sources.get("sglang", "SGLang")
            note = f"; the catalog read {sglang}, and the branch the container installs may add flags"
            yield Problem("F1", message + note, key, (where,), "warning", hint)
        elif custom:
            yield Problem(
                "F1",
                message + f"; the function of --{custom[0]} may add it",
                key,
                (where,),
                "warning",
                hint,
            )
        else:
            yield Problem("F1", message, key, (where,), hint=hint)


@rule("F2")
def one_spelling(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A flag set under two spellings (an alias, a deprecated name): argparse keeps the last one."""
    if cell.flags is None:
        return
    catalog = cell.flags.catalog
    seen: dict[str, list[tuple[str, str, Location]]] = {}
    for key, name, value, where in _written(cell):
        flag = catalog.lookup(name, cell.backend)
        if flag is not None and value is not False:
            seen.setdefault(flag.same_as or flag.name, []).append((key, name, where))
    for canonical, places in seen.items():
        spellings = list(dict.fromkeys(name for _, name, _ in places))
        if len(spellings) > 1:
            yield Problem(
                "F2",
                f"--{canonical} is set under {len(spellings)} spellings: "
                + ", ".join(f"--{s}" for s in spellings)
                + "; argparse keeps the last one on the command line",
                places[-1][0],
                tuple(where for _, _, where in places),
                hint=f"keep one, as {canonical}",
            )


@rule("F3")
def values_in_choices(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A value outside the flag's choices: argparse lists them and exits."""
    yield from _verdicts(cell, "F3")


@rule("F4")
def values_of_the_right_kind(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A value of the wrong type (`rollout-batch-size: eight`), a switch given a value, a wrong count."""
    yield from _verdicts(cell, "F4")


def _verdicts(cell: Cell, wanted: str) -> Iterator[Problem]:
    if cell.flags is None:
        return
    catalog = cell.flags.catalog
    for key, name, value, where in _written(cell):
        flag = catalog.lookup(name, cell.backend)
        if flag is None or flag.name in JUDGED_ELSEWHERE:
            continue
        memo = (cell.backend, name, _value_key(value))
        if memo not in catalog.memo:
            catalog.memo[memo] = judge(flag, value)
        verdict: Verdict = catalog.memo[memo]
        if verdict is not None and verdict[0] == wanted:
            rule_id, message, hint = verdict
            yield Problem(rule_id, message, key, (where,), hint=hint or _choice_hint(flag, value))


def _choice_hint(flag: Flag, value: Any) -> str:
    if flag.choices is None or isinstance(value, list):
        return ""
    return did_you_mean(str(value), map(str, flag.choices))


def _value_key(value: Any) -> Any:
    if isinstance(value, list):
        return tuple((type(item).__name__, str(item)) for item in value)
    return (type(value).__name__, str(value))


def _version(choice: Choice, backend: str) -> str:
    trainer = "its FSDP backend" if backend == "fsdp" else "Megatron"
    if choice.checkout is not None:
        return f"the miles checkout at {choice.checkout} (nor of {trainer} and SGLang as checked with it)"
    return f"miles {choice.catalog.miles} (nor of {trainer} and the SGLang its container installs)"


def _knowing(choice: Choice, name: str, backend: str) -> list[str]:
    """The other shipped miles versions that accept a flag: it was removed, or is not there yet."""
    others = [load(path) for path in shipped() if load(path).miles != choice.catalog.miles]
    return [c.miles for c in others if c.lookup(name, backend) is not None]
