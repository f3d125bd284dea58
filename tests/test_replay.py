"""replay: a verdict is printed again only while its key (arguments, folder, date, environment)
and every input it was reached from hold; an entry that is damaged or not ours is ignored."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner import inputs, replay
from tests.conftest import promptly

ROOT = Path(__file__).parents[1]
ARGUMENTS: dict[str, Any] = {"specs": ["matrices/"], "k": None, "miles_root": None}


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RUN_MATRIX_CACHE_DIR", str(tmp_path / "cache"))  # this test's entries only
    path = tmp_path / "spec.yaml"
    path.write_text("a: 1\n")
    return path


def recorded(path: Path) -> list[inputs.Record]:
    with inputs.recording() as recorder:
        path.read_text()
    records = recorder.records()
    assert records is not None
    return records


def stored(path: Path, verdict: dict[str, Any] | None = None) -> str:
    found_by = replay.key("validate", ARGUMENTS)
    replay.store("validate", ARGUMENTS, found_by, recorded(path), verdict or {"errors": 0})
    return found_by


def test_a_stored_verdict_is_loaded_while_its_inputs_hold(spec: Path) -> None:
    found_by = stored(spec, {"errors": 1})
    assert replay.load("validate", found_by) == {"errors": 1}
    spec.write_text("a: 2\n")
    assert replay.load("validate", found_by) is None


TODAY = datetime.date.today()


class Tomorrow(datetime.date):
    @classmethod
    def today(cls) -> Tomorrow:
        return cls.fromordinal(TODAY.toordinal() + 1)


def test_the_key_is_of_the_date_the_environment_the_folder_and_the_arguments(
    spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = replay.key("validate", ARGUMENTS)
    assert replay.key("validate", ARGUMENTS) == now
    assert replay.key("validate", {**ARGUMENTS, "k": "rocm"}) != now
    assert replay.key("render", ARGUMENTS) != now
    with monkeypatch.context() as changed:
        changed.setattr(datetime, "date", Tomorrow)  # an `expires:` may have passed overnight
        assert replay.key("validate", ARGUMENTS) != now
    with monkeypatch.context() as changed:
        changed.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")  # a runner's GPU mask
        assert replay.key("validate", ARGUMENTS) != now
    with monkeypatch.context() as changed:
        (tmp_path / "elsewhere").mkdir()
        changed.chdir(tmp_path / "elsewhere")
        assert replay.key("validate", ARGUMENTS) != now
    with monkeypatch.context() as changed:
        changed.setenv("_", "/usr/bin/time")  # the shell's bookkeeping: no verdict depends on it
        assert replay.key("validate", ARGUMENTS) == now
    assert replay.key("validate", ARGUMENTS) == now


def test_the_environment_is_kept_as_a_hash_only(spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "secret-value-1234")
    found_by = stored(spec)
    text = replay._entry("validate", found_by).read_text()
    assert "secret-value-1234" not in text and "WANDB_API_KEY" not in text


def test_nothing_is_kept_when_the_key_changed_during_the_run(
    spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found_by = replay.key("validate", ARGUMENTS)
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")  # as if it changed between the start and the end
    replay.store("validate", ARGUMENTS, found_by, recorded(spec), {"errors": 0})
    assert not replay._entry("validate", found_by).exists()


def test_nothing_is_kept_for_a_run_that_could_not_be_recorded(spec: Path) -> None:
    found_by = replay.key("validate", ARGUMENTS)
    replay.store("validate", ARGUMENTS, found_by, None, {"errors": 0})
    assert not replay._entry("validate", found_by).exists()


DAMAGED = [
    pytest.param(b"", id="empty"),
    pytest.param(b"\x00\xff not json", id="not JSON"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, id="nested past the recursion limit"),
    pytest.param(b"[]", id="not an object"),
    pytest.param(json.dumps({"format": 99}).encode(), id="another format"),
]


@pytest.mark.parametrize("text", DAMAGED)
def test_a_damaged_entry_is_ignored(spec: Path, text: bytes) -> None:
    found_by = stored(spec)
    replay._entry("validate", found_by).write_bytes(text)
    assert replay.load("validate", found_by) is None


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda e: e.update(key="0" * 64), id="another key"),
        pytest.param(lambda e: e.update(inputs="all"), id="inputs not a list"),
        pytest.param(lambda e: e["inputs"].append(["file", "/x"]), id="a record of two"),
        pytest.param(lambda e: e["inputs"].append(["file", "/x", 3]), id="a signature not text"),
        pytest.param(lambda e: e["inputs"].append(["shell", "rm -rf /", ""]), id="an unknown kind"),
        pytest.param(lambda e: e.update(verdict=[]), id="verdict not an object"),
    ],
)
def test_an_entry_that_is_not_what_this_code_writes_is_ignored(spec: Path, damage: Any) -> None:
    found_by = stored(spec)
    path = replay._entry("validate", found_by)
    entry = json.loads(path.read_text())
    damage(entry)
    path.write_text(json.dumps(entry))
    assert replay.load("validate", found_by) is None


def not_a_regular_file(kind: str, path: Path, valid: bytes) -> None:
    """Put at ``path`` (an entry's place) something that is not a regular file."""
    elsewhere = path.parent.parent / "elsewhere"
    elsewhere.mkdir()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "link to a fifo":
        os.mkfifo(elsewhere / "fifo")
        path.symlink_to(elsewhere / "fifo")
    elif kind == "link to a folder":
        path.symlink_to(elsewhere)
    elif kind == "link to a huge file":
        with open(elsewhere / "huge", "wb") as huge:
            huge.truncate(1 << 40)  # sparse: a TiB that is never read
        path.symlink_to(elsewhere / "huge")
    else:  # a link to a valid entry: a link is never what store writes, so it is never read
        (elsewhere / "entry.json").write_bytes(valid)
        path.symlink_to(elsewhere / "entry.json")


@pytest.mark.parametrize(
    "kind",
    [
        "fifo",
        "folder",
        "link to /dev/zero",
        "link to a fifo",
        "link to a folder",
        "link to a huge file",
        "link to a valid entry",
    ],
)
def test_an_entry_that_is_not_a_regular_file_is_ignored_unread(spec: Path, kind: str) -> None:
    found_by = stored(spec)
    path = replay._entry("validate", found_by)
    valid = path.read_bytes()
    path.unlink()
    not_a_regular_file(kind, path, valid)
    with inputs.recording() as recorder:  # its audit hook sees every open, os.open's and open()'s
        assert promptly(lambda: replay.load("validate", found_by)) is None
    assert str(path) not in recorder.opened  # looked at (lstat), never opened


def test_an_entry_larger_than_any_this_code_writes_is_ignored(spec: Path) -> None:
    found_by = stored(spec)
    with open(replay._entry("validate", found_by), "r+b") as entry:
        entry.truncate(replay.MAX_ENTRY_BYTES + 1)
    assert replay.load("validate", found_by) is None


def test_a_fifo_swapped_in_after_the_look_is_opened_without_waiting(
    spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found_by = stored(spec)
    path = replay._entry("validate", found_by)
    looked_at = os.lstat(path)
    path.unlink()
    os.mkfifo(path)
    monkeypatch.setattr(os, "lstat", lambda path, *a, **k: looked_at)  # the look saw the entry
    assert promptly(lambda: replay.load("validate", found_by)) is None


@pytest.mark.parametrize("device", ["/dev/zero", "fifo"])
def test_an_entry_whose_records_name_a_device_or_a_fifo_is_ignored_unread(
    spec: Path, tmp_path: Path, device: str
) -> None:
    if device == "fifo":
        device = str(tmp_path / "fifo")
        os.mkfifo(device)
    found_by = stored(spec)
    path = replay._entry("validate", found_by)
    entry = json.loads(path.read_text())
    entry["inputs"].append(["file", device, "x"])
    path.write_text(json.dumps(entry))
    assert promptly(lambda: replay.load("validate", found_by)) is None


def test_old_entries_are_pruned(spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay, "KEPT", 2)
    for n in range(4):
        monkeypatch.setenv("RUN_MATRIX_TEST_ROUND", str(n))
        stored(spec)
    assert len(list(replay.folder("validate").glob("*.json"))) == 2


def test_pruning_removes_only_files_named_as_entries(
    spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay, "KEPT", 1)
    where = tmp_path / "cache" / "validate"  # the spec fixture's cache
    where.mkdir(parents=True)
    hex64 = "a" * 64
    foreign = {
        "notes.json": "file",
        f"{hex64.upper()}.json": "file",
        f"{hex64[:63]}.json": "file",
        f"{hex64}.json.bak": "file",
        f"x{hex64}.json": "file",
        f"{'b' * 64}.json": "folder",
        f"{'c' * 64}.json": "link",
    }
    for name, kind in foreign.items():
        if kind == "file":
            (where / name).write_text("{}")
        elif kind == "folder":
            (where / name).mkdir()
        else:
            (where / name).symlink_to(where / "notes.json")
        os.utime(where / name, ns=(0, 0), follow_symlinks=False)  # older than any entry
    for n in range(3):
        monkeypatch.setenv("RUN_MATRIX_TEST_ROUND", str(n))
        newest = stored(spec)
    assert sorted(p.name for p in where.iterdir()) == sorted([*foreign, f"{newest}.json"])


def test_enabled_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUN_MATRIX_NO_CACHE", raising=False)
    assert replay.enabled(no_cache=False)
    assert not replay.enabled(no_cache=True)
    monkeypatch.setenv("RUN_MATRIX_NO_CACHE", "1")
    assert not replay.enabled(no_cache=False)


# End to end: `run-matrix validate` as the console script runs it, one process per command.
PROBE = """
import sys, json
from runner.cli import main
code = main(sys.argv[1:], fresh_process=True)
print(json.dumps({"code": code, "pydantic": "pydantic" in sys.modules}))
"""


def validate(cwd: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[int, bool, str]:
    """(exit code, whether the checks ran (pydantic loaded), what it printed before the probe's line)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "validate", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
        timeout=300,  # a validate that blocks (on a FIFO in the cache) fails the test, not the suite
    )
    *printed, probe = done.stdout.splitlines()
    found = json.loads(probe)
    return found["code"], found["pydantic"], "\n".join(printed)


def without_seconds(text: str) -> str:
    return text.rsplit(" checked in ", 1)[0]


@pytest.fixture
def matrices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped matrices, and a cache of its own."""
    shutil.copytree(ROOT / "matrices", tmp_path / "matrices")
    monkeypatch.setenv("RUN_MATRIX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RUN_MATRIX_NO_CACHE", raising=False)
    return tmp_path


@pytest.mark.allow_subprocess
def test_validate_replays_until_an_input_changes(matrices: Path) -> None:
    first = validate(matrices, "matrices/")
    again = validate(matrices, "matrices/")
    assert (first[:2], again[:2]) == ((0, True), (0, False))  # the second checked nothing
    assert without_seconds(again[2]) == without_seconds(first[2])

    overlay = matrices / "matrices" / "rocm" / "glm5-async.yaml"
    overlay.write_text(overlay.read_text().replace("sglang-dp-size: 2", "sglang-dp-size: 3"))
    code, checked, printed = validate(matrices, "matrices/")
    assert (code, checked) == (2, True)
    assert "rocm/glm5-async.yaml" in printed and "error" in printed
    assert validate(matrices, "matrices/")[:2] == (2, False)  # the broken verdict is replayed too


@pytest.mark.allow_subprocess
def test_validate_checks_again_for_a_new_file_the_environment_or_no_cache(matrices: Path) -> None:
    assert validate(matrices, "matrices/")[:2] == (0, True)
    (matrices / "matrices" / "nv" / "broken.yaml").write_text("extends: nowhere.yaml\n")
    assert validate(matrices, "matrices/")[:2] == (2, True)
    assert validate(matrices, "matrices/", env={"CUDA_VISIBLE_DEVICES": "0,1"})[:2] == (2, True)
    assert validate(matrices, "matrices/", "--no-cache")[:2] == (2, True)
    assert validate(matrices, "matrices/", env={"RUN_MATRIX_NO_CACHE": "1"})[:2] == (2, True)
    assert validate(matrices, "matrices/")[:2] == (2, False)


@pytest.mark.allow_subprocess
def test_a_kept_verdict_whose_counts_disagree_with_its_problems_is_checked_again(matrices: Path) -> None:
    (matrices / "matrices" / "nv" / "broken.yaml").write_text("extends: nowhere.yaml\n")
    assert validate(matrices, "matrices/")[:2] == (2, True)
    (path,) = (matrices / "cache" / "validate").glob("*.json")
    entry = json.loads(path.read_text())
    entry["verdict"]["errors"] = 0  # a damaged entry that would hide the error
    path.write_text(json.dumps(entry))
    assert validate(matrices, "matrices/")[:2] == (2, True)


@pytest.mark.allow_subprocess
def test_validate_does_not_wait_on_a_fifo_in_place_of_its_entry(matrices: Path) -> None:
    assert validate(matrices, "matrices/")[:2] == (0, True)
    (path,) = (matrices / "cache" / "validate").glob("*.json")
    path.unlink()
    os.mkfifo(path)
    assert validate(matrices, "matrices/")[:2] == (0, True)  # checked cold, and kept again
    assert path.is_file()
    assert validate(matrices, "matrices/")[:2] == (0, False)
