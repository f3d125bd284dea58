"""What the import knows about miles' test scripts, as data: ``miles/import.yaml``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from runner.memos import remember
from runner.spec import locate
from runner.spec.compose import compose
from runner.spec.model import build
from runner.spec.resolve import resolve
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


class MBridge(Model):
    """mbridge's own bridge registry at the commit miles' images pin (``knowledge/mbridge.py``)."""

    commit: str = Field(pattern=r"^[0-9a-f]{40}$", description="the mbridge commit miles pins")
    source: str = Field(description="where the list was read")
    pinned_by: list[str] = Field(description="the miles versions (and files) that pin it")
    registered: list[str] = Field(description="the model types mbridge registers itself")


class Knowledge(Model):
    switches: dict[str, Switch]
    groups: dict[str, Group] = Field(description="script variable (less _args) -> spec group")
    secret_flags: dict[str, str] = Field(description="flag -> the env var that holds its secret value")
    helper_env: list[str] = Field(description="env vars miles' helpers read themselves")
    checkpoints: dict[str, dict[str, dict[str, Any]]] = Field(
        default={}, description="HF repo -> file -> the JSON content a test's prepare() may read"
    )
    mbridge: MBridge = Field(description="mbridge's own bridge registry")


@remember("shipped", "miles/import.yaml, modelled: run-matrix's own file, unchanged while it runs")
def knowledge() -> Knowledge:
    composed = compose(KNOWLEDGE)
    return build(Knowledge, resolve(composed, {}).data, composed)
