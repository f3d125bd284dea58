"""What the import knows about miles' test scripts, as data: ``miles/import.yaml``."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import Field

from runner import locate
from runner.compose import compose
from runner.model import build
from runner.resolve import resolve
from schemas import Group
from schemas.values import Model

KNOWLEDGE = locate.PROJECT / "miles" / "import.yaml"


class Switch(Model):
    """An environment variable that switches a test between two variants of itself."""

    axis: str = Field(description="the matrix axis it becomes (values false, true)")
    off: str = Field(description="the value that means false")
    on: str = Field(description="the value that means true")

    def value(self, on: bool) -> str:
        return self.on if on else self.off


class Knowledge(Model):
    switches: dict[str, Switch]
    groups: dict[str, Group] = Field(description="script variable (less _args) -> spec group")
    secret_flags: dict[str, str] = Field(description="flag -> the env var that holds its secret value")
    helper_env: list[str] = Field(description="env vars miles' helpers read themselves")
    checkpoints: dict[str, dict[str, dict[str, Any]]] = Field(
        default={}, description="HF repo -> file -> the JSON content a test's prepare() may read"
    )


@cache
def knowledge() -> Knowledge:
    composed = compose(KNOWLEDGE)
    return build(Knowledge, resolve(composed, {}).data, composed)
