"""The one writer: whole or not at all, never through a link (a planted link is the attack)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner import atomic
from runner.errors import EnvironmentProblem


def test_a_link_where_a_file_is_written_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "out.sh").symlink_to(victim)
    with pytest.raises(EnvironmentProblem) as refused:
        atomic.write_text(tmp_path / "out.sh", "evil")
    assert str(refused.value) == f"{tmp_path}/out.sh is a link (to {victim}): run-matrix never writes through a link"
    assert victim.read_text() == "precious" and os.stat(victim).st_mode & 0o111 == 0


def test_replace_link_replaces_the_link_never_its_target(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "report.json").symlink_to(victim)
    atomic.write_text(tmp_path / "report.json", "new", replace_link=True)
    assert victim.read_text() == "precious"
    assert not (tmp_path / "report.json").is_symlink() and (tmp_path / "report.json").read_text() == "new"


def test_a_folder_or_fifo_there_is_not_replaced(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(EnvironmentProblem, match="is there and is not a plain file"):
        atomic.write_text(tmp_path / "fifo", "x")


def test_write_all_refuses_a_link_before_writing_anything(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "b.yaml").symlink_to(victim)
    with pytest.raises(EnvironmentProblem, match=r"b\.yaml is a link"):
        atomic.write_all({tmp_path / "a.yaml": "a", tmp_path / "b.yaml": "b"})
    assert not (tmp_path / "a.yaml").exists() and victim.read_text() == "precious"


def test_a_log_is_never_opened_through_a_link_or_a_second_name(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "cell.log").symlink_to(victim)
    with pytest.raises(EnvironmentProblem, match=r"cell\.log is a link"):
        atomic.open_log(tmp_path / "cell.log")
    os.link(victim, tmp_path / "hard.log")
    with pytest.raises(EnvironmentProblem, match=r"hard\.log has another name too"):
        atomic.open_log(tmp_path / "hard.log", append=True)
    assert victim.read_text() == "precious"
    with atomic.open_log(tmp_path / "new.log") as log:
        log.write(b"line\n")
    assert (tmp_path / "new.log").read_text() == "line\n"


def test_a_folder_another_writer_makes_meanwhile_is_used_and_left_to_it(tmp_path: Path, monkeypatch) -> None:
    """An import writes its cases side by side into one new folder: the writer that finds the folder
    made between its look and its mkdir writes into it, and does not remove it when it fails; a file
    put where a folder goes still fails."""
    shared, blocked = tmp_path / "alone" / "family", tmp_path / "alone" / "blocked"
    real = Path.mkdir

    def raced(self: Path, *args, **kwargs) -> None:
        if self == shared:
            real(self)  # the other writer, first
        elif self == blocked:
            self.write_text("not a folder")
        real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", raced)
    atomic.write_all({shared / "a.yaml": "a: 1\n"})
    assert (shared / "a.yaml").read_text() == "a: 1\n"
    (shared / "a.yaml").unlink()
    shared.rmdir()
    with pytest.raises(EnvironmentProblem, match="blocked"):  # its second file cannot be written
        atomic.write_all({shared / "b.yaml": "b: 1\n", blocked / "c.yaml": "c: 1\n"})
    assert shared.is_dir() and not (shared / "b.yaml").exists()  # undone; the other writer's folder stays
