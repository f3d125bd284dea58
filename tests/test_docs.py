"""The project's own text: what a merge left unresolved never lands."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

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


# ---------------------------------------------------------------------------------------------------
# The manual: README, the site in docs/, its generated reference, and the examples it shows.

DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- (exit (?P<exit>\d+)|not run: (?P<why>[^>]+?)) -->\s*\Z")
SHELLS = {"", "bash", "sh", "shell", "console"}


@dataclass(frozen=True)
class Example:
    """A fenced shell block of a page: ``console`` blocks are run (``$ `` a command, ``> `` its
    continuation, the lines below it an excerpt of its output: ``...`` skips lines, ``…`` any text
    in a line); an HTML comment on the line above gives the last command's exit code (``<!-- exit
    2 -->``, default 0) or says why it is not run (``<!-- not run: needs GPUs -->``)."""

    page: str
    line: int
    language: str
    body: str
    exit: int
    not_run: str

    @property
    def commands(self) -> list[tuple[str, list[str]]]:
        steps: list[tuple[str, list[str]]] = []
        for text in self.body.splitlines():
            if text.startswith("$ "):
                steps.append((text[2:], []))
            elif text.startswith("> ") and steps and not steps[-1][1]:
                steps[-1] = (steps[-1][0] + "\n" + text[2:], [])
            elif steps:
                steps[-1][1].append(text)
        return steps

    @property
    def runs_run_matrix(self) -> bool:
        lines = [text.removeprefix("$ ") for text in self.body.splitlines()]
        return any(text.startswith("run-matrix ") or " && run-matrix " in text for text in lines)


def examples(path: Path) -> list[Example]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        if match.group(1) not in SHELLS:
            continue
        above = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(above)
        found.append(
            Example(
                page=str(path.relative_to(ROOT)),
                line=text[: match.start()].count("\n") + 1,
                language=match.group(1),
                body=match.group(2),
                exit=int(marker["exit"]) if marker and marker["exit"] else 0,
                not_run=marker["why"] if marker and marker["why"] else "",
            )
        )
    return found


EXAMPLES = [example for page in PAGES for example in examples(page)]
RUN = [example for example in EXAMPLES if example.language == "console" and not example.not_run]


def shown(expected: list[str], output: str) -> str:
    """Where ``expected`` (an excerpt: ``...`` skips lines, ``…`` is any text; blank lines are left
    out of both) is not ``output``'s: the first line not found in order, or ``""``."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    at, skipping = 0, False
    for want in [line.rstrip() for line in expected if line.strip()]:
        if want == "...":
            skipping = True
            continue
        pattern = re.compile(".*".join(map(re.escape, want.split("…"))) + r"\Z")
        while at < len(lines) and not pattern.match(lines[at]):
            if not skipping:
                return f"line {at + 1} is {lines[at]!r}, the example shows {want!r}"
            at += 1
        if at == len(lines):
            return f"{want!r} is not in the output (in order)"
        at, skipping = at + 1, False
    return ""


def test_shown_matches_an_excerpt_and_names_what_it_misses():
    output = "a\nb 1.2 s\nc\nd\n"
    assert shown(["a", "b … s", "...", "d"], output) == ""
    assert shown(["a", "c"], output) == "line 2 is 'b 1.2 s', the example shows 'c'"
    assert shown(["...", "e"], output) == "'e' is not in the output (in order)"
    marked = examples_of("<!-- exit 2 -->\n```console\n$ run-matrix x\n> y\nout\n```\n")
    assert (marked.exit, marked.commands) == (2, [("run-matrix x\ny", ["out"])])


def examples_of(text: str) -> Example:
    path = DOCS / "_example.md"
    try:
        path.write_text(text, encoding="utf-8")
        (found,) = examples(path)
    finally:
        path.unlink()
    return found


def test_every_shell_example_that_runs_run_matrix_is_run_or_says_why_not():
    unmarked = [
        f"{example.page}:{example.line}"
        for example in EXAMPLES
        if example.runs_run_matrix and example.language != "console" and not example.not_run
    ]
    assert unmarked == []
    assert len(RUN) >= 8  # the pages' runnable examples were found


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("example", RUN, ids=[f"{example.page}:{example.line}" for example in RUN])
def test_the_example_runs_with_its_exit_code_and_output(example: Example, tmp_path: Path):
    """Each command in a copy of the shipped matrices, as a user runs it: the installed command."""
    shutil.copytree(ROOT / "matrices", tmp_path / "matrices")
    bin_dir = str(Path(sys.executable).parent)
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("RUN_MATRIX_", "MILES_")) and key != "PYTHONPATH"
    }
    environ |= {"PATH": f"{bin_dir}{os.pathsep}{environ.get('PATH', '')}", "COLUMNS": "100"}
    environ |= {"RUN_MATRIX_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    steps = example.commands
    assert steps, f"{example.page}:{example.line}: a console example without a `$ ` command"
    for number, (command, expected) in enumerate(steps, 1):
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120
        )
        output = done.stdout + done.stderr
        want = example.exit if number == len(steps) else 0
        assert done.returncode == want, f"`{command}` exited {done.returncode}, not {want}:\n{output}"
        assert shown(expected, output) == "", f"`{command}`:\n{output}"


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


def headings(path: Path) -> list[str]:
    """The headings of a markdown page, outside its code blocks."""
    return re.findall(r"^#{1,6} (.+)$", FENCE.sub("", path.read_text(encoding="utf-8")), re.MULTILINE)


def test_every_heading_of_the_old_readme_is_a_heading_of_its_page():
    """What the README said before the site (``tests/data/readme-headings.json``, its 33 headings as
    of 42a868b) was moved, not lost: each heading is on the page the map names."""
    moved = json.loads((ROOT / "tests/data/readme-headings.json").read_text(encoding="utf-8"))
    assert len(moved) == 33
    lost = [
        f"{entry['heading']} -> {entry['page']}"
        for entry in moved
        if entry["heading"] not in headings(ROOT / entry["page"])
    ]
    assert lost == []


def test_the_reference_pages_are_what_the_code_generates():
    """``python tools/docs/reference.py docs`` rewrites them after a change of a parser, an exit code
    or a rule."""
    spec = importlib.util.spec_from_file_location("reference", ROOT / "tools/docs/reference.py")
    assert spec and spec.loader
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    pages = reference.pages()
    stale = [name for name, text in pages.items() if (DOCS / name).read_text(encoding="utf-8") != text]
    assert stale == [], "run: python tools/docs/reference.py docs"
    # the same pages wherever the checkout lies, on whatever machine (no path of it, no core count)
    assert [name for name, text in pages.items() if str(ROOT) in text] == []
    from runner.cli import COMMANDS, parser

    commands = pages["reference/commands.md"]
    for name in COMMANDS:
        assert f"\n## {name}\n" in commands, name
    every = [
        option
        for sub in _parsers(parser())
        for action in sub._actions
        for option in action.option_strings
        if action.help != argparse.SUPPRESS and action.dest != "help"
    ]
    named = set(re.findall(r"(?:`|, )(-[\w-]+)", commands))
    assert len(every) > 100 and sorted(set(every) - named) == []


def _parsers(top: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = []
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += [sub, *_parsers(sub)]
    return found


@pytest.mark.allow_subprocess
def test_the_site_builds_strictly_and_loads_nothing_from_the_network(tmp_path: Path):
    """``mkdocs build --strict``: no broken link or anchor, no page left out of the navigation; and no
    page asks the network for a script, a style sheet, a font or an image (it works from file://)."""
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    pages = list(site.rglob("*.html"))
    assert len(pages) >= len(list(DOCS.rglob("*.md")))
    remote = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.IGNORECASE)
    assert [str(page) for page in pages if remote.search(page.read_text(encoding="utf-8"))] == []
    assert "url(http" not in "".join(path.read_text(encoding="utf-8") for path in site.rglob("*.css"))
