"""ci_platforms: what each platform's CI of miles sets for a test, and which hardware runs each suite.

Shipped per miles version as ``miles/ci/<date>-<commit8>.yaml`` (written by ``run-matrix ci sync``
from a checkout, :mod:`runner.knowledge.ci_sources` reads it), or read live from ``--miles-root``,
where the user's checkout decides. Import records a test once per platform it registers for, with
that platform's environment (:meth:`CIKnowledge.environment`): miles' ROCm CI sets
``MILES_HARDWARE_PLATFORM=rocm``, which some tests read to pick an AMD launcher.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from runner.errors import Location, Problem, SpecError
from runner.knowledge import ci_sources, versions
from runner.knowledge.checkout import CheckoutError, TooLarge, Tree
from runner.knowledge.ci_images import Setting, at
from runner.knowledge.ci_sources import Suite, Unread
from runner.memos import Table
from runner.spec import emit, locate

FOLDER = locate.PROJECT / "miles" / "ci"
OWN_PREFIX = "RUN_MATRIX_"  # variables run-matrix sets for the recording itself
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MAX_FILE_BYTES = 1 << 20  # a workflow is a few kB; a checkout's file past this is not read
MAX_WORKFLOWS = 200
# what the sandbox sets itself, and what no recording may be given (the caller's paths, secrets)
NOT_GIVEN = frozenset({"PATH", "HOME", "PYTHONPATH", "PYTHONHOME", "LD_PRELOAD", "LD_LIBRARY_PATH"})


@dataclass(frozen=True)
class CIKnowledge:
    source: str  # the shipped file, or the checkout it was read from
    platforms: dict[str, dict[str, Setting]] = field(default_factory=dict)  # platform -> its env
    suites: dict[str, Suite] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()

    def environment(self, platform: str, secrets: frozenset[str] = frozenset()) -> dict[str, Setting]:
        """What the platform's CI sets for the test process that a recording may be given: known
        values only, none the sandbox decides, no secret."""
        return {
            name: setting
            for name, setting in self.platforms.get(platform, {}).items()
            if setting.value is not None
            and name not in NOT_GIVEN
            and name not in secrets
            and not name.startswith(OWN_PREFIX)  # the sandbox's own channels (its out folder, its calls)
            and ENV_NAME.fullmatch(name)  # a process environment takes nothing else
            and "\0" not in setting.value
        }

    def suite(self, name: str) -> Suite | None:
        return self.suites.get(name)


def from_sources(found: ci_sources.CISources, source: str) -> CIKnowledge:
    return CIKnowledge(
        source,
        {name: dict(p.env) for name, p in found.platforms.items()},
        dict(found.suites),
        tuple(found.problems),
    )


# per checkout: its workflows listed, the text of each file read, and what they said (_read)
_KNOWN: Table[Path, tuple[tuple[str, ...], dict[str, str | Unread | None], ci_sources.CISources]] = Table(
    "runner.knowledge.ci_platforms._KNOWN",
    "stamped",
    "a checkout's CI files as read, used only while its workflows and every text read are the same"
    " (compared on every call)",
    64,
)


def of_checkout(root: Path) -> CIKnowledge:
    """Read live from a checkout, through the door: its workflows, images and ``run_suite.py``."""
    return from_sources(_read(Tree.at(root)), str(root))


def _read(tree: Tree) -> ci_sources.CISources:
    """What the checkout's CI files say; read again only when one of the files it read differs (an
    import reads them once per test: a suite import, hundreds of times)."""
    try:
        listed = tuple(str(path) for path in tree.files(".github/workflows", limit=MAX_WORKFLOWS))
    except CheckoutError:
        listed = ()
    left = _left_out(tree)
    key = (*listed, *(p.message for p in left))  # a FIFO put in its place changes the folder too
    known = _KNOWN.get(tree.root)
    if known is not None and known[0] == key and all(read_text(tree, r) == t for r, t in known[1].items()):
        return known[2]
    texts: dict[str, str | Unread | None] = {}

    def read(relative: str) -> str | Unread | None:
        texts[relative] = read_text(tree, relative)
        return texts[relative]

    found = ci_sources.read(list(listed), read)
    found.problems[:0] = left
    _KNOWN.put(tree.root, (key, texts, found))
    return found


def read_text(tree: Tree, relative: str) -> str | Unread | None:
    """A checkout file's text; None where it is missing or leads out of the tree; why not where it is
    there but was not read (over the budget of a CI file)."""
    if not tree.is_file(relative):
        return None
    try:
        return tree.read_text(relative, MAX_FILE_BYTES)
    except TooLarge:
        return Unread(f"over the budget of {MAX_FILE_BYTES} bytes for a CI file: not read")
    except CheckoutError:
        return None  # gone, or no longer a regular file, since it was listed


def _left_out(tree: Tree) -> list[Problem]:
    """A workflow the listing leaves out (a link out of the tree, a FIFO): said, never skipped silently."""
    try:
        left = tree.left_out(".github/workflows", limit=MAX_WORKFLOWS)
    except CheckoutError:
        return []
    return [
        Problem("ci-sources", f"{path}: {why}: skipped", locations=at(str(path)))
        for path, why in left
        if path.name.endswith((".yml", ".yaml"))
    ]


def shipped() -> list[versions.Version]:
    return versions.shipped(FOLDER.glob("*.yaml")) if FOLDER.is_dir() else []


def for_version(version: str | None) -> CIKnowledge:
    """The shipped knowledge of miles ``version`` (None, or one no file names: the newest)."""
    found = shipped()
    if not found:
        return CIKnowledge("(none shipped)")
    named = versions.matching(version, found) if version else []
    return load(named[0].path if len(named) == 1 else found[-1].path)


def load(path: Path) -> CIKnowledge:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        platforms = {
            name: {
                **{k: Setting(str(v["value"]), str(v["source"])) for k, v in (p.get("env") or {}).items()},
                **{
                    k: Setting(None, str(v["source"]), str(v["why"]))
                    for k, v in (p.get("unknown") or {}).items()
                },
            }
            for name, p in (data.get("platforms") or {}).items()
        }
        suites = {name: _suite(s) for name, s in (data.get("suites") or {}).items()}
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError, ValueError) as error:
        raise SpecError.one(
            "ci-knowledge",
            f"{path.name} is not CI knowledge run-matrix wrote: {error!r}",
            at=[Location(path)],
        ) from None
    return CIKnowledge(str(path), platforms, suites)


def _suite(data: dict[str, Any]) -> Suite:
    return Suite(
        str(data["platform"]),
        data.get("hardware"),
        int(data["gpus"]) if data.get("gpus") is not None else None,
        str(data["source"]),
        tuple(data.get("runs_on") or ()),
        str(data.get("note") or ""),
    )


def text(found: ci_sources.CISources, commit: str, date: str) -> str:
    """The shipped file: plain YAML (a value such as ``${MILES_ROOT}`` is a fact about miles' CI, not a
    spec's reference to resolve)."""
    header = [
        f"miles' CI per platform at {commit[:8]} ({date}): what each platform's CI sets for a test's process",
        "(its reusable workflow's env: and its image's ENV) and where each suite runs. Written by",
        "`run-matrix ci sync` from the checkout's .github/workflows/, docker/ and tests/ci/run_suite.py.",
    ]
    return emit.plain({"miles_commit": commit, **ci_sources.as_data(found)}, header)


@dataclass(frozen=True)
class SyncPlan:
    """What ``ci sync`` would write for one checkout, and whether it differs from what is shipped."""

    path: Path
    text: str
    problems: tuple[Problem, ...]

    @property
    def changed(self) -> bool:
        return not self.path.is_file() or self.path.read_text(encoding="utf-8") != self.text


def plan(checkout: Path, folder: Path = FOLDER, *, trust: bool = False) -> SyncPlan:
    """What ``ci sync`` writes for ``checkout``: ``<folder>/<date>-<commit8>.yaml``."""
    from runner.knowledge.presets import identity

    commit, date = identity(checkout, trust=trust)
    found = _read(Tree.at(checkout))
    path = folder / f"{versions.entry_name(commit, date)}.yaml"
    return SyncPlan(path, text(found, commit, date), tuple(found.problems))
