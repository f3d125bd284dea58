"""command: one command of a rendered launch, and the shell text a person could run it by.

A command is an argv with its own env vars, when it may be skipped (``skip_if``, its ``guard``),
a program it reads on stdin, or, for a service, the port it answers on. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
        if self.guard:
            text = f"{_test_text(self.guard)} || {text}"
        if self.stdin:
            end = HEREDOC
            while end in self.stdin.splitlines():  # a text that holds the delimiter gets another one
                end += "_"
            text += f" <<'{end}'\n{self.stdin.rstrip()}\n{end}"
        return text


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


def _test_text(guard: tuple[str, ...]) -> str:
    """``[ -e DIR ]`` for a ``test`` argv; anything else as its own line."""
    if guard[0] == "test":
        return "[ " + " ".join(shell.quote(t) for t in guard[1:]) + " ]"
    return shell.line(guard)
