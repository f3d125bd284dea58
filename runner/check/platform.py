"""P*: what the hardware profile says the platform supports. No vendor names in here:
a new profile changes these verdicts without a code change. Facts that depend on the software
(P3's attention backends, P4's custom all-reduce) are those of the stack the cell targets."""

from __future__ import annotations

from collections.abc import Iterator

from runner.cell import Cell
from runner.check import problem, rule
from runner.check.sglang import NSA_FLAGS
from runner.errors import Problem
from runner.layout import Layout

VISIBLE_DEVICES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


@rule("P1")
def deepep_available(cell: Cell, _: Layout) -> Iterator[Problem]:
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


@rule("P2")
def nsa_kernels_available(cell: Cell, _: Layout) -> Iterator[Problem]:
    supported = cell.profile.supports.nsa_backends
    for name in NSA_FLAGS:
        value = cell.flag(name)
        if value is not None and value not in supported:
            yield problem(
                "P2",
                cell,
                (name,),
                f"{cell.profile.name} has no {value} NSA kernels"
                f" ({cell.profile.platform} supports {', '.join(supported)})",
                f"use {supported[0]}",
            )


@rule("P3")
def megatron_attention_available(cell: Cell, _: Layout) -> Iterator[Problem]:
    supported, value = cell.profile.supports.megatron_attention_backends, cell.flag("attention-backend")
    if value is not None and value not in supported:
        yield problem(
            "P3",
            cell,
            ("attention-backend",),
            f"--attention-backend {value} is not available on {_on_stack(cell)}"
            f" (Transformer Engine there supports {', '.join(supported)})",
            f"use {supported[0]}",
        )


@rule("P4")
def custom_all_reduce_off_where_unsupported(cell: Cell, _: Layout) -> Iterator[Problem]:
    if not cell.profile.supports.custom_all_reduce and not cell.flag("sglang-disable-custom-all-reduce"):
        yield problem(
            "P4",
            cell,
            ("sglang-disable-custom-all-reduce",),
            f"SGLang's custom all-reduce must be disabled on {_on_stack(cell)}",
            "add sglang-disable-custom-all-reduce: true to args.sglang",
        )


def _on_stack(cell: Cell) -> str:
    """``mi355x with the miles-dc8b499b stack (container ...)``: software-dependent facts say whose."""
    profile, software = cell.profile, cell.profile.software
    if profile.stack is None or software is None:
        return profile.name
    shown = "; ".join(part for part in (software.container, software.transformer_engine) if part)
    return f"{profile.name} with the {profile.stack} stack" + (f" ({shown})" if shown else "")


@rule("P5")
def dispatcher_available(cell: Cell, _: Layout) -> Iterator[Problem]:
    supported, value = cell.profile.supports.moe_token_dispatchers, cell.flag("moe-token-dispatcher-type")
    if value is not None and value in ("allgather", "alltoall", "flex") and value not in supported:
        yield problem(
            "P5",
            cell,
            ("moe-token-dispatcher-type",),
            f"the {value} token dispatcher is not available on {cell.profile.name}"
            f" (supported: {', '.join(supported)})",
            "use alltoall",
        )


@rule("P6")
def sglang_attention_available(cell: Cell, _: Layout) -> Iterator[Problem]:
    supported, value = cell.profile.supports.sglang_attention_backends, cell.flag("sglang-attention-backend")
    if value is not None and value not in supported:
        yield problem(
            "P6",
            cell,
            ("sglang-attention-backend",),
            f"SGLang attention backend {value} is not available on {cell.profile.name}"
            f" (supported: {', '.join(supported)})",
        )


@rule("P7")
def visible_devices_of_this_vendor(cell: Cell, _: Layout) -> Iterator[Problem]:
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
