"""Re-fitting to a smaller node: smaller values for the literal parallelism flags, to be validated."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.port.rules import Change, group_of
from schemas import HardwareProfile


def refits(
    cell: Cell, target: HardwareProfile, flags: list[str], grow: bool = False
) -> Iterator[tuple[Change, ...]]:
    """Other values for the literal parallelism flags, fewest changes first (to be validated):
    smaller ones for a smaller node; with ``grow`` (GPUs that hold less) larger ones too."""
    per_node = target.gpus_per_node
    fixed: list[Change] = []
    if cell.spec.cluster.gpus_per_node > per_node and _literal(cell, ("cluster", "gpus_per_node")):
        fixed.append(
            Change(
                ("cluster", "gpus_per_node"), per_node, f"{target.name} has {per_node} GPUs per node", "refit"
            )
        )
    literal = [
        (flag, group, int(value))
        for flag in flags
        for group, value in [(group_of(cell, flag), cell.spec.args.flags().get(flag))]
        if isinstance(value, int) and not isinstance(value, bool) and _literal(cell, ("args", group, flag))
    ]
    limit = per_node * cell.spec.cluster.nodes
    options = [
        [
            value,
            *(d for d in range(limit if grow else min(value, limit), 0, -1) if limit % d == 0 and d != value),
        ]
        for _, _, value in literal
    ]
    originals = [value for _, _, value in literal]

    def order(values: tuple[int, ...]) -> tuple[int, float, int]:
        """Fewest changes; for GPUs that hold less, the nearest values (the least parallelism that
        fits); for a smaller node, the largest (the most of the node kept)."""
        pairs = list(zip(values, originals, strict=True))
        distance = sum(abs(math.log2(v / o)) for v, o in pairs) if grow else 0.0
        return sum(v != o for v, o in pairs), distance, -math.prod(values)

    for values in sorted(itertools.product(*options), key=order):
        changed = tuple(
            Change(
                ("args", group, flag),
                new,
                f"re-fit for {target.name}'s {target.memory_gb} GB a GPU (was {old})"
                if grow
                else f"re-fit for {per_node} GPUs per node on {target.name} (was {old})",
                "refit",
            )
            for (flag, group, old), new in zip(literal, values, strict=True)
            if new != old
        )
        yield (*fixed, *changed)


def _literal(cell: Cell, key: tuple[str, ...]) -> bool:
    """Written as a value, not derived by a ${...} reference (those follow the new node by themselves)."""
    steps = cell.composed.provenance.get(key, ())
    return bool(steps) and steps[-1].op != "resolve"
