"""command: one command of a rendered launch, and the shell text a person could run it by.

A command is an argv with its own env vars, the folder it runs from where that matters (``cwd``),
when it may be skipped (``skip_if``, its ``guard``), a program it reads on stdin, or, for a service,
the port it answers on. Pure.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from runner.launch import shell
from runner.launch.programs import REPORT_BYTES

Phase = Literal["prepare", "cluster", "submit", "verify"]


@dataclass(frozen=True)
class Command:
    phase: Phase
    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    skip_if: str = ""  # when the step need not run, in words
    guard: tuple[str, ...] = ()  # a ``test`` argv: the step is skipped when it succeeds
    stdin: str = ""  # a program the command reads on stdin (``python3 -``)
    listens: int = 0  # a service: it stays up, ready once 127.0.0.1:PORT answers (and left alone if it does)
    ready: str = ""  # a service: it stays up, ready once it prints this line (a hook of the test's own)
    cwd: str = ""  # the folder it runs from (a prepare call: the checkout's root); "": where run-matrix runs
    every_time: bool = False  # it runs on every run: nothing tells that it is done (a prepare call)
    report: str = ""  # a hook: asked to stop once the job has ended, it prints this, then its report
    state: tuple[str, ...] = ()  # a hook: the attributes of what it returned that its report holds
    result: str = ""  # a prepare call whose result flags take: the shell variable a script reads it into
    program: str = ""  # stdin is this program of run-matrix's (runner/<program>.py): a script holds it once

    @property
    def stays_up(self) -> bool:
        """A service: it runs for the job, started after the Ray head."""
        return bool(self.listens or self.ready)

    @property
    def line(self) -> str:
        """The command alone, quoted: ``shlex.split`` gives back env assignments and argv."""
        return shell.line(self.argv, self.env)

    @property
    def shell(self) -> str:
        """The command on its own: behind its guard, with its program on stdin."""
        return self.shell_text(in_script=False)

    def shell_text(self, in_script: bool) -> str:
        """The command behind its guard, with its program on stdin; ``in_script``: as a script (or a
        preview of several) writes it — a job submission one flag per line, run-matrix's own program read
        from the variable the script defines once (``program_lines``), not repeated at every step."""
        text = shell.lines(self.argv, self.env) if in_script and self.phase in WRAPPED else self.line
        if self.listens:
            return _service_shell(self.name, text, self.listens)
        if self.ready:
            return _hook_shell(self.name, text, self.ready, bool(self.report))
        if self.guard:
            text = f"{_test_text(self.guard)} || {text}"
        if self.cwd:  # in a subshell: the script's own folder stays; a folder that is not there stops it
            text = f"(cd {shell.quote(self.cwd)} || exit; {text})"
        if self.stdin and in_script and self.program:
            text += f' <<<"${{{program_variable(self.program)}}}"'
        elif self.stdin:
            end = delimiter(self.stdin)
            text += f" <<'{end}'\n{self.stdin.rstrip()}\n{end}"
        return text

    def to_json(self) -> dict[str, Any]:
        """Its fields and its shell text; those only a prepare call sets are left out where unset, so
        every other command reads as it always has."""
        data = {**asdict(self), "shell": self.shell}
        return {key: value for key, value in data.items() if key not in _WHEN_SET or value}


_WHEN_SET = ("cwd", "every_time", "result", "program")
HEREDOC = "RUN_MATRIX_PROGRAM"
WRAPPED = ("submit", "verify")  # `ray job submit ... -- python3 train.py` and its hundred flags


def delimiter(text: str) -> str:
    """A here-document's delimiter that no line of ``text`` is: a text holding it gets another one."""
    end = HEREDOC
    while end in text.splitlines():
        end += "_"
    return end


def program_variable(program: str) -> str:
    """The shell variable a script holds run-matrix's program ``program`` in."""
    return f"RUN_MATRIX_PROGRAM_{shell_name(program).upper()}"


def program_lines(commands: Sequence[Command]) -> list[str]:
    """Each of run-matrix's programs the commands read on stdin, defined once (``read`` keeps its text
    whole; its status at the end of the text is 1, hence ``|| true`` under ``set -e``)."""
    lines = []
    for name, text in {c.program: c.stdin for c in commands if c.program}.items():
        end = delimiter(text)
        lines += [
            shell.comment(f"run-matrix's runner/{name}.py, which the steps below give python3 on stdin"),
            f"IFS= read -r -d '' {program_variable(name)} <<'{end}' || true",
            text.rstrip(),
            end,
        ]
    return lines


def program_notes(commands: Sequence[Command]) -> list[str]:
    """In place of ``program_lines``, where a person reads: each program named, with where to read it."""
    return [
        f"run-matrix's runner/{name}.py ({len(text.splitlines())} lines), which steps give python3 on stdin:"
        " not shown here; `run-matrix render --show-programs` prints it in the script, and `render -o DIR`"
        " writes it into each script"
        for name, text in {c.program: c.stdin for c in commands if c.program}.items()
    ]


SERVICE_SECONDS = 30  # how long a service may take to answer (miles' wait_for_server_ready)


# what a command the script starts in the background runs first: bash passes it every descriptor the
# script holds, the FIFO of each hook that reports among them, and a hook whose FIFO a later hook or
# service holds open never sees its stdin end when the script closes it (the script waited for its
# report in vain); run starts each with only its own descriptors
CLOSE_STOPS = 'for run_matrix_fd in ${!RUN_MATRIX_STOP_@}; do eval "exec {$run_matrix_fd}>&-"; done'


def _background(line: str) -> str:
    """``line`` in a subshell that holds no hook's FIFO (``CLOSE_STOPS``), to start with ``&``."""
    return f"({CLOSE_STOPS}; {line})"


def _service_shell(name: str, line: str, port: int) -> str:
    """Started in the background unless the port answers already, then waited for."""
    answers = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null"
    failed = shell.quote(f"{name} did not answer on 127.0.0.1:{port} within {SERVICE_SECONDS} s")
    return (
        f"{answers} || {{ {_background(line)} & }}\n"
        f"for _ in $(seq {SERVICE_SECONDS}); do {answers} && break; sleep 1; done\n"
        f"{answers} || {{ echo {failed} >&2; exit 1; }}"
    )


HOOK_SECONDS = 900  # how long a hook of the test's own may take (miles' OPD teacher waits up to 600 s)


def _hook_shell(name: str, line: str, ready: str, reports: bool) -> str:
    """Started in the background, its output in a log of its own (a fresh file: ``mktemp`` under
    ``$TMPDIR``, never a name another user could have planted), then waited for until it prints
    ``ready``; it stays up for the job. One that reports reads a FIFO the script holds open, in a
    fresh folder, until ``stop_shell`` closes it (a background job's stdin is otherwise /dev/null)."""
    said = shell.quote(ready)
    gone = shell.quote(f"{name} ended before it returned; its output: ")
    late = shell.quote(f"{name} did not return within {HOOK_SECONDS} s; its output: ")
    fresh = shell.quote(f"run-matrix-{name}.XXXXXX")
    start = f'hook_log=$(mktemp -t {fresh})\n{_background(line)} >"$hook_log" 2>&1 &\nhook=$!\n'
    if reports:
        hook = shell_name(name)
        start = (
            f'hook_dir=$(mktemp -d -t {fresh})\nhook_log=$hook_dir/log\nmkfifo "$hook_dir/stop"\n'
            f'{_background(line)} <"$hook_dir/stop" >"$hook_log" 2>&1 &\nhook=$!\n'
            f'exec {{RUN_MATRIX_STOP_{hook}}}>"$hook_dir/stop"\n'
            f"RUN_MATRIX_LOG_{hook}=$hook_log RUN_MATRIX_PID_{hook}=$hook\n"
        )
    return start + (
        f'for _ in $(seq {HOOK_SECONDS}); do grep -qxF {said} "$hook_log" && break'
        f'; kill -0 $hook 2>/dev/null || {{ echo {gone}"$hook_log" >&2; exit 1; }}; sleep 1; done\n'
        f'grep -qxF {said} "$hook_log" || {{ echo {late}"$hook_log" >&2; exit 1; }}'
    )


REPORT_SECONDS = 120  # how long a hook asked to stop after the job may take to report (its stop runs)


def stop_shell(command: Command) -> str:
    """A hook that reports, asked to stop once the job has ended (a fresh token written on its stdin,
    which is then closed), then its report (the line holding that token)
    read from its log into ``$RUN_MATRIX_HOOK_<name>``; the script stops with the reason when there is
    none within ``REPORT_SECONDS``, it is too large, or it says why the hook could not report."""
    hook, name, report = shell_name(command.name), command.name, report_variable(command.name)
    log, token = f'"$RUN_MATRIX_LOG_{hook}"', f"RUN_MATRIX_TOKEN_{hook}"
    # the report line holds the token the hook is given when asked (programs.py says why): hex digits,
    # and the prefix letters, spaces, '-', ':' and '_', nothing grep reads apart
    line = f"{command.report} "
    found = f'{shell.quote("^" + line)}"${{{token}}} "'
    late = f"{name} did not report once asked to stop (it ended, or {REPORT_SECONDS} s passed); its output: "
    late = shell.quote(late)
    large = shell.quote(f"{name} reported more than {REPORT_BYTES} bytes; its output: ")
    fault = shell.quote(f"{name} could not report: ")
    return (
        f"{token}=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')\n"
        f'(printf \'%s\\n\' "${token}" >&"$RUN_MATRIX_STOP_{hook}") 2>/dev/null || true\n'
        f"exec {{RUN_MATRIX_STOP_{hook}}}>&-\n"
        f"for _ in $(seq {REPORT_SECONDS}); do grep -q {found} {log} && break"
        f'; kill -0 "$RUN_MATRIX_PID_{hook}" 2>/dev/null || break; sleep 1; done\n'
        f"{report}=$(grep -m1 {found} {log} || true)\n"
        f'[ -n "${report}" ] || {{ echo {late}{log} >&2; exit 1; }}\n'
        f'{report}=${{{report}#{shell.quote(line)}"${{{token}}} "}}\n'
        f'[ "$(printf %s "${report}" | wc -c)" -le {REPORT_BYTES} ] || {{ echo {large}{log} >&2'
        "; exit 1; }\n"
        f'case ${report} in \'{{"fault"\'*) echo {fault}"${report}" >&2; exit 1;; esac'
    )


def report_variable(name: str) -> str:
    """The shell variable a rendered script reads hook ``name``'s report into."""
    return f"RUN_MATRIX_HOOK_{shell_name(name)}"


def shell_name(name: str) -> str:
    """``name`` as part of a shell variable's name: itself when it can be one; else what is no letter,
    digit or _ becomes _, followed by a digest of ``name``, so that two names never share a variable
    (``spawn_counter-1``, the second of two hooks of one function name, and a hook of
    ``spawn_counter_1``: the script stopped one hook twice and never the other)."""
    if re.fullmatch(r"[A-Za-z0-9_]+", name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return re.sub(r"[^A-Za-z0-9_]", "_", name) + "_" + digest


def _test_text(guard: tuple[str, ...]) -> str:
    """``[ -e DIR ]`` for a ``test`` argv; anything else as its own line."""
    if guard[0] == "test":
        return "[ " + " ".join(shell.quote(t) for t in guard[1:]) + " ]"
    return shell.line(guard)
