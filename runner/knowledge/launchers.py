"""launchers: the miles launchers a spec may name (``miles/launchers.yaml``), read once a process.

The file is the one description of a launcher (``schemas/launchers.py`` is its shape): the spec's
model refuses a ``launch.script`` it does not list, the cell carries it (``Cell.launcher``) for render
and the L rules, the import recognizes a test's ``train_script`` by it, diff names its mode.
"""

from __future__ import annotations

from pathlib import Path

from runner.memos import remember
from runner.spec import locate
from runner.spec.compose import compose
from runner.spec.model import build
from schemas.launchers import Launchers

LAUNCHERS = locate.PROJECT / "miles" / "launchers.yaml"


def shipped() -> Launchers:
    """The launchers run-matrix ships (``LAUNCHERS`` looked up now: a test points it at a copy)."""
    return read(LAUNCHERS)


@remember("shipped", "miles/launchers.yaml, modelled: every cell of every spec asks, and it does not change")
def read(path: Path) -> Launchers:
    """The launchers of ``path``; a malformed file is a SpecError at its line, as a spec's would be."""
    composed = compose(path)
    return build(Launchers, composed.data, composed)
