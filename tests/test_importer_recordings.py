"""recordings: a recording is kept by the hash of what the sandbox showed; anything else is a miss."""

from __future__ import annotations

import concurrent.futures
import json
import os
import threading
from pathlib import Path

import pytest

from runner.importer import capture, recordings
from tests.conftest import DATA

RECORDING = {"trace": {"events": []}, "output": "printed"}


def kept(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "recordings"
    key, _ = recordings.key({"argv": ["x"]}, [DATA / "main-layout"])
    recordings.store(folder, key, RECORDING)
    return folder, key


def test_a_kept_recording_is_found_by_its_key(tmp_path):
    folder, key = kept(tmp_path)
    assert recordings.load(folder, key) == {**RECORDING, "key": key}
    assert oct((folder / "secret").stat().st_mode & 0o777) == "0o600"


def test_the_key_changes_with_any_byte_the_sandbox_shows_and_with_the_environment(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "test_a.py").write_text("print(1)\n")
    first, _ = recordings.key({"env": {"A": "1"}}, [tree])
    assert recordings.key({"env": {"A": "1"}}, [tree])[0] == first
    assert recordings.key({"env": {"A": "2"}}, [tree])[0] != first
    (tree / "test_a.py").write_text("print(2)\n")  # same size, other bytes
    assert recordings.key({"env": {"A": "1"}}, [tree])[0] != first
    (tree / "new.py").symlink_to("/etc/passwd")  # a link: by its target, never followed
    assert recordings.key({"env": {"A": "1"}}, [tree])[0] not in (first,)


def test_a_tree_past_the_bytes_hashed_in_all_is_unhashable_and_a_fifo_is_not_waited_on(tmp_path, monkeypatch):
    """Hashing what the sandbox binds reads each file once: a checkout of huge files costs no more
    than MAX_BYTES before nothing is cached, and a FIFO (or a link) is never opened to wait on."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "test_a.py").write_text("print(1)\n")
    os.mkfifo(tree / "fifo.py")
    (tree / "link.py").symlink_to(tree / "fifo.py")
    recordings.key({}, [tree])  # returns: neither the FIFO nor the link to it is opened
    (tree / "big.bin").write_bytes(b"x" * 64)
    monkeypatch.setattr(recordings, "MAX_BYTES", 32)
    recordings._CONTENTS.clear()
    with pytest.raises(recordings.Unhashable, match="more than 32 bytes under"):
        recordings.key({}, [tree])


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut short
        lambda text: "not json",
        lambda text: text.replace("printed", "PRINTED"),  # payload changed, signature kept
        lambda text: json.dumps({**json.loads(text), "signature": "0" * 64}),  # forged signature
    ],
    ids=["cut", "garbage", "tampered", "forged"],
)
def test_a_damaged_or_forged_entry_is_a_miss(tmp_path, damage):
    folder, key = kept(tmp_path)
    entry = folder / f"{key}.json"
    entry.write_text(damage(entry.read_text()))
    assert recordings.load(folder, key) is None


def test_an_entry_kept_for_another_key_or_as_a_link_is_a_miss(tmp_path):
    folder, key = kept(tmp_path)
    other = "f" * 64
    os.rename(folder / f"{key}.json", folder / f"{other}.json")
    assert recordings.load(folder, other) is None  # signed for its own key only
    (folder / f"{key}.json").symlink_to(folder / f"{other}.json")
    assert recordings.load(folder, key) is None


def test_a_cache_another_user_could_write_into_is_not_used(tmp_path):
    folder, key = kept(tmp_path)
    folder.chmod(0o777)
    assert recordings.load(folder, key) is None
    folder.chmod(0o700)
    (folder / "secret").chmod(0o644)
    assert recordings.load(folder, key) is None


@pytest.mark.allow_subprocess
def test_a_recording_is_taken_from_the_cache_and_a_corrupted_one_recorded_again(tmp_path):
    tmp_path.chmod(0o755)  # read in the sandbox as the unprivileged user nobody
    script = tmp_path / "test_one.py"
    script.write_text(
        "from miles.utils.external_utils.command_utils import execute_train\n"
        "execute_train(train_args='--train-backend fsdp --lr 1', num_gpus_per_node=8, megatron_model_type=None)\n"
    )
    cache = tmp_path / "cache"
    first = capture.record(script, {}, (), cache=cache)
    entries = sorted(cache.glob("*.json"))
    assert len(entries) == 1
    assert capture.record(script, {}, (), cache=cache).calls == first.calls
    entries[0].write_text("{}")  # corrupted: a miss, recorded again, kept again
    assert capture.record(script, {}, (), cache=cache).calls == first.calls
    assert recordings.load(cache, entries[0].stem) is not None
    script.write_text(script.read_text().replace("--lr 1", "--lr 2"))  # an edit: another key
    assert capture.record(script, {}, (), cache=cache).calls != first.calls
    assert len(list(cache.glob("*.json"))) == 2


def test_batches_keyed_at_once_hash_the_tree_once(tmp_path, monkeypatch):
    """A round recorded together keys its batches in threads at once: one hashes the checkout, the
    others find its hash (each used to hash the whole checkout for itself), and all get one key."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for number in range(200):
        (tree / f"test_{number}.py").write_text(f"print({number})\n" * 100)
    hashed: list[list[Path]] = []
    real = recordings._tree
    monkeypatch.setattr(recordings, "_tree", lambda paths, *a: hashed.append(paths) or real(paths, *a))
    start = threading.Barrier(4)

    def keyed(_: int) -> str:
        start.wait()
        return recordings.key({"argv": ["x"]}, [tree])[0]

    with concurrent.futures.ThreadPoolExecutor(4) as threads:
        keys = set(threads.map(keyed, range(4)))
    assert len(keys) == 1
    assert [paths for paths in hashed if paths == [tree]] == [[tree]]
