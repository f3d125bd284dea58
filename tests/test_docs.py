"""The project's own text: what a merge left unresolved never lands."""

from __future__ import annotations

import re

from tests.conftest import ROOT

CONFLICT = re.compile(r"^(<{7} |={7}$|>{7} )", re.MULTILINE)


def test_no_file_of_the_project_holds_a_merge_s_conflict_markers():
    files = [
        path
        for pattern in (
            "*.md",
            "runner/**/*.py",
            "schemas/**/*.py",
            "tools/**/*.py",
            "matrices/**/*.yaml",
            "miles/**/*.yaml",
        )
        for path in ROOT.glob(pattern)
    ]
    assert len(files) > 100  # the globs found the project
    marked = [
        str(path.relative_to(ROOT)) for path in files if CONFLICT.search(path.read_text(encoding="utf-8"))
    ]
    assert marked == []


def _set_up_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Set up\n", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_readme_command_1_installs_the_core_and_command_2_the_test_extras_first():
    first, second = _set_up_commands()
    assert "pip install -e . &&" in first and "[" not in first.split("&& run-matrix")[0]
    assert second.index("pip install -e '.[test]'") < second.index("python -m pytest")


def test_ci_runs_readme_s_two_commands():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert all(command in ci for command in _set_up_commands())


def test_the_commands_table_names_every_command():
    from runner.cli import COMMANDS

    table = (ROOT / "README.md").read_text(encoding="utf-8").split("## Commands\n", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"^\| `run-matrix (?:\[)?([a-z]+)", table, re.MULTILINE))
    assert set(COMMANDS) <= named, set(COMMANDS) - named
