"""JSON Schema of the YAML files, generated from the models.

A file may be a fragment (an overlay sets a few keys), so nothing is required;
``extends:`` and ``why:`` are allowed at the top; ``!delete`` is a custom tag
editors are told about in README.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from schemas.hardware import HardwareProfileFile
from schemas.matrix import MatrixBlock
from schemas.preset import ModelPreset
from schemas.spec import Spec

MODELS: dict[str, type[BaseModel]] = {"spec": Spec, "hardware": HardwareProfileFile, "preset": ModelPreset}
_COMPOSITION = {
    "extends": {
        "description": "spec(s) this file extends, relative to it; later ones win",
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
    },
    "why": {
        "description": "dotted key -> the reason this file sets it",
        "type": "object",
        "additionalProperties": {"type": "string"},
    },
}


def schema(kind: str) -> dict[str, Any]:
    generated = MODELS[kind].model_json_schema()
    generated["properties"] = {**_COMPOSITION, **generated["properties"]}
    if kind == "spec":  # the matrix block is expanded before a cell is modelled
        block = MatrixBlock.model_json_schema()
        generated["$defs"].update(block["$defs"])
        generated["properties"]["matrix"] = block["properties"]["matrix"]
    generated["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    without: dict[str, Any] = _without_required(generated)
    return without


def _without_required(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_required(v) for k, v in node.items() if k != "required"}
    if isinstance(node, list):
        return [_without_required(item) for item in node]
    return node
