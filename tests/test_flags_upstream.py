"""No false alarm: every flag upstream launches pass is accepted by the catalog of its version.

The fixtures: tests/data/upstream/glm5-*.commands.txt (the PR's two GLM-5 launches, token for
token) and tests/data/flags/upstream-<commit>.json (every flag use the upstream tests and launchers
of that commit make, as `tools/flags/check_upstream.py --write-fixture` found them in the checkout).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from runner.errors import Location
from runner.knowledge import bundled
from runner.knowledge.flags import Catalog, load, shipped
from runner.knowledge.flags.values import judge
from runner.spec import locate
from tests.conftest import DATA

CATALOGS = {path.stem.split("-")[-1]: path for path in shipped()}


def verdicts(catalog: Catalog, name: str, values: list[str]) -> list[str]:
    flag = catalog.lookup(name) or catalog.lookup(name, "fsdp")  # a test file may launch both backends
    if flag is None:
        return [f"--{name}: unknown"]
    value: Any = True if not values else values[0] if len(values) == 1 else values
    verdict = judge(flag, value)
    return [verdict[1]] if verdict else []


def argv_uses(tokens: list[str]) -> list[tuple[str, list[str]]]:
    uses: list[tuple[str, list[str]]] = []
    for token in tokens:
        if token.startswith("--"):
            uses.append((token[2:], []))
        elif uses:
            uses[-1][1].append(token)
    return uses


@pytest.mark.parametrize("platform", ["nv", "rocm"])
def test_the_pr_glm5_launches_are_accepted_token_for_token(platform: str) -> None:
    lines = (DATA / "upstream" / f"glm5-{platform}.commands.txt").read_text().splitlines()
    submit = next(line for line in lines if "ray job submit" in line)
    tokens = shlex.split(submit.split(" -- ", 1)[1])[3:]
    catalog = load(CATALOGS["dc8b499b"])
    uses = argv_uses(tokens)
    assert len(uses) > 60
    assert [v for name, values in uses for v in verdicts(catalog, name, values)] == []


@pytest.mark.parametrize("commit", sorted(CATALOGS))
def test_every_upstream_flag_use_is_accepted(commit: str) -> None:
    data = json.loads((DATA / "flags" / f"upstream-{commit}.json").read_text())
    catalog = load(CATALOGS[commit])
    assert data["catalog"] == catalog.origin
    assert len(data["uses"]) > 300
    assert [v for name, values in data["uses"] for v in verdicts(catalog, name, values)] == []


PRESETS = sorted(locate.PRESETS.glob("*/*.yaml"))


def test_there_are_shipped_presets_of_both_versions() -> None:
    assert {p.parent.name for p in PRESETS} == {"2026-05-13-dc8b499b", "2026-08-21-31f1ca96"}


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: f"{p.parent.name[-8:]}/{p.stem}")
def test_every_shipped_preset_flag_is_accepted_by_its_own_version(preset: Path) -> None:
    commit = preset.parent.name[-8:]
    model, _ = bundled.load_preset(preset.stem, Location(preset), preset, commit)
    catalog = load(CATALOGS[commit])
    found = [
        v
        for name, value in model.model_args.items()
        for v in verdicts(
            catalog,
            name,
            [] if value is True else [str(i) for i in value] if isinstance(value, list) else [str(value)],
        )
    ]
    assert found == []
