"""F*: every flag of the launch against the catalog of the miles version the cell targets.

Aliases are resolved before any rule runs (``Cell.flag`` sees canonical names); these rules
look at the names and values as written, in the spec's groups and in MODEL_ARGS.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import rule
from runner.errors import Location, Problem, did_you_mean, printable
from runner.knowledge.flags import Choice, Flag, load, shipped
from runner.knowledge.flags.values import Verdict, judge
from runner.memos import Table, remember

# values a dedicated rule already judges (G4 integers, M12 dispatchers, M13 attention backends, S12 NSA
# backends): F3/F4 leave them to it, so one wrong value is one error
CHOICES_ELSEWHERE = (
    "moe-token-dispatcher-type",
    "attention-backend",
    "sglang-nsa-prefill-backend",
    "sglang-nsa-decode-backend",
)


@remember("pure", "the flags other rules judge (constants of run-matrix)")
def judged_elsewhere() -> frozenset[str]:
    from runner.check.spec import INTEGER_FLAGS  # here: importing it above would register G* before M*

    return frozenset((*INTEGER_FLAGS, *CHOICES_ELSEWHERE))


Judged = tuple[
    tuple[str, ...], str, Any, "Flag | None", Verdict
]  # key, name as written, value, flag, verdict


@dataclass(frozen=True)
class Findings:
    """What F1-F4 need of one cell, found in one pass over its flags."""

    cell: Cell  # kept, so that the identity check in _findings cannot match a new cell at an old address
    unknown: tuple[Judged, ...]
    wrong: tuple[Judged, ...]
    spellings: tuple[Judged, ...]  # every flag when one is written under an alias, else none


_LAST: Table[int, Findings] = Table(
    "runner.check.argv._LAST",
    "pure",
    "the findings of the cell checked last, by the cell (kept in them: its address is not reused);"
    " the rules of one cell run one after another, and one pass serves all four",
    1,
)


def _findings(cell: Cell) -> Findings:
    last = _LAST.get(id(cell))
    if last is not None and last.cell is cell:
        return last
    unknown: list[Judged] = []
    wrong: list[Judged] = []
    aliased = False
    for judged in _judged(cell):
        flag = judged[3]
        if flag is None:
            unknown.append(judged)
        elif judged[4] is not None:
            wrong.append(judged)
        elif flag.name != judged[1] or flag.same_as:
            aliased = True
    found = Findings(cell, tuple(unknown), tuple(wrong), tuple(_judged(cell)) if aliased else ())
    return _LAST.put(id(cell), found)


def _judged(cell: Cell) -> Iterator[Judged]:
    """Every flag the launch passes (MODEL_ARGS, then the spec's groups) with its catalog entry and
    the verdict on its value. Verdicts are kept per (backend, name, value) on the catalog: the cells
    of a matrix share most of their hundred flags."""
    assert cell.flags is not None
    memo, backend = cell.flags.catalog.memo, cell.backend
    places: list[tuple[tuple[str, ...], dict[str, Any]]] = [(("model_args",), cell.preset.model_args)]
    places += [(("args", group), flags) for group, flags in cell.spec.args.groups()]
    for prefix, flags in places:
        for name, value in flags.items():
            found = memo.get((backend, name, type(value), tuple(value) if type(value) is list else value))
            yield (*prefix, name), name, value, *(found or _verdict(cell, memo, backend, name, value))


def _verdict(
    cell: Cell, memo: dict[Any, Any], backend: str, name: str, value: Any
) -> tuple[Flag | None, Verdict]:
    """Judge one (name, value) the first time it is seen, and remember it."""
    assert cell.flags is not None
    flag = cell.flags.catalog.lookup(name, backend)
    verdict = judge(flag, value) if flag is not None and flag.name not in judged_elsewhere() else None
    key = (backend, name, type(value), tuple(value) if type(value) is list else value)
    memo[key] = (flag, verdict)
    return flag, verdict


def _at(cell: Cell, key: tuple[str, ...]) -> Location:
    """Where a flag was written: found only for a problem (it walks the provenance)."""
    if key[0] == "model_args":
        return cell.preset_source.location(key)
    return cell.location(*key)


@rule("F1")
def known_flags(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A flag the launched programs do not accept makes argparse exit before anything starts.

    Source: the flag catalog of the cell's miles version (miles/flags/), read from miles
    miles/utils/arguments.py, Megatron-LM megatron/training/arguments.py and SGLang
    python/sglang/srt/server_args.py
    """
    if cell.flags is None:
        return
    for key, name, *_rest in _findings(cell).unknown:
        yield _unknown(cell, ".".join(key), name, _at(cell, key))


def _unknown(cell: Cell, key: str, name: str, where: Location) -> Problem:
    assert cell.flags is not None
    catalog = cell.flags.catalog
    knowing = _knowing(cell.flags, name, cell.backend)
    closest = "" if knowing else did_you_mean(name, catalog.names(cell.backend))
    search = "search the catalog: run-matrix flags show TEXT"
    hint = _upgrade_hint(cell, knowing) if knowing else closest or search
    also = f"; miles {', '.join(knowing)} accepts it" if knowing else ""
    message = f"--{name} is not a flag of {_version(cell.flags, cell.backend)}{also}"
    unread = [added for added in cell.flags.functions if added.unread]
    if knowing and not cell.flags.stated:
        note = "; the spec names no miles_version, so this is not an error"
        return Problem("F1", message + note, key, (where,), "warning", hint)
    if name.startswith("sglang-") and not knowing and not closest:
        sglang = catalog.sources.get("sglang", "SGLang")
        note = f"; the catalog read {sglang}, and the branch the container installs may add flags"
        return Problem("F1", message + note, key, (where,), "warning", hint)
    if unread:
        function, why = printable(unread[0].function), printable(unread[0].unread)
        note = f"; the function of --{unread[0].option} ({function}) may add it, but {why}"
        return Problem("F1", message + note, key, (where,), "warning", hint)
    return Problem("F1", message + _read_functions(cell.flags), key, (where,), hint=hint)


def _read_functions(choice: Choice) -> str:
    """What the message says of the custom functions miles loads, each read whole: none adds the flag."""
    read = [f"--{added.option} ({printable(added.function)})" for added in choice.functions]
    return f", nor does the function of {' or '.join(read)} add it" if read else ""


@rule("F2")
def one_spelling(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A flag set under two spellings (an alias, a deprecated name): argparse keeps the last one.

    Source: the aliases and deprecated spellings of the flag catalog of the cell's miles version
    (miles/flags/); argparse keeps the last value it reads
    """
    if cell.flags is None:
        return
    seen: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for key, name, value, flag, _unused in _findings(cell).spellings:
        if flag is not None and value is not False:
            seen.setdefault(flag.same_as or flag.name, []).append((key, name))
    for canonical, places in seen.items():
        spellings = list(dict.fromkeys(name for _, name in places))
        if len(spellings) > 1:
            yield Problem(
                "F2",
                f"--{canonical} is set under {len(spellings)} spellings: "
                + ", ".join(f"--{s}" for s in spellings)
                + "; argparse keeps the last one on the command line",
                ".".join(places[-1][0]),
                tuple(_at(cell, key) for key, _ in places),
                hint=f"keep one, as {canonical}",
            )


@rule("F3")
def values_in_choices(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A value outside the flag's choices: argparse lists them and exits.

    Source: the choices of each flag in the flag catalog of the cell's miles version (miles/flags/), as
    each program's argparse declares them
    """
    yield from _verdicts(cell, "F3")


@rule("F4")
def values_of_the_right_kind(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A value of the wrong type (`rollout-batch-size: eight`), a switch given a value, or a wrong count of
    values: argparse refuses it and exits.

    Source: the type, action and nargs of each flag in the flag catalog of the cell's miles version
    (miles/flags/)
    """
    yield from _verdicts(cell, "F4")


def _verdicts(cell: Cell, wanted: str) -> Iterator[Problem]:
    if cell.flags is None:
        return
    for key, _, value, flag, verdict in _findings(cell).wrong:
        if verdict is not None and verdict[0] == wanted and flag is not None:
            rule_id, message, hint = verdict
            where = (_at(cell, key),)
            yield Problem(rule_id, message, ".".join(key), where, hint=hint or _choice_hint(flag, value))


def _choice_hint(flag: Flag, value: Any) -> str:
    if flag.choices is None or isinstance(value, list):
        return ""
    return did_you_mean(str(value), map(str, flag.choices))


def _upgrade_hint(cell: Cell, knowing: list[str]) -> str:
    """A checkout of another miles than the spec's: the spec wants moving, not the flag dropping."""
    version, choice = cell.spec.miles_version, cell.flags
    drop = f"drop it, or check against miles {knowing[0]} (miles_version: {knowing[0]})"
    if choice is None or choice.checkout is None or version is None:
        return drop
    from runner.knowledge.flags import identify  # reads the checkout's HEAD: only when one is named

    checkout = identify.named(choice.checkout, choice.catalog)
    if checkout.startswith(version[:8]) or not any(v.startswith(version[:8]) for v in knowing):
        return drop  # the spec's own miles lacks the flag too: moving it would not help
    spec = cell.id.partition("[")[0]
    said = f"this spec is for miles {version}, the checkout is {checkout}"
    return f"{said}: run-matrix upgrade {spec} --miles-root {choice.checkout}"


def _version(choice: Choice, backend: str) -> str:
    trainer = "its FSDP backend" if backend == "fsdp" else "Megatron"
    if choice.checkout is not None:
        return f"the miles checkout at {choice.checkout} (nor of {trainer} and SGLang as checked with it)"
    return f"miles {choice.catalog.miles} (nor of {trainer} and the SGLang its container installs)"


def _knowing(choice: Choice, name: str, backend: str) -> list[str]:
    """The other shipped miles versions that accept a flag: it was removed, or is not there yet."""
    others = [load(path) for path in shipped() if load(path).miles != choice.catalog.miles]
    return [c.miles for c in others if c.lookup(name, backend) is not None]
