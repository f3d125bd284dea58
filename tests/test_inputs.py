"""inputs: a recording notes every file read, folder listed, path looked at and module run; any
change to one of them (or a process started while recording) means the records no longer hold."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.validate import inputs
from tests.conftest import promptly


def read_spec_tree(root: Path) -> list[inputs.Record]:
    """What validate does to a tree, in small: list a folder, read its files, look for one that is not there."""
    with inputs.recording() as recorder:
        for path in sorted((root / "specs").glob("*.yaml")):
            path.read_text()
        (root / "specs" / "missing.yaml").exists()
    records = recorder.records()
    assert records is not None
    return records


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "a.yaml").write_text("a: 1\n")
    (tmp_path / "specs" / "b.yaml").write_text("b: 2\n")
    return tmp_path


def kinds(records: list[inputs.Record], kind: str) -> list[str]:
    return [path for each, path, _ in records if each == kind]


def test_records_every_read_listing_and_probe(tree: Path) -> None:
    records = read_spec_tree(tree)
    specs = tree / "specs"
    assert kinds(records, "file") == [str(specs / "a.yaml"), str(specs / "b.yaml")]
    assert kinds(records, "folder")[0] == str(specs)
    assert str(specs / "missing.yaml") in kinds(records, "path")
    assert inputs.__file__ in kinds(records, "code")
    assert os.path.dirname(os.__file__) in kinds(records, "folder")  # where imports look: an install shows
    assert inputs.unchanged(records)


def test_os_stat_is_restored_after_recording(tree: Path) -> None:
    before = os.stat
    read_spec_tree(tree)
    assert os.stat is before and os.lstat is not None


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda t: (t / "specs" / "a.yaml").write_text("a: 3\n"), id="a file's bytes"),
        pytest.param(
            lambda t: (t / "specs" / "c.yaml").write_text("c: 1\n"), id="a new file in a folder listed"
        ),
        pytest.param(lambda t: (t / "specs" / "b.yaml").unlink(), id="a file removed"),
        pytest.param(lambda t: (t / "specs" / "missing.yaml").mkdir(), id="a path once missing"),
    ],
)
def test_any_change_breaks_the_records(tree: Path, change: object) -> None:
    records = read_spec_tree(tree)
    change(tree)  # type: ignore[operator]
    assert not inputs.unchanged(records)


def test_same_bytes_written_again_still_hold_for_the_file_but_not_its_stamp(tree: Path) -> None:
    """A file's record is its bytes; the path record notes size and time too (touch is a change)."""
    records = read_spec_tree(tree)
    path = tree / "specs" / "a.yaml"
    os.utime(path, ns=(0, 0))
    assert [r for r in records if r[0] == "file" and r[1] == str(path)] == [
        ("file", str(path), inputs._digest(str(path)))
    ]
    assert inputs.unchanged([r for r in records if r[0] != "path"])


def test_an_edited_module_breaks_the_records(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "edited_rule.py"
    module.write_text("RULE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import edited_rule  # noqa: F401  (its file is now code that ran)

    records = read_spec_tree(tree)
    assert str(module) in kinds(records, "code")
    module.write_text("RULE = 22\n")
    assert not inputs.unchanged(records)
    del sys.modules["edited_rule"]


@pytest.mark.allow_subprocess
def test_a_process_started_while_recording_cannot_be_recorded() -> None:
    with inputs.recording() as recorder:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert recorder.opaque == "subprocess.Popen"
    assert recorder.records() is None


def test_a_file_changed_while_recording_cannot_be_recorded(tree: Path) -> None:
    path = tree / "specs" / "a.yaml"
    with inputs.recording() as recorder:
        path.read_text()
        os.utime(path, ns=(1, 1))  # changed between its first look and the end
    assert recorder.records() is None


def test_unknown_or_impossible_records_never_hold() -> None:
    assert not inputs.unchanged([("password", "/etc/shadow", "")])
    assert not inputs.unchanged([("file", "/etc/\0passwd", "")])


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.yaml"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("where", ["/dev/zero", "fifo", "folder"])
def test_a_record_of_a_file_that_is_not_a_regular_file_never_holds_and_is_not_read(
    where: str, fifo: Path, tmp_path: Path
) -> None:
    path = {"/dev/zero": "/dev/zero", "fifo": str(fifo), "folder": str(tmp_path)}[where]
    assert promptly(lambda: inputs._digest(path)) is None
    signatures = ["x", "", "None", str(inputs._digest(__file__))]  # never one that holds
    assert not any(promptly(lambda: [inputs.unchanged([("file", path, s)]) for s in signatures]))


def test_a_fifo_swapped_in_after_the_look_is_opened_without_waiting_and_not_read(
    fifo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    regular = tmp_path / "regular.yaml"
    regular.write_text("a: 1\n")
    looked_at = os.stat(regular)
    monkeypatch.setattr(os, "stat", lambda path, *a, **k: looked_at)  # the look saw a regular file
    assert promptly(lambda: inputs._digest(str(fifo))) is None


def test_no_more_bytes_are_read_than_the_file_had(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open("/dev/zero", "rb") as endless:
        assert promptly(lambda: inputs._hash_at_most(endless, 1 << 20)) is None  # 1 MiB and 1 byte
    path = tmp_path / "grows.yaml"
    path.write_text("a: 1\n")
    held = inputs._digest(str(path))
    assert held is not None and len(held) == 64
    looked_at = os.stat(path)
    path.write_text("a: 1\nb: 2\n")  # it grew between the look and the read
    monkeypatch.setattr(os, "stat", lambda path, *a, **k: looked_at)
    assert inputs._digest(str(path)) is None


def test_a_run_that_read_a_fifo_cannot_be_recorded(fifo: Path) -> None:
    with inputs.recording() as recorder:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # what `validate <(cat spec)` reads
    assert str(fifo) in recorder.opened
    assert promptly(recorder.records) is None
