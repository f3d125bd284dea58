"""replay: a command's verdict kept on disk, printed again while nothing it read has changed.

Like ruff's, mypy's and pre-commit's caches: an entry is found by a key of the command's own
inputs — its arguments, the current folder, today's date (``expires:`` compares with it), the
whole environment (GPU masks, ``MILES_ROOT``: only its hash is kept, never a value) and the
interpreter — and holds the records of everything the run read (``runner.validate.inputs``: every file's
bytes, folder's names, path's kind, module's stamp). It is replayed only when every record still
holds. An entry that cannot be read, is not a regular file (a link, a FIFO: never opened), is not
what this code writes, or does not hold is ignored: the command then runs as if there were no
cache. Entries are written whole (``runner.atomic``); pruning removes only files named as entries.

``$RUN_MATRIX_CACHE_DIR/<command>/`` (else ``$XDG_CACHE_HOME/run-matrix/...``, else
``~/.cache/run-matrix/...``); ``RUN_MATRIX_NO_CACHE=1`` or a command's ``--no-cache`` turn it off.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from runner.atomic import write_text
from runner.errors import EnvironmentProblem
from runner.knowledge.cache import folder
from runner.spec import documents
from runner.validate import inputs

FORMAT = 1  # what an entry holds; a new layout is a new number, and old entries are ignored
MAX_ENTRY_BYTES = 64 << 20  # an entry is a few hundred kB; a larger file is not ours
KEPT = 64  # entries per command: the oldest go when a new one is written
ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.json")  # a key (SHA-256, hex) and .json: what _prune may remove
# What a shell sets per command line and nothing of run-matrix reads: `$_` is the program's path as
# typed (`run-matrix` or `/usr/bin/time`), OLDPWD the folder before the last cd (the cwd is keyed).
SHELL_BOOKKEEPING = frozenset({"_", "OLDPWD"})


def key(command: str, arguments: dict[str, Any]) -> str:
    """The hash of everything besides the files that decides ``command``'s verdict ("" when the
    current folder is gone: nothing is kept or replayed then)."""
    try:
        cwd = os.getcwd()
    except OSError:
        return ""
    material = {
        "format": FORMAT,
        "command": command,
        "arguments": arguments,
        "cwd": cwd,
        "today": datetime.date.today().isoformat(),
        "environment": sorted((k, v) for k, v in os.environ.items() if k not in SHELL_BOOKKEEPING),
        "python": [sys.executable, sys.version],
    }
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def load(command: str, found_by: str) -> dict[str, Any] | None:
    """The verdict kept under ``found_by`` when every input it was reached from is unchanged."""
    if not found_by:
        return None
    try:
        raw = _read_entry(_entry(command, found_by))
        entry = documents.json_data(raw, MAX_ENTRY_BYTES) if raw is not None else None
        records = _records(entry, found_by)
    except (OSError, ValueError, RuntimeError):  # ValueError: documents.Unreadable; RuntimeError: no home
        return None
    if records is None or not isinstance(entry, dict) or not isinstance(entry.get("verdict"), dict):
        return None
    return entry["verdict"] if inputs.unchanged(records) else None


def store(
    command: str,
    arguments: dict[str, Any],
    found_by: str,
    records: list[inputs.Record] | None,
    verdict: dict[str, Any],
) -> None:
    """Keep ``verdict`` under ``found_by`` when its inputs were recorded and the date, folder and
    environment are still those of the key (not so across midnight); a failure costs time only."""
    if records is None or not found_by or key(command, arguments) != found_by:
        return
    entry = {"format": FORMAT, "key": found_by, "inputs": records, "verdict": verdict}
    # RuntimeError: no home folder; TypeError/ValueError: a verdict JSON cannot hold (then not kept);
    # EnvironmentProblem: a link planted where the entry goes (then not kept either)
    with contextlib.suppress(OSError, RuntimeError, TypeError, ValueError, EnvironmentProblem):
        path = _entry(command, found_by)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(entry))
        _prune(path.parent)


def _entry(command: str, found_by: str) -> Path:
    return folder(command) / f"{found_by}.json"


def _read_entry(path: Path) -> bytes | None:
    """The bytes of the entry at ``path`` when it is a regular file of at most MAX_ENTRY_BYTES (what
    ``store`` writes); None for a link (to /dev/zero, a huge file, a folder), a FIFO or a device,
    never opened or read (a FIFO would block): looked at without following, then opened without
    following links nor waiting for a writer, and looked at again on the descriptor."""
    if not _small_file(os.lstat(path)):
        return None
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as stream:
        opened = os.fstat(fd)
        if not _small_file(opened):
            return None
        raw = stream.read(opened.st_size + 1)
    return raw if len(raw) == opened.st_size else None  # else it changed while read: not ours


def _small_file(found: os.stat_result) -> bool:
    return stat.S_ISREG(found.st_mode) and found.st_size <= MAX_ENTRY_BYTES


def _records(entry: Any, found_by: str) -> list[inputs.Record] | None:
    """The entry's input records, when it is an entry this code writes under this key."""
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != found_by:
        return None
    found = entry.get("inputs")
    if not isinstance(found, list):
        return None
    records: list[inputs.Record] = []
    for record in found:
        if not (isinstance(record, list) and len(record) == 3 and all(isinstance(r, str) for r in record)):
            return None
        records.append((record[0], record[1], record[2]))
    return records


def _prune(where: Path) -> None:
    """Remove all but the newest KEPT entries: regular files named as ``_entry`` names them, never
    another file someone keeps in the folder (nor a link, nor a folder)."""
    entries: list[tuple[int, Path]] = []
    with os.scandir(where) as found:
        for each in found:
            if ENTRY_NAME.fullmatch(each.name) and each.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):  # gone meanwhile (another run pruned it)
                    entries.append((each.stat(follow_symlinks=False).st_mtime_ns, Path(each.path)))
    entries.sort(reverse=True)
    for _, old in entries[KEPT:]:
        old.unlink(missing_ok=True)
