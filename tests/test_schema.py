from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.knowledge import launchers
from schemas.jsonschema import MODELS, schema

ROOT = Path(__file__).parents[1]


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_checked_in_schema_is_current(kind: str) -> None:
    path = ROOT / "schemas" / f"{kind}.schema.json"
    assert json.loads(path.read_text()) == schema(kind, launchers.shipped()), (
        f"stale: run-matrix schema {kind} > {path.relative_to(ROOT)}"
    )


@pytest.mark.parametrize(
    ("folder", "kind"),
    [
        ("matrices/nv", "spec"),
        ("matrices/rocm", "spec"),
        ("matrices/base", "spec"),
        ("matrices/hardware", "hardware"),
        ("miles/models/*", "preset"),
    ],
)
def test_files_name_their_schema(folder: str, kind: str) -> None:
    paths = list(ROOT.glob(f"{folder}/*.yaml"))
    assert paths
    for path in paths:
        first = path.read_text().splitlines()[0]
        up = "../" * (len(path.relative_to(ROOT).parts) - 1)
        assert first == f"# yaml-language-server: $schema={up}schemas/{kind}.schema.json", path


def test_fragments_need_nothing() -> None:
    def keys(node: object) -> set[str]:
        if isinstance(node, dict):
            return set(node) | {k for value in node.values() for k in keys(value)}
        return {k for item in node for k in keys(item)} if isinstance(node, list) else set()

    assert "required" not in keys(schema("spec", launchers.shipped()))
