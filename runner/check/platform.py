"""P*: what the hardware profile says the platform supports. No vendor names in here:
a new profile changes these verdicts without a code change. Facts that depend on the software
(P3's attention backends, P4's custom all-reduce) are those of the stack the cell targets."""

from __future__ import annotations

from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import problem, rule
from runner.check.choices import on_stack, one_of
from runner.errors import Problem

VISIBLE_DEVICES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


@rule("P1")
def deepep_available(cell: Cell, _: Layout) -> Iterator[Problem]:
    """DeepEP (Megatron's --moe-enable-deepep, SGLang's deepep all-to-all) needs a platform that has it:
    NVIDIA InfiniBand with GPUDirect RDMA.

    Source: the hardware profile's supports.deepep (matrices/hardware/)
    """
    supports, name = cell.profile.supports, cell.profile.name
    if supports.deepep:
        return
    if cell.flag("moe-enable-deepep"):
        yield problem(
            "P1",
            cell,
            ("moe-enable-deepep",),
            f"{name} has no DeepEP (it needs NVIDIA InfiniBand + GPUDirect RDMA)",
            "delete moe-enable-deepep and use moe-token-dispatcher-type: alltoall",
        )
    if cell.flag("sglang-moe-a2a-backend") == "deepep":
        yield problem(
            "P1",
            cell,
            ("sglang-moe-a2a-backend",),
            f"{name} has no DeepEP for SGLang's all-to-all",
            "delete sglang-moe-a2a-backend",
        )


one_of("P2")
one_of("P3")


@rule("P4")
def custom_all_reduce_off_where_unsupported(cell: Cell, _: Layout) -> Iterator[Problem]:
    """Where the stack's SGLang has no working custom all-reduce, the engines need
    --sglang-disable-custom-all-reduce (the ROCm GLM-5 test: "required on AMD").

    Source: the hardware profile's supports.custom_all_reduce of the cell's stack (matrices/hardware/)
    """
    if not cell.profile.supports.custom_all_reduce and not cell.flag("sglang-disable-custom-all-reduce"):
        yield problem(
            "P4",
            cell,
            ("sglang-disable-custom-all-reduce",),
            f"SGLang's custom all-reduce must be disabled on {on_stack(cell)}",
            "add sglang-disable-custom-all-reduce: true to args.sglang",
        )


one_of("P5")
one_of("P6")


@rule("P7")
def visible_devices_of_this_vendor(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A visible-devices variable other than the profile's selects no GPUs: it has no effect.

    Source: the hardware profile's visible_devices_env (matrices/hardware/)
    """
    ours = cell.profile.visible_devices_env
    for name in VISIBLE_DEVICES:
        if name != ours and name in cell.spec.env:
            yield Problem(
                "P7",
                f"{name} has no effect on {cell.profile.name}; its GPUs are selected by {ours}",
                f"env.{name}",
                (cell.location("env", name),),
                "warning",
                f"rename it to {ours}",
            )
