"""preset_sync: ``run-matrix presets sync`` — a shipped preset folder written from a miles checkout.

Every type of the checkout is expanded (``presets.expand``, in the sandbox) and written as
``miles/models/<date>-<commit8>/<type>.yaml`` by import's YAML writer, which reads back what it
writes. ``description`` and ``sparse_attention`` are run-matrix's own facts about a type: they
are carried over from the newest shipped file of that type. ``--check`` writes nothing and
reports drift, and compares with the checkout's ``tests/snapshots/model_args/`` where it has them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import locate
from runner.errors import SpecError
from runner.importer.emit import dump, flag_value
from runner.knowledge import versions
from runner.knowledge.checkout import CheckoutError, Tree
from runner.knowledge.preset_data import shipped
from runner.knowledge.presets import Expanded, expand, identity
from runner.load import load

CARRIED = ("description", "sparse_attention")
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


def plan(checkout: Path, *, trust: bool = False) -> SyncPlan:
    """The folder ``presets sync`` writes for ``checkout``, compared with what is shipped."""
    commit, date = identity(checkout, trust=trust)
    folder = locate.PRESETS / versions.entry_name(commit, date)
    expanded = expand(checkout, trust=trust)
    good = {name: e for name, e in expanded.items() if not e.error}
    texts = {folder / f"{name}.yaml": _text(e, checkout.resolve(), commit, date) for name, e in good.items()}
    existing = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    changed = [
        path.stem
        for path, text in texts.items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]
    return SyncPlan(
        folder,
        texts,
        [p for p in existing if p not in texts],
        changed,
        {name: e.error for name, e in expanded.items() if e.error},
        _snapshots(checkout, good),
    )


def _holds(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text(encoding="utf-8") == text


def write(planned: SyncPlan) -> None:
    from runner.importer.write import write_all

    write_all(planned.texts, force=True)
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
                found[name] = tuple(json.loads(line) for line in lines if line.strip()) == e.tokens
            except (CheckoutError, ValueError):
                found[name] = False
    return found
