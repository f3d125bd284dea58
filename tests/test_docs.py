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
