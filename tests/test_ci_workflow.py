"""The CI workflow of the docs (docs/ci.md): valid against the GitHub workflow schema check-jsonschema vendors (no
network), its run-matrix lines accepted by run-matrix's own parser, its runners.yaml loadable."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.ci.runners import load_runners
from runner.cli import parser
from tests.conftest import ROOT

SECTION = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")


def block(starting: str) -> str:
    """The fenced YAML block of the CI plan section whose first line starts with ``starting``."""
    found = [b for b in re.findall(r"```yaml\n(.*?)```", SECTION, re.S) if b.startswith(starting)]
    assert len(found) == 1, f"no one ```yaml block starting {starting!r} in docs/ci.md"
    return found[0]


def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(block("# .github/workflows/"))
    data["on"] = data.pop(True)  # YAML 1.1 reads the key `on` as true; GitHub reads it as "on"
    return data


def test_the_workflow_is_valid_for_github():
    jsonschema = pytest.importorskip("jsonschema")
    builtin = pytest.importorskip("check_jsonschema.builtin_schemas")
    schema = builtin.get_builtin_schema("vendor.github-workflows")
    validator = jsonschema.Draft7Validator(schema)
    data = workflow()
    assert [e.message for e in validator.iter_errors(data)] == []
    assert list(data["jobs"]) == ["plan", "run", "results"]
    broken = {**data, "jobs": {**data["jobs"], "run": {**data["jobs"]["run"], "runs-on": None, "strategy": 3}}}
    assert list(validator.iter_errors(broken))  # the schema does judge


def test_the_run_jobs_take_the_plan_s_matrix_and_the_shard_s_cells():
    jobs = workflow()["jobs"]
    assert jobs["run"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert jobs["run"]["runs-on"] == "${{ matrix.runs-on }}"
    shard = next(s for s in jobs["run"]["steps"] if "SHARD" in s.get("env", {}))
    assert shard["env"]["SHARD"] == "${{ toJSON(matrix) }}"  # through the environment, never shell text
    assert "${{ matrix.cells" not in str(jobs)


def commands() -> list[list[str]]:
    found = []
    for job in workflow()["jobs"].values():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                if line.startswith("run-matrix "):
                    line = re.sub(r"\$\{\{[^}]*\}\}", "0", line).split(" >", 1)[0]
                    found.append(shlex.split(line.replace("$NIGHTLY", "--nightly").replace('"$MILES_ROOT"', "/m")))
    return found


def test_every_run_matrix_line_parses():
    lines = commands()
    assert [argv[1:3] for argv in lines] == [["ci", "plan"], ["ci", "plan"], ["run", "--cells"]]
    for argv in lines:
        parser().parse_args(argv[1:])  # argparse exits (SystemExit) on anything it does not accept


def test_the_runners_file_of_the_readme_loads(tmp_path: Path):
    path = tmp_path / "runners.yaml"
    path.write_text(block("runners:"))
    shipped = {p.stem for p in (ROOT / "matrices" / "hardware").glob("*.yaml")}
    classes = load_runners(path, shipped | {"mi350x"})  # mi350x: a profile issue 15 adds
    assert [(c.name, c.gpus, c.count) for c in classes] == [
        ("self-hosted,nvidia,h200,8gpu", 8, 3),
        ("self-hosted,amd,mi350,4gpu", 4, 4),
        ("b200-8gpu", 8, 2),
    ]
