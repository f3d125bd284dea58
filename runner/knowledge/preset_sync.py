"""preset_sync: ``run-matrix presets sync`` — a shipped preset folder written from a miles checkout.

Every type of the checkout is expanded (``presets.expand``, in the sandbox) and written as
``miles/models/<date>-<commit8>/<type>.yaml`` by import's YAML writer, which reads back what it
writes. ``description`` and ``sparse_attention`` are run-matrix's own facts about a type: they
are carried over from the newest shipped file of that type. ``--check`` writes nothing and
reports drift, and compares with the checkout's ``tests/snapshots/model_args/`` where it has them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import SpecError
from runner.knowledge import presets, versions
from runner.knowledge.checkout import CheckoutError, Tree
from runner.knowledge.preset_data import shipped
from runner.knowledge.presets import Expanded, expand
from runner.spec import documents, locate
from runner.spec.emit import dump, flag_value
from runner.spec.load import load

CARRIED = ("description", "sparse_attention")
MAX_LINE_BYTES = 1 << 20  # a snapshot line: one token list of a few hundred bytes
SCHEMA = "yaml-language-server: $schema=../../../schemas/preset.schema.json"


@dataclass(frozen=True)
class SyncPlan:
    """What ``presets sync`` would write for one checkout, and how it differs from what is there."""

    folder: Path
    texts: dict[Path, str]
    stale: list[Path]  # files of types the checkout no longer has
    changed: list[str]  # types whose file would change (added, different)
    failed: dict[str, str]  # types that did not expand, and why
    snapshots: dict[str, bool]  # type -> equal to the checkout's tests/snapshots/model_args/<type>.txt

    @property
    def in_sync(self) -> bool:
        return not (self.stale or self.changed or self.failed) and all(self.snapshots.values())


def plan(checkout: Path, *, trust: bool = False, check: bool = False) -> SyncPlan:
    """The folder ``presets sync`` writes for ``checkout``, compared with what is shipped; ``check``:
    compared with the shipped version whose presets differ least from the checkout's (no git needed)."""
    checkout = checkout.resolve()
    expanded = expand(checkout, trust=trust)
    good = {name: e for name, e in expanded.items() if not e.error}
    failed = {name: e.error for name, e in expanded.items() if e.error}
    if check:
        folder, changed, stale = _closest(checkout, good)
        texts = {folder / f"{name}.yaml": _text(e, checkout, "", "") for name, e in good.items()}
        return SyncPlan(folder, texts, stale, changed, failed, _snapshots(checkout, good))
    commit, date = presets.identity(checkout, trust=trust)
    folder = locate.PRESETS / versions.entry_name(commit, date)
    texts = {folder / f"{name}.yaml": _text(e, checkout, commit, date) for name, e in good.items()}
    existing = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    changed = [path.stem for path, text in texts.items() if not _holds(path, text)]
    stale = [p for p in existing if p not in texts]
    return SyncPlan(folder, texts, stale, changed, failed, _snapshots(checkout, good))


def _closest(checkout: Path, good: dict[str, Expanded]) -> tuple[Path, list[str], list[Path]]:
    """The shipped folder with the fewest real changes against the checkout (newest on a tie): the
    types it lacks or whose source or MODEL_ARGS differ, and its files of types the checkout lacks."""
    ours = {
        name: _content(str(e.source.relative_to(checkout)), model_args_mapping(e.tokens))
        for name, e in good.items()
    }
    best: tuple[Path, list[str], list[Path]] | None = None
    for version in reversed(shipped()):
        theirs = {p.stem: p for p in sorted(version.path.glob("*.yaml"))}
        changed = [name for name, content in ours.items() if _shipped_content(theirs.get(name)) != content]
        stale = [path for name, path in theirs.items() if name not in ours]
        if best is None or len(changed) + len(stale) < len(best[1]) + len(best[2]):
            best = (version.path, changed, stale)
    return best if best is not None else (locate.PRESETS, list(ours), [])


def _content(source: str, model_args: dict[str, Any]) -> tuple[str, list[str]]:
    """What miles launches (a YAML ``36`` and MODEL_ARGS' ``"36"`` are one token), and from where."""
    from schemas.values import flag_tokens

    return source, [token for flag, value in model_args.items() for token in flag_tokens(flag, value)]


def _shipped_content(path: Path | None) -> tuple[str, list[str]] | None:
    if path is None:
        return None
    data = load(path).data
    model_args = data.get("model_args")
    return _content(str(data.get("source", "")), model_args if isinstance(model_args, dict) else {})


def _holds(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text(encoding="utf-8") == text


def write(planned: SyncPlan) -> None:
    from runner.atomic import write_generated

    write_generated(planned.texts, force=True)
    for path in planned.stale:
        path.unlink()


def _text(expanded: Expanded, checkout: Path, commit: str, date: str) -> str:
    data: dict[str, Any] = {"type": expanded.type, "miles_commit": commit}
    data["source"] = str(expanded.source.relative_to(checkout))
    data |= _carried(expanded.type)
    data["model_args"] = model_args_mapping(expanded.tokens)
    header = [
        SCHEMA,
        f"MODEL_ARGS of miles' {data['source']} at {commit[:8]} ({date}), in miles' order: written by",
        "`run-matrix presets sync`; description and sparse_attention are run-matrix's and survive a sync.",
    ]
    return dump(data, header=header)


def model_args_mapping(tokens: tuple[str, ...]) -> dict[str, Any]:
    """``--flag v1 v2 --switch`` as ``{flag: [v1, v2], switch: true}``, in order."""
    flags: dict[str, list[str]] = {}
    current: list[str] | None = None
    for token in tokens:
        if token.startswith("--"):
            if token[2:] in flags:
                raise SpecError.one("model-args", f"MODEL_ARGS set {token} twice: a mapping cannot hold it")
            current = flags[token[2:]] = []
        elif current is None:
            raise SpecError.one("model-args", f"MODEL_ARGS start with {token!r}, which follows no flag")
        else:
            current.append(token)
    return {name: flag_value(values) for name, values in flags.items()}


def _carried(model_type: str) -> dict[str, Any]:
    """run-matrix's own facts about ``model_type``: each from the newest shipped file that has it."""
    found: dict[str, Any] = {}
    for version in reversed(shipped()):
        path = version.path / f"{model_type}.yaml"
        if path.is_file():
            data = load(path).data
            found |= {key: data[key] for key in CARRIED if data.get(key) and key not in found}
    return {key: found[key] for key in CARRIED if key in found}


def _snapshots(checkout: Path, good: dict[str, Expanded]) -> dict[str, bool]:
    """Each type with a ``tests/snapshots/model_args/<type>.txt`` (miles' oracle): equal to it or not."""
    tree = Tree.at(checkout)
    found: dict[str, bool] = {}
    for name, e in good.items():
        snapshot = f"tests/snapshots/model_args/{name}.txt"
        if tree.is_file(snapshot):
            try:
                lines = tree.read_text(snapshot).splitlines()
                read = tuple(documents.json_data(line, MAX_LINE_BYTES) for line in lines if line.strip())
                found[name] = read == e.tokens
            except (CheckoutError, ValueError):
                found[name] = False
    return found
