"""bundled: the model presets and launch conventions run-matrix ships under ``miles/``, modelled.

Each file is composed, resolved and modelled once per process (it is data of this installation,
never changed while a command runs; a thousand cells share one preset).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.errors import Location
from runner.knowledge import preset_data, versions
from runner.memos import remember
from runner.spec import locate
from runner.spec.compose import Composed, compose
from runner.spec.model import build
from runner.spec.resolve import resolve
from schemas import LaunchConventions, ModelPreset


def _modelled(cls: Any, path: Path) -> Any:
    return _modelled_with_source(cls, path)[0]


@remember("shipped", "a preset or conventions file of miles/, modelled: a thousand cells share one")
def _modelled_with_source(cls: Any, path: Path) -> tuple[Any, Composed]:
    composed = compose(path)
    return build(cls, resolve(composed, {}).data, composed), composed


def load_preset(
    name: str | None, where: Location, spec: Path, version: str | None = None
) -> tuple[ModelPreset, Composed]:
    """The model preset (MODEL_ARGS) of a Megatron model type at the spec's miles ``version`` (None:
    the newest shipped that has it); none at all without a type (FSDP)."""
    if name is None:
        return ModelPreset(type="", model_args={}), Composed({}, {}, (spec,))
    chosen = preset_data.choose(name, version, where)
    preset, source = _modelled_with_source(ModelPreset, chosen.path)
    return preset, source


def conventions(version: str | None = None) -> LaunchConventions:
    """miles' launch conventions at the spec's miles ``version`` (None, or one no file names: the newest)."""
    shipped = versions.shipped(locate.CONVENTIONS.glob("*.yaml"))
    named = versions.matching(version, shipped) if version else []
    chosen = named[0] if len(named) == 1 else shipped[-1]
    found: LaunchConventions = _modelled(LaunchConventions, chosen.path)
    return found
