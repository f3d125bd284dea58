"""JSON Schema of the YAML files, generated from the models.

A file may be a fragment (an overlay sets a few keys), so nothing is required;
``extends:`` is allowed at the top and ``why:`` in every mapping (next to what it explains);
``!delete`` is a custom tag editors are told about in docs/specs.md. ``launch.script`` is one of the launchers
of ``miles/launchers.yaml``, data the caller passes in: the schema lists them for completion.
"""

from typing import Any

from pydantic import BaseModel

from schemas.ci_plan import CiPlan
from schemas.hardware import HardwareProfileFile
from schemas.launchers import Launchers
from schemas.matrix import MatrixBlock
from schemas.preset import ModelPreset
from schemas.runners import Runners
from schemas.spec import Spec

MODELS: dict[str, type[BaseModel]] = {"spec": Spec, "hardware": HardwareProfileFile, "preset": ModelPreset}
# whole files, neither composed nor fragments: their schema keeps what is required
WHOLE: dict[str, type[BaseModel]] = {"runners": Runners, "ci-plan": CiPlan}
_COMPOSITION = {
    "extends": {
        "description": "spec(s) this file extends, relative to it; later ones win",
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
    },
    "why": {
        "description": "dotted key (or keys: a.b, a.c or a.{b, c}), relative to this mapping -> the reason "
        "this file sets it",
        "type": "object",
        "additionalProperties": {"type": "string"},
    },
}
_WHY = {"anyOf": [{"$ref": "#/$defs/Why"}, {"type": "string", "description": "the reason for this mapping"}]}


def schema(kind: str, launchers: Launchers | None = None) -> dict[str, Any]:
    """The JSON Schema of ``kind``; a spec's needs the ``launchers`` its ``launch.script`` may name."""
    if kind in WHOLE:
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **WHOLE[kind].model_json_schema()}
    generated = MODELS[kind].model_json_schema()
    generated["properties"] = {**_COMPOSITION, **generated["properties"]}
    if kind == "spec":  # the matrix block is expanded before a cell is modelled
        if launchers is None:
            raise ValueError("the spec's schema lists the launchers: pass them (runner.knowledge.launchers)")
        _with_launchers(generated["$defs"]["Launch"]["properties"], launchers)
        block = MatrixBlock.model_json_schema()
        generated["$defs"].update(block["$defs"])
        generated["properties"]["matrix"] = block["properties"]["matrix"]
    generated["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    generated["properties"]["why"] = {"$ref": "#/$defs/Why"}
    without: dict[str, Any] = _with_why(_without_required(generated))
    without["$defs"] = {**without.get("$defs", {}), "Why": _COMPOSITION["why"]}
    return without


def _with_launchers(properties: dict[str, Any], launchers: Launchers) -> None:
    """``script`` as the closed list an editor completes, described from the data (its place kept)."""
    rest = {k: v for k, v in properties["script"].items() if k not in ("description", "enum")}
    properties["script"] = {"description": launchers.described(), "enum": list(launchers.scripts), **rest}


def _with_why(node: Any) -> Any:
    """Every mapping of the file may hold a ``why:`` (models and free mappings such as flag groups)."""
    if isinstance(node, list):
        return [_with_why(item) for item in node]
    if not isinstance(node, dict):
        return node
    found = {k: _with_why(v) for k, v in node.items()}
    if found.get("type") == "object":
        found["properties"] = {"why": _WHY, **found.get("properties", {})}
    return found


def _without_required(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_required(v) for k, v in node.items() if k != "required"}
    if isinstance(node, list):
        return [_without_required(item) for item in node]
    return node
