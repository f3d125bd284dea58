"""presets: a model type's MODEL_ARGS as a miles checkout defines them, expanded in the sandbox.

Two forms, both run (never parsed), since that is the only way to get what miles launches:

* ``scripts/models/<type>.py`` (miles main): ``model_args()``, loaded through the checkout's own
  ``model_args_utils.load_model_args`` (``model_args_driver.py``), as ``execute_train`` does;
* ``scripts/models/<type>.sh`` (the PR #1124 era): bash sources the file and the ``MODEL_ARGS``
  array is read back — files that source a sibling and patch it, or call ``dirname``, expand
  exactly as they do for miles.

A type with both forms is the ``.py`` one (miles main loads only those). One sandbox run expands
every type of a form; the result is cached on disk under the content hash of every file the
expansion can read, so a second look costs a file read.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from runner.errors import RunMatrixError
from runner.knowledge import cache
from runner.knowledge import checkout as door
from runner.memos import Table, asked, resolved
from runner.spec import documents
from runner.spec.paths import NAME

MODELS = Path("scripts/models")
UTILS = Path("miles/utils/external_utils/model_args_utils.py")
DRIVER = Path(__file__).with_name("model_args_driver.py")
CACHE_VERSION = "1"
# bash, in the checkout's scripts/models: each file's MODEL_ARGS as length-prefixed fields
# (LC_ALL=C, so lengths are bytes) in one results file; a file that fails, or sets no MODEL_ARGS
# (97), leaves its negated exit status and the last line it printed to stderr instead
EXPAND_SH = r"""
out="$RUN_MATRIX_OUT/presets.txt"
field() { printf '%d:%s,' "${#1}" "$1" >> "$out"; }
for file in "$@"; do
  ( MODEL_ARGS=()
    source "$PWD/$file" >/dev/null 2>/tmp/stderr || exit $?
    ((${#MODEL_ARGS[@]})) || exit 97
    field "$file"; field "${#MODEL_ARGS[@]}"; for token in "${MODEL_ARGS[@]}"; do field "$token"; done )
  status=$?
  if ((status)); then field "$file"; field "-$status"; field "$(tail -n 1 /tmp/stderr)"; fi
done
"""


@dataclass(frozen=True)
class Expanded:
    """One type's MODEL_ARGS from a checkout, or why it could not be expanded."""

    type: str
    source: Path  # the preset file
    tokens: tuple[str, ...] = ()
    error: str = ""


class PresetError(RunMatrixError):
    """A checkout's presets could not be expanded at all (not one type's failure)."""


def types(checkout: Path) -> dict[str, Path]:
    """Every model type of the checkout and its preset file (``.py`` over ``.sh``)."""
    tree = door.Tree.at(checkout)
    found = {p.stem: tree.root / p for p in tree.files(MODELS.as_posix(), "*.sh")}
    found |= {
        p.stem: tree.root / p for p in tree.files(MODELS.as_posix(), "*.py") if not p.stem.startswith("_")
    }
    return found


def expand(checkout: Path, *, trust: bool = False) -> dict[str, Expanded]:
    """MODEL_ARGS of every type of ``checkout``: expanded once per process while no file the expansion
    may read changes (an import asks it of every case it round-trips), and looked at once inside a
    read of the tree (:func:`runner.memos.memo`: an import's check of one test's cells)."""
    checkout = resolved(checkout)
    return dict(asked("expanded presets", (checkout, trust), lambda: _expanded_stamped(checkout, trust)))


def _expanded_stamped(checkout: Path, trust: bool) -> dict[str, Expanded]:
    tree = door.Tree.at(checkout)
    readable = _readable(tree)
    stamp = (checkout, trust, tuple((str(relative), tree.stamp(relative)) for relative in readable))
    found = _EXPANDED.get(stamp)
    if found is None:
        found = _EXPANDED.put(stamp, _expanded_all(checkout, readable, trust))
    return found


def _expanded_all(checkout: Path, readable: list[str | PurePosixPath], trust: bool) -> dict[str, Expanded]:
    presets = types(checkout)
    expanded = {  # a file name that is no type's name is never run, written nor used as a name
        repr(name): Expanded(repr(name), path, error=f"{name!r} is not a model type's name: skipped")
        for name, path in presets.items()
        if not NAME.fullmatch(name)
    }
    presets = {name: path for name, path in presets.items() if NAME.fullmatch(name)}
    for suffix, run in ((".sh", _run_sh), (".py", _run_py)):
        names = sorted(name for name, path in presets.items() if path.suffix == suffix)
        if names:
            found = cache.cached(
                cache.folder("presets") / f"{_content_hash(checkout, readable, suffix, names)}.json",
                functools.partial(run, checkout, names, trust),
            )
            expanded |= {name: _expanded(name, presets[name], found.get(name)) for name in names}
    return expanded


MAX_EXPANDED = 16  # checkouts (and trust) a process expands: one, or a few in the tests
_EXPANDED: Table[tuple[Path, bool, tuple[tuple[str, int], ...]], dict[str, Expanded]] = Table(
    "runner.knowledge.presets._EXPANDED",
    "stamped",
    "a checkout's expanded presets, by the modification time of every file the expansion may read"
    " (the door's stamp: an edited, added or removed file is a new key)",
    MAX_EXPANDED,
)


def _readable(tree: door.Tree) -> list[str | PurePosixPath]:
    """Every file the expansion may read: the presets folder (siblings are sourced or loaded) and the
    checkout's loader."""
    return [*tree.files(MODELS.as_posix(), recursive=True), UTILS.as_posix()]


def identity(checkout: Path, *, trust: bool = False) -> tuple[str, str]:
    """The checkout's commit and its date (YYYY-MM-DD), asked of the door (``trust`` is unused: no
    code of the checkout runs for it)."""
    found = door.identity(checkout)
    if found is None:
        raise PresetError(
            f"{checkout} is not a git checkout that git can read: presets are named by its commit and date"
        )
    return found


def _expanded(name: str, source: Path, found: Any) -> Expanded:
    if isinstance(found, dict) and isinstance(found.get("tokens"), list) and found["tokens"]:
        return Expanded(name, source, tuple(str(token) for token in found["tokens"]))
    error = found.get("error") if isinstance(found, dict) else None
    return Expanded(name, source, error=str(error or "expanded to no MODEL_ARGS"))


def _run_sh(checkout: Path, names: list[str], trust: bool) -> dict[str, Any]:
    from runner import sandbox  # only when a checkout's preset is expanded: validate rarely needs it

    done = sandbox.run(
        ["bash", "-c", EXPAND_SH, "expand", *(f"{name}.sh" for name in names)],
        reads=[checkout],
        cwd=checkout / MODELS,
        env={"LC_ALL": "C"},
        trust=trust,
    )
    data = done.files.get("presets.txt")
    if data is None:
        raise PresetError(f"bash could not expand {checkout / MODELS}/*.sh:\n{done.output[-2000:]}")
    try:
        return _parse_fields(data)
    except (ValueError, StopIteration):
        raise PresetError(f"bash left unreadable MODEL_ARGS for {checkout / MODELS}/*.sh") from None


def _parse_fields(data: bytes) -> dict[str, Any]:
    """``{type: {"tokens": [...]} | {"error": ...}}`` from EXPAND_SH's length-prefixed fields."""
    fields = iter(_netstrings(data))
    found: dict[str, Any] = {}
    for file in fields:
        count = int(next(fields))
        name = file.removesuffix(".sh")
        if count < 0:
            reason = "sets no MODEL_ARGS" if count == -97 else f"fails with status {-count}"
            said = next(fields)
            found[name] = {"error": f"{reason} when bash sources it" + (f": {said}" if said else "")}
        else:
            found[name] = {"tokens": [next(fields) for _ in range(count)]}
    return found


def _netstrings(data: bytes) -> Iterable[str]:
    at = 0
    while at < len(data):
        colon = data.index(b":", at)
        length = int(data[at:colon])
        if data[colon + 1 + length : colon + 2 + length] != b",":
            raise ValueError("a field is cut short")
        yield data[colon + 1 : colon + 1 + length].decode("utf-8", "replace")
        at = colon + 2 + length


def _run_py(checkout: Path, names: list[str], trust: bool) -> dict[str, Any]:
    if not door.Tree.at(checkout).is_file(UTILS.as_posix()):
        raise PresetError(f"{checkout} has scripts/models/*.py but no {UTILS}, which loads them")
    from runner import sandbox

    done = sandbox.run(
        [sandbox.PYTHON, "-I", "-B", str(DRIVER), str(checkout), *names],
        reads=[checkout],
        cwd=checkout,
        trust=trust,
    )
    try:
        found = documents.json_data(done.files["presets.json"], sandbox.Limits().results)
    except (KeyError, ValueError):
        raise PresetError(f"the checkout's model_args_utils failed:\n{done.output[-2000:]}") from None
    return found if isinstance(found, dict) else {}


def _content_hash(checkout: Path, readable: list[str | PurePosixPath], suffix: str, names: list[str]) -> str:
    """The names and contents of every file the expansion may read, and run-matrix's own side of it."""
    digest = hashlib.sha256(f"{CACHE_VERSION}\0{suffix}\0{' '.join(names)}\0".encode())
    tree = door.Tree.at(checkout)
    digest.update(f"{tree.root}\0{tree.digest(readable)}\0".encode())
    digest.update(hashlib.sha256(DRIVER.read_bytes()).digest())  # run-matrix's own file
    digest.update(EXPAND_SH.encode())
    return digest.hexdigest()
