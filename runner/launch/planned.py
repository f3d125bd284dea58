"""planned: one selected cell with its launch, as the run step and the history store are given it."""

from __future__ import annotations

from dataclasses import dataclass

from runner.cells.cell import Cell
from runner.errors import Problem
from runner.launch.command import Command
from runner.launch.render import Launch


@dataclass(frozen=True)
class Planned:
    """One selected cell, rendered: what will run, and the command that runs it again."""

    cell: Cell
    launch: Launch
    spec: str  # the spec file as shown to people
    reproduce: str  # a run-matrix command line that runs this cell alone
    warnings: tuple[Problem, ...] = ()

    def command(self, phase: str, name: str | None = None) -> Command:
        return next(c for c in self.launch.commands if c.phase == phase and name in (None, c.name))

    @property
    def services(self) -> tuple[Command, ...]:
        """What the launch starts after the Ray head, before the submission."""
        return tuple(c for c in self.launch.commands if c.phase == "cluster" and c.stays_up)

    @property
    def entry_argv(self) -> tuple[str, ...]:
        """``python3 <miles>/<train script> MODEL_ARGS... flags``: the train job's entrypoint."""
        return self.job_argv(self.command("submit"))

    @property
    def verifies(self) -> tuple[Command, ...]:
        """The checks that run once the job succeeded, in the spec's order."""
        return tuple(c for c in self.launch.commands if c.phase == "verify")

    @staticmethod
    def job_argv(command: Command) -> tuple[str, ...]:
        """A ``ray job submit`` command's entrypoint: its argv after ``--``."""
        return command.argv[command.argv.index("--") + 1 :]
