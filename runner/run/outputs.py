"""outputs: where a run's results go — checked before any work, rewritten whole after every cell.

Each file (``--junit``, ``--report``, the GitHub step summary) is checked writable before the
first prepare step, so a wrong path costs nothing. During the run each is replaced atomically
(``atomic.write_text``) after every cell, and once more at the end: a run that dies, however
it dies, leaves the cells so far; a write that fails leaves the previous version, and is
reported after the other files are written.

The step summary is shared with the job's other steps (GitHub collects them all): what it
held before the run is kept in front of ours.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from runner.atomic import FORCE_HINT, refuse_link, write_text
from runner.errors import EnvironmentProblem, display_path
from runner.redact import Redactor
from runner.results import report
from runner.results.outcome import RunResult


@dataclass(frozen=True)
class Output:
    option: str  # how the user named it: --junit, --report, $GITHUB_STEP_SUMMARY
    path: Path
    render: Callable[[RunResult], str]
    before: str = ""  # the step summary's earlier content


@dataclass(frozen=True)
class Outputs:
    files: tuple[Output, ...]
    force: bool = False  # the user's paths may be links, which are replaced
    redact: Redactor = field(default_factory=Redactor)  # results are redacted already: a second guard
    failures: dict[str, str] = field(default_factory=dict)  # option -> why its last write failed

    @classmethod
    def checked(
        cls,
        junit: Path | None,
        json_report: Path | None,
        summary: Path | None,
        force: bool = False,
        redact: Redactor | None = None,
    ) -> Outputs:
        """The report files asked for, each proven writable now; exit 3 naming every one that is not
        (a link among them too, unless ``force``: then the link is replaced, never its target)."""
        files = []
        if junit is not None:
            files.append(Output("--junit", junit, report.junit))
        if json_report is not None:
            files.append(Output("--report", json_report, report.to_json))
        if summary is not None:
            files.append(Output("$GITHUB_STEP_SUMMARY", summary, report.markdown, _earlier(summary)))
        problems = [f"{f.option} {why}" for f in files if (why := _why_not(f.path, force))]
        if problems:
            raise EnvironmentProblem("cannot write the reports:\n  " + "\n  ".join(problems))
        return cls(tuple(files), force=force, redact=redact or Redactor())

    def write(self, result: RunResult) -> None:
        """Write every file; a failure is remembered (``failures``) and does not stop the others."""
        for output in self.files:
            try:
                text = output.before + self.redact(output.render(result))
                write_text(output.path, text, replace_link=self.force)
            except OSError as exc:
                self.failures[output.option] = f"{display_path(output.path)}: {exc.strerror or exc}"
            except EnvironmentProblem as exc:  # a link planted there since the run began
                self.failures[output.option] = str(exc)
            else:
                self.failures.pop(output.option, None)

    def failed(self) -> str:
        """Why some files could not be written at the last try, or ""."""
        lines = [f"{option} {why}" for option, why in self.failures.items()]
        return (
            "could not write the reports (the others were written):\n  " + "\n  ".join(lines) if lines else ""
        )


def unwritable(path: Path) -> str:
    """Why a file cannot be (re)written at ``path``, or "" when it can: tried, not guessed."""
    if path.is_dir():
        return "is a folder"
    folder = path.parent
    if not folder.is_dir():
        missing = "is not a folder" if folder.exists() else "does not exist"
        return f"the folder {display_path(folder)} {missing}"
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{path.name}.", suffix=".tmp"):
            pass
    except OSError as exc:
        return f"cannot write in {display_path(folder)}: {exc.strerror or exc}"
    return ""


def _why_not(path: Path, force: bool) -> str:
    """Why ``path`` cannot be written now (the path named first), or ""."""
    why = unwritable(path)
    if why:
        return f"{display_path(path)}: {why}"
    try:
        refuse_link(path, force, FORCE_HINT)
    except EnvironmentProblem as exc:
        return str(exc)
    return ""


def make_log_dir(log_dir: Path, names: Iterable[str] = ()) -> None:
    """Create the log folder and prove a file can be written in it; exit 3 otherwise, and for a link
    in it where a log of ``names`` (``<name>.log``, ``<name>.<hook>.log``) goes."""
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(
            f"--log-dir {display_path(log_dir)}: cannot create it: {exc.strerror or exc}"
        ) from None
    why = unwritable(log_dir / "probe")
    if why:
        raise EnvironmentProblem(f"--log-dir {display_path(log_dir)}: {why}")
    prefixes = tuple(f"{name}." for name in names)
    for entry in log_dir.iterdir() if prefixes else ():
        if entry.name.startswith(prefixes) and entry.is_symlink():
            refuse_link(entry)


def _earlier(summary: Path) -> str:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if summary.is_file():
            return summary.read_text(encoding="utf-8")
    return ""
