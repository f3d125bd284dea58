from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.errors import EnvironmentProblem, Location, SpecError
from runner.spec.paths import readable_file, writable


def refusal(path: Path, named: str = "") -> str:
    with pytest.raises(SpecError) as refused:
        readable_file(path, Location(Path("spec.yaml"), 1), "extends" if named else "", named)
    return str(refused.value)


def test_only_regular_files_are_read(tmp_path: Path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert (
        refusal(tmp_path) == f"spec.yaml:1: error [missing-file]: {tmp_path} is not a file: it is a directory"
    )
    assert refusal(tmp_path / "pipe", "pipe") == (
        f"spec.yaml:1: error [missing-file] extends: 'pipe' is not a file: it is a FIFO ({tmp_path}/pipe)\n"
        "  ==> paths in extends: are relative to the file that names them."
    )
    assert (
        refusal(Path("/dev/zero"))
        == "spec.yaml:1: error [missing-file]: /dev/zero is not a file: it is a device"
    )
    assert (
        refusal(tmp_path / "loop")
        == f"spec.yaml:1: error [missing-file]: {tmp_path}/loop is a symlink loop ({tmp_path}/loop)"
    )
    assert refusal(tmp_path / "none") == f"spec.yaml:1: error [missing-file]: no such file: {tmp_path}/none"


def test_an_output_that_cannot_be_written_is_an_environment_problem(tmp_path: Path):
    writable(tmp_path / "new" / "folder" / "x.yaml")  # made later, under a folder that can be written
    assert not (tmp_path / "new").exists() and list(tmp_path.iterdir()) == []  # the probe left nothing
    for path, message in [
        (tmp_path, f"cannot write {tmp_path}: it is a directory"),
        # the folder that is missing is named, and the one that refused to hold it
        (
            Path("/proc/nope/x.yaml"),
            "cannot write /proc/nope/x.yaml: the folder /proc/nope does not exist, and cannot be made in /proc:"
            " No such file or directory",
        ),
        (
            Path("/proc/nope/deeper/x.yaml"),
            "cannot write /proc/nope/deeper/x.yaml: the folder /proc/nope does not exist, and cannot be made"
            " in /proc: No such file or directory",
        ),
        (
            Path("/proc/x.yaml"),
            "cannot write /proc/x.yaml: no file can be made in /proc: No such file or directory",
        ),
    ]:
        with pytest.raises(EnvironmentProblem) as refused:
            writable(path)
        assert str(refused.value) == message
    (tmp_path / "file").write_text("")
    with pytest.raises(EnvironmentProblem, match="is not a folder"):
        writable(tmp_path / "file" / "x.yaml")
