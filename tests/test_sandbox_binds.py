"""runner.sandbox.binds: a script outside a checkout gets its own file and what it imports, never its neighbours."""

from __future__ import annotations

from pathlib import Path

from runner.sandbox.binds import script_reads


def test_only_the_script_and_the_modules_and_packages_it_imports_are_bound(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import _helper, os\nfrom pkg.sub import y\nimport _link\nimport _absent\n"
    )
    (tmp_path / "_helper.py").write_text("from _deeper import z\n")
    (tmp_path / "_deeper.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "password.txt").write_text("hunter2")
    (tmp_path / "_unnamed.py").write_text("")
    (tmp_path / "_link.py").symlink_to(tmp_path / "password.txt")  # named, but a link: never followed
    assert script_reads(tmp_path / "test_x.py") == [
        tmp_path / "test_x.py",
        tmp_path / "_helper.py",
        tmp_path / "pkg",
        tmp_path / "_deeper.py",
    ]


def test_a_script_in_the_checkout_gets_the_checkout_and_one_outside_it_gets_both(tmp_path):
    checkout, outside = tmp_path / "miles", tmp_path / "elsewhere"
    (checkout / "tests").mkdir(parents=True)
    outside.mkdir()
    (checkout / "tests/test_a.py").write_text("import _beside\n")
    (outside / "test_b.py").write_text("this is not Python (\n")
    assert script_reads(checkout / "tests/test_a.py", checkout) == [checkout]
    assert script_reads(outside / "test_b.py", checkout) == [outside / "test_b.py", checkout]


def test_a_module_too_large_to_read_names_nothing(tmp_path: Path):
    (tmp_path / "test_x.py").write_text("import _helper\n" + "#" * (4 << 20))
    (tmp_path / "_helper.py").write_text("")
    assert script_reads(tmp_path / "test_x.py") == [tmp_path / "test_x.py"]
