"""import_progress: what a suite import shows while it runs, and the table after it.

In a terminal a live bar (rich, on stderr) with the last test done; otherwise one line per test as
its outcome is known. Then one summary: imported, refused with the reasons grouped (a test that
never launches training is counted apart: there is nothing of it to import).
"""

from __future__ import annotations

import collections
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from runner.errors import counted, printable
from runner.importer.parses import OUTCOME as MILES_REFUSES  # written, but miles' parser refuses it

NEVER_LAUNCHES = "never calls execute_train"


class Shown:
    """A progress callback for ``suite.import_suite``; a context manager around the run."""

    def __init__(self, total: int, root: Path, stream: TextIO | None = None) -> None:
        self.total, self.root, self.stream = total, root, stream or sys.stderr
        self.lock = threading.Lock()
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Shown:
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            columns = (TextColumn("import"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            self.bar = Progress(*columns, TextColumn("{task.description}"), console=Console(file=self.stream))
            self.bar.start()
            self.task = self.bar.add_task("", total=self.total)
        else:
            shown = f"importing {counted(self.total, 'test')} of {printable(str(self.root))}"
            print(shown, file=self.stream, flush=True)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.bar is not None:
            self.bar.stop()

    def phase(self, what: str) -> None:
        """What the run does before the tests' outcomes come (``recording 95 tests together``)."""
        with self.lock:
            if self.bar is not None:
                self.bar.update(self.task, description=printable(what, markup=True))
            else:
                print(printable(what), file=self.stream, flush=True)

    def __call__(self, test: Path, outcome: str, why: str) -> None:
        # a test's name and reason are the checkout's words: escaped, and as markup where the bar reads them
        name, why = _shown(test, self.root), printable(why)
        with self.lock:
            if self.bar is not None:
                self.bar.update(
                    self.task, advance=1, description=printable(f"{name}: {outcome}", markup=True)
                )
            else:
                print(f"{outcome:8} {name}" + (f": {why}" if why else ""), file=self.stream, flush=True)


def summary(outcomes: dict[Path, tuple[str, str]], root: Path, stream: TextIO | None = None) -> None:
    """One table: how many imported, never launch, and were refused, per reason."""
    stream = stream or sys.stdout
    from rich.console import Console
    from rich.table import Table

    imported = [t for t, (outcome, _) in outcomes.items() if outcome == "imported"]
    by_miles = [t for t, (outcome, _) in outcomes.items() if outcome == MILES_REFUSES]
    refused = {t: why for t, (outcome, why) in outcomes.items() if outcome not in ("imported", MILES_REFUSES)}
    never = [t for t, why in refused.items() if NEVER_LAUNCHES in why]
    reasons = collections.Counter(_reason(why) for t, why in refused.items() if t not in never)
    table = Table(title=printable(f"{len(outcomes)} tests of {root}", markup=True))
    table.add_column("outcome", overflow="fold")  # a long word (a test id) folds, never cut
    table.add_column("tests", justify="right")
    table.add_row("imported", str(len(imported)))
    if by_miles:
        table.add_row("written, but miles' parser refuses its launch", str(len(by_miles)))
    table.add_row("never launching (nothing to import)", str(len(never)))
    for reason, count in reasons.most_common():
        table.add_row(printable(f"refused: {reason}", markup=True), str(count))
    Console(file=stream, width=max(100, Console(file=stream).width)).print(table)


def as_json(outcomes: dict[Path, tuple[str, str]], root: Path) -> dict[str, Any]:
    found = sorted(outcomes.items())
    return {_shown(t, root): {"outcome": outcome, "why": why} for t, (outcome, why) in found}


def _reason(why: str) -> str:
    """A refusal's reason without what names the test: the groups of the summary."""
    return why.split(": [", 1)[0]


def _shown(test: Path, root: Path) -> str:
    try:
        return printable(str(test.relative_to(root)))
    except ValueError:
        return printable(str(test))
