"""diff of the rendered launches: train script, flags and env vars a spec row does not show already."""

from __future__ import annotations

from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.diff.difference import Difference
from runner.diff.spec import merged_order, reason, source
from runner.launch.render import Launch, render
from runner.spec.load import Key, dotted

_LAUNCH_FACTS = (("train_script", ("launch", "script")), ("num_gpus_per_node", ("cluster", "gpus_per_node")))


def launch_differences(a: Cell, b: Cell, shown: set[str]) -> Iterator[Difference]:
    """What the rendered launches differ in, less what a spec row in ``shown`` already says."""
    la, lb = render(a), render(b)
    for name, key in (
        ("train_script", ("launch", "script")),
        ("num_gpus_per_node", ("cluster", "gpus_per_node")),
    ):
        if getattr(la, name) != getattr(lb, name) and dotted(key) not in shown:
            yield Difference(name, getattr(la, name), getattr(lb, name), None, None, reason(a, b, key, False))
    fa, fb = la.flags(), lb.flags()
    for (name,) in merged_order([(f,) for f in fa], [(f,) for f in fb]):
        key_a, key_b = flag_key(a, name), flag_key(b, name)
        if fa.get(name) != fb.get(name) and not {dotted(k) for k in (key_a, key_b) if k} & shown:
            source_a = source(a, key_a) if key_a else None
            source_b = source(b, key_b) if key_b else None
            why = reason(a, b, key_b or key_a, name not in fb)
            yield Difference(f"--{name}", _shown(fa.get(name)), _shown(fb.get(name)), source_a, source_b, why)
    for (name,) in merged_order([(k,) for k in la.env], [(k,) for k in lb.env]):
        key = ("env", name)
        if la.env.get(name) != lb.env.get(name) and dotted(key) not in shown:
            yield Difference(
                f"env {name}",
                la.env.get(name),
                lb.env.get(name),
                source(a, key),
                source(b, key),
                reason(a, b, key, name not in lb.env) or _probed_on_one_side(la, lb, name),
            )


def _probed_on_one_side(la: Launch, lb: Launch, name: str) -> str:
    """Why a value is probed on one side's node and a constant on the other: the platform decides."""
    if (name in la.probes) == (name in lb.probes):
        return ""
    return "the launch conventions probe it where the probe's tool is (NVIDIA) and set it on ROCm (on_rocm)"


def flag_key(cell: Cell, name: str) -> Key | None:
    for group, flags in cell.spec.args.groups():
        if name in flags:
            return ("args", group, name)
    return None


def _shown(values: tuple[str, ...] | None) -> str | None:
    if values is None:
        return None
    return " ".join(values) if values else "(switch)"
