"""command: one command of a rendered launch, and the shell text a person could run it by.

A command is an argv with its own env vars, the folder it runs from where that matters (``cwd``),
when it may be skipped (``skip_if``, its ``guard``), a program it reads on stdin, or, for a service,
the port it answers on. Pure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from runner import shell

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
        """The command as the script runs it: behind its guard, with its program on stdin."""
        text = self.line
        if self.listens:
            return _service_shell(self.name, text, self.listens)
        if self.ready:
            return _hook_shell(self.name, text, self.ready)
        if self.guard:
            text = f"{_test_text(self.guard)} || {text}"
        if self.cwd:  # in a subshell: the script's own folder stays; a folder that is not there stops it
            text = f"(cd {shell.quote(self.cwd)} || exit; {text})"
        if self.stdin:
            end = HEREDOC
            while end in self.stdin.splitlines():  # a text that holds the delimiter gets another one
                end += "_"
            text += f" <<'{end}'\n{self.stdin.rstrip()}\n{end}"
        return text

    def to_json(self) -> dict[str, Any]:
        """Its fields and its shell text; those only a prepare call sets are left out where unset, so
        every other command reads as it always has."""
        data = {**asdict(self), "shell": self.shell}
        return {key: value for key, value in data.items() if key not in _WHEN_SET or value}


_WHEN_SET = ("cwd", "every_time")
HEREDOC = "RUN_MATRIX_PROGRAM"
SERVICE_SECONDS = 30  # how long a service may take to answer (miles' wait_for_server_ready)


def _service_shell(name: str, line: str, port: int) -> str:
    """Started in the background unless the port answers already, then waited for."""
    answers = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null"
    failed = shell.quote(f"{name} did not answer on 127.0.0.1:{port} within {SERVICE_SECONDS} s")
    return (
        f"{answers} || {{ {line} & }}\n"
        f"for _ in $(seq {SERVICE_SECONDS}); do {answers} && break; sleep 1; done\n"
        f"{answers} || {{ echo {failed} >&2; exit 1; }}"
    )


HOOK_SECONDS = 900  # how long a hook of the test's own may take (miles' OPD teacher waits up to 600 s)


def _hook_shell(name: str, line: str, ready: str) -> str:
    """Started in the background, its output in a log of its own (a fresh file: ``mktemp`` under
    ``$TMPDIR``, never a name another user could have planted), then waited for until it prints
    ``ready``; it stays up for the job."""
    said = shell.quote(ready)
    gone = shell.quote(f"{name} ended before it returned; its output: ")
    late = shell.quote(f"{name} did not return within {HOOK_SECONDS} s; its output: ")
    return (
        f"hook_log=$(mktemp -t {shell.quote(f'run-matrix-{name}.XXXXXX')})\n"
        f'{line} >"$hook_log" 2>&1 &\n'
        "hook=$!\n"
        f'for _ in $(seq {HOOK_SECONDS}); do grep -qxF {said} "$hook_log" && break'
        f'; kill -0 $hook 2>/dev/null || {{ echo {gone}"$hook_log" >&2; exit 1; }}; sleep 1; done\n'
        f'grep -qxF {said} "$hook_log" || {{ echo {late}"$hook_log" >&2; exit 1; }}'
    )


def _test_text(guard: tuple[str, ...]) -> str:
    """``[ -e DIR ]`` for a ``test`` argv; anything else as its own line."""
    if guard[0] == "test":
        return "[ " + " ".join(shell.quote(t) for t in guard[1:]) + " ]"
    return shell.line(guard)
