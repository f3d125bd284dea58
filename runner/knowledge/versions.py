"""versions: which pinned miles version a piece of shipped knowledge describes.

Shipped knowledge is kept per miles version, each in an entry named ``<date>-<commit8>`` (the
commit's date, so names sort oldest first): ``miles/models/2026-08-21-31f1ca96/``. A spec names
the version it targets by a commit prefix (``miles_version: dc8b499b``); none means the newest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})-([0-9a-f]{7,40})$")


@dataclass(frozen=True, order=True)
class Version:
    """One shipped entry of a miles version's data (``<date>-<commit>``), ordered by its date."""

    date: str
    commit: str  # the prefix the entry is named by
    path: Path

    @property
    def name(self) -> str:
        return f"{self.date}-{self.commit}"

    def matches(self, version: str) -> bool:
        """Whether ``version`` (a commit prefix, or a full commit) names this entry."""
        version = version.lower()
        return self.commit.startswith(version) or version.startswith(self.commit)


def entry_name(commit: str, date: str) -> str:
    """The name of the entry for ``commit`` of ``date`` (YYYY-MM-DD)."""
    return f"{date}-{commit[:8]}"


def shipped(entries: Iterable[Path]) -> list[Version]:
    """The entries named ``<date>-<commit>``, oldest first; others are not versions."""
    found = []
    for path in entries:
        match = NAME.match(path.name.removesuffix(path.suffix) if path.is_file() else path.name)
        if match:
            found.append(Version(match[1], match[2], path))
    return sorted(found)


def matching(version: str, found: Iterable[Version]) -> list[Version]:
    return [v for v in found if v.matches(version)]
