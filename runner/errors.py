"""One error hierarchy, one problem type, one exit-code table.

Everything below ``runner.cli.main`` raises; ``main`` alone turns errors into
exit codes and text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from pathlib import Path
from typing import Literal

from runner.memos import remember, resolved

Severity = Literal["error", "warning"]
MAX_ALSO_AT = 4  # places printed under a problem's headline, newest first; JSON has them all


class ExitCode(IntEnum):
    OK = 0
    RUN_FAILED = 1
    INVALID_SPEC = 2
    ENVIRONMENT = 3
    SOME_REFUSED = 4  # an import of a folder wrote specs, and some of its tests are refused
    NOTHING_RAN = 5  # cells were selected and none ran (each skipped or unmet), as pytest's 5: no tests
    INTERRUPTED = 130


# what each code means, for every command (the docs' exit-code table is generated from it)
MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "ok (a run: every cell that ran passed; skips and expected failures included;"
    " an empty `--cells` list)",
    ExitCode.RUN_FAILED: "a run failed (or a skip under `--strict`)",
    ExitCode.INVALID_SPEC: "the spec (or the command line) is invalid; a `-k` that matches no cell",
    ExitCode.ENVIRONMENT: "the environment cannot run it (including an `-o` path that cannot be written:"
    " `import` and `port` check it before any work)",
    ExitCode.SOME_REFUSED: "`import` of a folder: specs were written, and some of its tests are refused"
    " (each named, with why, in the summary; a test that never launches training is not refused:"
    " it has nothing to import)",
    ExitCode.NOTHING_RAN: "`run`: at least one cell was selected and none ran (each skipped by the matrix"
    " or by an unmet `requires:`), as pytest's 5; the summary says"
    " `nothing ran, every selected cell was skipped (exit 5)`",
    ExitCode.INTERRUPTED: "interrupted",
}


@dataclass(frozen=True, order=True)
class Location:
    """A place in a file: where a value was written."""

    file: Path
    line: int | None = None
    key: str = field(default="", compare=False)  # what was written there, when a problem names several keys

    def __str__(self) -> str:
        return f"{display_path(self.file)}:{self.line}" if self.line else display_path(self.file)


@dataclass(frozen=True)
class Problem:
    """One finding: what is wrong, where, and how to fix it."""

    rule: str
    message: str
    key: str = ""
    locations: tuple[Location, ...] = ()
    severity: Severity = "error"
    hint: str = ""
    via: tuple[Location, ...] = ()  # in an extended or overlay file: the lines that reached it
    cells: tuple[str, ...] = ()  # the cells it was found in, when it was found in several

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "severity": self.severity,
            "rule": self.rule,
            "key": self.key,
            "message": self.message,
            "hint": self.hint,
            "locations": [_json(loc) for loc in self.locations],
        }
        if self.via:
            data["via"] = [_json(loc) for loc in self.via]
        if self.cells:
            data["cells"] = list(self.cells)
        return data

    def __str__(self) -> str:
        where = str(self.locations[0]) if self.locations else "<spec>"
        head = f"{where}: {self.severity} [{self.rule}]"
        if self.key:
            head += f" {self.key}"
        lines = [f"{head}: {self.message}"]
        shown = self.locations[1 : 1 + MAX_ALSO_AT]
        lines += [f"  ==> also at {loc}" + (f" ({loc.key})" if loc.key else "") for loc in shown]
        rest = self.locations[1 + MAX_ALSO_AT :]
        if rest:
            lines.append(f"  ==> and {len(rest)} more: " + ", ".join(loc.key or str(loc) for loc in rest))
        lines += [f"  ==> reached through {loc}" for loc in self.via]
        if len(self.cells) > 1:
            lines.append(f"  ==> in {len(self.cells)} cells: {_shortened(self.cells)}")
        if self.hint:
            lines.append(f"  ==> {self.hint}")
        return "\n".join(lines)


def _json(location: Location) -> dict[str, object]:
    data: dict[str, object] = {"file": display_path(location.file), "line": location.line}
    if location.key:
        data["key"] = location.key
    return data


def _shortened(cells: Sequence[str], shown: int = 4) -> str:
    more = f", and {len(cells) - shown} more" if len(cells) > shown else ""
    return ", ".join(cells[:shown]) + more


class RunMatrixError(Exception):
    """Base of every error run-matrix reports to a person (never with a traceback)."""

    exit_code = ExitCode.RUN_FAILED


class SpecError(RunMatrixError):
    """The spec is invalid: carries every problem found, not just the first."""

    exit_code = ExitCode.INVALID_SPEC

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def one(
        cls,
        rule: str,
        message: str,
        *,
        key: str = "",
        at: Iterable[Location] = (),
        hint: str = "",
    ) -> SpecError:
        return cls([Problem(rule, message, key, tuple(at), "error", hint)])


class EnvironmentProblem(RunMatrixError):
    """This machine cannot do what was asked (no miles checkout, no GPUs, no Ray)."""

    exit_code = ExitCode.ENVIRONMENT


class UsageError(RunMatrixError):
    """The command line itself is wrong (a spec that cannot be found, a bad option)."""

    exit_code = ExitCode.INVALID_SPEC


MAX_PROBLEMS = 50  # per step and file: past that a person fixes the first ones and runs again


# mutable: it accumulates a step's problems, and counts those past MAX_PROBLEMS
@dataclass
class Collector:
    """Collect problems while a step goes on; raise them all at once at the end.

    At most MAX_PROBLEMS are kept; loops over input ask ``room()`` first, so that a file with
    twenty thousand mistakes costs no more than one with fifty.
    """

    problems: list[Problem] = field(default_factory=list)
    skipped: int = 0

    def add(self, problem: Problem) -> None:
        if self.room():
            self.problems.append(problem)

    def room(self) -> bool:
        """Whether another problem will be kept; counts the ones that will not."""
        if len(self.problems) < MAX_PROBLEMS:
            return True
        self.skipped += 1
        return False

    def raise_if_errors(self) -> None:
        if not any(p.severity == "error" for p in self.problems):
            return
        if self.skipped:
            last = self.problems[-1]
            more = f"{self.skipped} more problems like these were not listed (at most {MAX_PROBLEMS} are)"
            self.problems.append(
                Problem("budget", more, "", last.locations[:1], hint="fix these and run again")
            )
        raise SpecError(self.problems)


def newest_first(places: Sequence[Location], files: Sequence[Path]) -> tuple[Location, ...]:
    """``places`` with the most recently written first, then the rest newest first, each spot once.

    Newest is the latest of ``files`` (a chain: bases first, then the spec, then the overlays a
    matrix applies): the overlay the user edited heads the problem. Places in no file of the
    chain (a model preset) come last; ties keep the order given.
    """
    order = {file: index for index, file in enumerate(files)}
    ranked = sorted(range(len(places)), key=lambda i: (-order.get(places[i].file, -1), i))
    spots: dict[tuple[Path, int | None], Location] = {}
    for place in (places[i] for i in ranked):
        spots.setdefault((place.file, place.line), place)
    return tuple(spots.values())


def merged(found: Iterable[tuple[str, Problem]]) -> list[Problem]:
    """Problems found per cell, each once: the same problem in several cells lists them all."""
    cells: dict[Problem, list[str]] = {}
    for cell, problem in found:
        ids = cells.setdefault(replace(problem, cells=()), [])
        if cell not in ids:
            ids.append(cell)
    return [replace(problem, cells=tuple(ids)) for problem, ids in cells.items()]


MAX_CHOICES = 5000  # a flag catalog has about 2,300 flags


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` for the closest choice, or ``""`` when none is close.

    Over more than MAX_CHOICES choices (a hostile file's keys) it says nothing: difflib's cost
    grows with every choice.
    """
    unique = tuple(sorted(set(choices)))
    if len(unique) > MAX_CHOICES or len(word) > 200:
        return ""
    return _closest(word, unique)


@remember("pure", "the choice closest to a word, of the same choices: an import asks it of every case", 256)
def _closest(word: str, choices: tuple[str, ...]) -> str:
    import difflib  # only when a name is wrong: a valid spec never loads it

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def display_path(path: Path) -> str:
    """A path relative to the current directory when it lies below it."""
    try:
        return str(resolved(path).relative_to(resolved(Path.cwd())))
    except ValueError:
        return str(path)


KEPT_IN_LINES = frozenset("\n\t")


def printable(text: str, *, lines: bool = False, markup: bool = False) -> str:
    """``text`` from outside (a checkout, a test, a subprocess, the store) made safe to print: each
    control or format character (the ESC that opens a CSI or OSC sequence, a BEL, a carriage return,
    a bidi override) shown escaped, as ``\\x1b``, so that such text never drives the terminal or a CI
    log. This is the one such function; every place that prints outside text calls it.

    ``lines``: newlines and tabs are kept, for text that is multi-line by design (an error message of
    ours that holds outside text, a traceback, a log); without it they are escaped too, for text that
    must stay on its line (a reason, a table's cell). ``markup``: rich's ``[markup]`` is escaped as
    well, for text that rich reads as markup (a table's cell, a progress bar's description).
    Without ``markup``, printable text is returned as it is: escaping twice is escaping once.
    """
    kept = KEPT_IN_LINES if lines else frozenset()
    shown = "".join(
        c if c.isprintable() or c in kept else c.encode("unicode_escape").decode("ascii") for c in text
    )
    if markup:
        from rich.markup import escape  # only where rich prints: validate never loads rich

        shown = escape(shown)
    return shown


def first_line(error: BaseException | str) -> str:
    """The first line of another library's error (Ray's run to pages); its type when it says nothing."""
    text = str(error).strip()
    if text:
        return text.splitlines()[0]
    return type(error).__name__ if isinstance(error, BaseException) else "(no message)"


def clipped(text: str, limit: int) -> str:
    """``text`` whole, or cut to at most ``limit`` characters, at a word's end where one is near, and
    marked with "…": a cut text never reads as a sentence that ended there."""
    if len(text) <= limit:
        return text
    head = text[: max(limit - 1, 1)]
    space = head.rfind(" ")
    if space > len(head) // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"


def counted(number: int, noun: str, plural: str = "") -> str:
    """``1 cell``, ``2 cells``, ``0 errors``; ``plural`` where adding an s is wrong (``entries``)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
