"""script: a rendered launch as a bash script a person could run (``render``'s shell form). Pure.

Each command's own shell text (``Command.shell``), plus what the script does between them as ``run``
does: the result of a prepare call that flags take read into a shell variable, values read at launch
just before the submission, the hooks that report stopped once it has ended, and the verify jobs'
arguments filled from their reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from runner.launch import shell
from runner.launch.command import (
    Command,
    program_lines,
    program_notes,
    report_variable,
    shell_name,
    stop_shell,
)
from runner.launch.programs import FILL_PROGRAM
from runner.launch.render import Launch
from runner.spec.runtime import prepared, reads, run_id


def to_shell(launch: Launch, source: str, programs: bool = True) -> str:
    """The launch as a bash script a person could run; ``bash -n`` accepts it. Without ``programs``,
    a display for a terminal: each of run-matrix's programs named in a comment, its text left out."""
    everything = [t for c in launch.commands for t in (*c.argv, *c.env.values(), c.cwd)]
    needed = dict.fromkeys(name for token in everything for name in shell.references(token))
    lines = [
        "#!/usr/bin/env bash",
        shell.comment(f"{launch.id}: rendered by run-matrix from {source}; nothing was run."),
        "set -euo pipefail",
    ]
    own = {prepared.file_variable(found["function"]) for found in launch.prepared.values()}  # it sets them
    lines += [f': "${{{name}:?set {name}}}"' for name in needed if name not in {*launch.probes, *own}]
    lines += [f'export {name}="${{{name}:-$({probe})}}"' for name, probe in launch.probes.items()]
    lines += _run_id_lines(launch)
    if programs:
        defined = program_lines(launch.commands)  # run-matrix's own programs: once, whatever reads them
    else:
        defined = [shell.comment(note) for note in program_notes(launch.commands)]
    lines += ["", *defined] if defined else []
    for command in launch.commands:
        said = [f"skipped when {command.skip_if}"] if command.skip_if else []
        said += [f"from {command.cwd}"] if command.cwd else []
        said += ["it runs every time: nothing tells that it is done"] if command.every_time else []
        flags = ", ".join(launch.prepared[command.result]["flags"]) if command.result else ""
        said += [f"its result: ${command.result}, for {flags}"] if command.result else []
        note = f" ({'; '.join(said)})" if said else ""
        lines += ["", shell.comment(f"{command.phase}: {command.name}{note}")]
        if command.phase == "submit" and launch.reads:
            lines += _read_lines(launch.reads)
            command = _reading(command, launch.reads)
        if command.phase == "submit" and launch.prepared:
            command = replace(command, argv=prepared.for_shell(command.argv))
        if command.phase == "submit" and launch.run_id:
            command = replace(command, argv=run_id.for_shell(command.argv))
        if command.phase == "verify" and command.name in launch.hook_reads:
            fill, command = _filling(command, launch.hook_reads[command.name])
            lines.append(fill)
        shown = command.shell_text(in_script=True)
        lines += _returning(command, launch.prepared[command.result]) if command.result else [shown]
        if command.phase == "submit":
            lines += _stop_lines(launch.commands)
    return "\n".join(lines) + "\n"


def _run_id_lines(launch: Launch) -> list[str]:
    """The run's name, set once for the flags that hold it, unless the caller set it (as run makes one
    per attempt: the clock and three random digits, miles' create_run_id() form)."""
    if not launch.run_id:
        return []
    name, flags = run_id.VARIABLE, ", ".join(launch.run_id)
    return [
        shell.comment(f"the run's name, for {flags} (the caller's {name} when set)"),
        f'export {name}="${{{name}:-{run_id.SHELL_NEW}}}"',
    ]


def _returning(command: Command, found: Mapping[str, Any]) -> list[str]:
    """A prepare call whose result flags take: the call writes it to a fresh file (``mktemp``, under
    ``$TMPDIR``), read into the call's shell variable and removed; the script stops when the call fails
    (its program says what the function returned) or left the file empty."""
    file = prepared.file_variable(found["function"])
    fresh = shell.quote(f"run-matrix-prepared-{found['function']}.XXXXXX")
    flags = ", ".join(found["flags"])
    empty = shell.quote(
        f"run-matrix: prepare step {found['step']} ({found['call']}) left no result for {flags}"
    )
    return [
        f"{file}=$(mktemp -t {fresh})",
        f'{command.shell_text(in_script=True)} || {{ rm -f -- "${file}"; exit 1; }}',
        f'{command.result}=$(<"${file}")',
        f'rm -f -- "${file}"',
        f'[ -n "${command.result}" ] || {{ echo {empty} >&2; exit 1; }}',
    ]


def _stop_lines(commands: Sequence[Command]) -> list[str]:
    """Each hook that reports, asked to stop once the job has ended (the script gets here only after
    a job that succeeded: set -e ends it at a failed one, leaving every hook up, as it leaves all)."""
    lines = []
    for command in commands:
        if command.report:
            lines += ["", shell.comment(f"stop: {command.name} (the job has ended: it stops and reports)")]
            lines.append(stop_shell(command))
    return lines


def _filling(command: Command, found: Sequence[Mapping[str, str]]) -> tuple[str, Command]:
    """A verify job whose arguments read hooks' state: the line that fills them from the reports into a
    shell variable, and the job given that variable as its arguments."""
    start = command.argv.index("--") + 1
    python, arguments = command.argv[start], command.argv[start + 4]
    variable = "RUN_MATRIX_VERIFY_ARGS_" + shell_name(command.name)
    reports = [t for f in dict.fromkeys(r["hook"] for r in found) for t in (f, f"${{{report_variable(f)}}}")]
    fill = f"{variable}=$({shell.line([python, '-c', FILL_PROGRAM, arguments, *reports])})"
    argv = (*command.argv[: start + 4], f"${{{variable}}}", *command.argv[start + 5 :])
    return fill, replace(command, argv=argv)


# a file read at launch: a regular file (no link on the way) of at most reads.MAX_BYTES, its text
# stripped, digits only;
# else the script stops with the reason (set -e: a failing assignment ends it)
READ_FUNCTION = """run_matrix_read_integer() {  # FILE FLAG: the integer FILE holds, else a clear error
  local text said="run-matrix: $2 reads $1 at launch, which" walked="" rest="${1#/}"
  while [[ $rest == */* ]]; do  # no link on the way: a link could name any file of the node
    walked="$walked/${rest%%/*}"; rest="${rest#*/}"
    [ ! -L "$walked" ] || { echo "$said is reached through a link ($walked):" \
      "only a regular file is read, with no link on the way" >&2; return 1; }
  done
  [ ! -L "$1" ] || { echo "$said is a link: only a regular file is read" >&2; return 1; }
  [ -e "$1" ] || { echo "$said is missing: an earlier cell of the spec writes it (run the spec whole)" >&2
    return 1; }
  [ -f "$1" ] || { echo "$said is not a regular file" >&2; return 1; }
  [ "$(wc -c <"$1")" -le MAX_BYTES ] || { echo "$said holds more than MAX_BYTES bytes" >&2; return 1; }
  text=$(<"$1")
  text="${text#"${text%%[![:space:]]*}"}"
  text="${text%"${text##*[![:space:]]}"}"
  [[ $text =~ ^[0-9]+$ ]] || { echo "$said does not hold an integer" >&2; return 1; }
  printf '%s' "$text"
}""".replace("MAX_BYTES", str(reads.MAX_BYTES))


def _read_lines(found: Mapping[str, Mapping[str, str]]) -> list[str]:
    lines = [READ_FUNCTION]
    for name, read in found.items():
        call = shell.line(["run_matrix_read_integer", read["path"], read["flag"]])
        lines.append(f"{name}=$({call})")
    return lines


def _reading(command: Command, found: Mapping[str, Mapping[str, str]]) -> Command:
    """The submission with each value read at launch as the shell variable the script read it into."""
    variables = {read["reference"]: f"${{{name}}}" for name, read in found.items()}
    return replace(command, argv=tuple(variables.get(token, token) for token in command.argv))
