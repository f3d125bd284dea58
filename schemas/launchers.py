"""The programs a spec may launch (``miles/launchers.yaml``) and what miles decides by each of them.

A launcher is a training entry point of the miles checkout (``train.py``, ``train_async.py``): the
spec's ``launch.script`` names one, render runs it, the L rules read what it does with some flags,
the import recognizes it in a recorded launch and diff names its mode. Nothing else names a
launcher: adding one is an entry of that file (``runner/knowledge/launchers.py`` reads it).
"""

import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from schemas.values import FlagName, Model

Mode = Literal["sync", "async"]
# a file of the checkout's top folder: render writes ``<miles_root>/<script>`` into the job's command line
_SCRIPT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.py$")


def _script(name: str) -> str:
    if not _SCRIPT.match(name):
        raise ValueError(f"{name!r} is no script of the checkout's top folder (NAME.py)")
    return name


Script = Annotated[str, AfterValidator(_script)]


def either(words: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``: how the messages (and pydantic's own) list alternatives."""
    return f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1 else "".join(words)


class Launcher(Model):
    mode: Mode = Field(
        description="sync: generation and training take turns; async: they overlap (diff's mode, the hints)"
    )
    colocate: bool = Field(description="whether it runs with --colocate (the engines on the training GPUs)")
    colocate_refusal: str | None = Field(
        default=None,
        description="miles' own words when it refuses --colocate (rule L2 quotes them), with colocate false",
    )
    about: str = Field(default="", description="what the spec's JSON Schema says of it (editors show it)")
    ignores: list[FlagName] = Field(
        default=[], description="flags it parses and never acts on (rule L9: a warning naming those that do)"
    )
    crashes: dict[FlagName, str] = Field(
        default={}, description="flag -> what it does under this launcher, after '--FLAG under SCRIPT' (L10)"
    )
    never_onloaded: list[FlagName] = Field(
        default=[],
        description="flags that offload the engines at start, which this launcher never onloads (rule L14)",
    )

    @model_validator(mode="after")
    def _refusal_says_why(self) -> "Launcher":
        if self.colocate == (self.colocate_refusal is not None):
            raise ValueError(
                "give colocate_refusal (miles' words) exactly when colocate is false: rule L2 quotes it"
            )
        return self


class Launchers(Model):
    launchers: dict[Script, Launcher] = Field(description="script, relative to the checkout -> what it does")

    @field_validator("launchers")
    @classmethod
    def _some(cls, found: dict[str, Launcher]) -> dict[str, Launcher]:
        if not found:
            raise ValueError("name at least one launcher: a spec's launch.script must be one of them")
        return found

    @property
    def scripts(self) -> tuple[str, ...]:
        return tuple(self.launchers)

    def colocating(self) -> list[str]:
        """The launchers that run with --colocate, in the file's order."""
        return [script for script, launcher in self.launchers.items() if launcher.colocate]

    def honouring(self, flag: str) -> list[str]:
        """The launchers that act on ``flag``: those that do not ignore it."""
        return [script for script, launcher in self.launchers.items() if flag not in launcher.ignores]

    def described(self) -> str:
        """The launchers as the spec schema describes ``launch.script``."""
        return either([f"{s} ({each.about})" if each.about else s for s, each in self.launchers.items()])
