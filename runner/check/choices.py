"""The "value must be one of" rules, as one table: which flags, and where the allowed values come
from (what the program accepts at all, or what the cell's hardware profile supports).

Each rule module registers its entries with :func:`one_of` where the rule stood, so that rules
keep their order (and problems theirs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import get_args

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import described, problem, rule
from runner.errors import Problem
from schemas.hardware import Dispatcher

Allowed = Callable[[Cell], Sequence[str]]

# what the programs accept at all
DISPATCHERS: tuple[str, ...] = get_args(Dispatcher)  # Megatron's --moe-token-dispatcher-type
ATTENTION_BACKENDS = ("flash", "fused", "unfused", "local", "auto")  # Megatron's --attention-backend
NSA_BACKENDS = ("flashmla_sparse", "flashmla_kv", "flashmla_auto", "fa3", "tilelang", "aiter", "trtllm")
NSA_FLAGS = ("sglang-nsa-prefill-backend", "sglang-nsa-decode-backend")


def known(values: tuple[str, ...]) -> Allowed:
    """Values a program accepts whatever the hardware."""
    return lambda _: values


def supported(capability: str) -> Allowed:
    """Values the cell's hardware profile supports (``supports.<capability>``)."""
    return lambda cell: tuple(getattr(cell.profile.supports, capability))


@dataclass(frozen=True)
class OneOf:
    """A rule that a flag takes one of a set of values: which flags, the values allowed, its words."""

    rule: str
    flags: tuple[str, ...]
    allowed: Allowed
    message: str  # {flag}, {value}, {allowed}, {profile}, {platform}, {on_stack}
    hint: str = "use one of: {allowed}"  # also {first}
    within: tuple[str, ...] = ()  # only these values (others are another rule's to name)
    _: KW_ONLY
    checks: str  # what the rule checks, for the rule table (its registered function's docstring)
    source: str  # where the real system enforces it, or where the allowed values come from


ONE_OF = {
    entry.rule: entry
    for entry in (
        OneOf(
            "M12",
            ("moe-token-dispatcher-type",),
            known(DISPATCHERS),
            "--{flag} {value}: invalid choice",
            checks="The token dispatcher is allgather, alltoall or flex: Megatron's argparse refuses"
            " any other.",
            source="Megatron-LM megatron/core/transformer/transformer_config.py,"
            " TransformerConfig.moe_token_dispatcher_type (its Literal choices)",
        ),
        OneOf(
            "M13",
            ("attention-backend",),
            known(ATTENTION_BACKENDS),
            "--{flag} {value}: invalid choice",
            checks="The attention backend is one Megatron knows (flash, fused, unfused, local, auto):"
            " its argparse refuses any other.",
            source="Megatron-LM megatron/core/transformer/enums.py, AttnBackend",
        ),
        OneOf(
            "S12",
            NSA_FLAGS,
            known(NSA_BACKENDS),
            "--{flag} {value} is not an NSA backend",
            checks="An NSA prefill or decode backend is one SGLang knows: its argparse refuses any other.",
            source="SGLang python/sglang/srt/server_args.py, NSA_CHOICES"
            " (--nsa-prefill-backend, --nsa-decode-backend)",
        ),
        OneOf(
            "P2",
            NSA_FLAGS,
            supported("nsa_backends"),
            "{profile} has no {value} NSA kernels ({platform} supports {allowed})",
            "use {first}",
            checks="An NSA backend has kernels on the cell's platform (some are CUDA kernels, others"
            " ROCm's); another fails when the engine starts.",
            source="the hardware profile's supports.nsa_backends (matrices/hardware/)",
        ),
        OneOf(
            "P3",
            ("attention-backend",),
            supported("megatron_attention_backends"),
            "--attention-backend {value} is not available on {on_stack}"
            " (Transformer Engine there supports {allowed})",
            "use {first}",
            checks="The attention backend is one Transformer Engine provides on the cell's platform and"
            " software stack; another fails when the actor starts.",
            source="the hardware profile's supports.megatron_attention_backends of the cell's stack"
            " (matrices/hardware/)",
        ),
        OneOf(
            "P5",
            ("moe-token-dispatcher-type",),
            supported("moe_token_dispatchers"),
            "the {value} token dispatcher is not available on {profile} (supported: {allowed})",
            "use alltoall",
            within=DISPATCHERS,
            checks="The token dispatcher is one the cell's platform supports (flex exists for DeepEP).",
            source="the hardware profile's supports.moe_token_dispatchers (matrices/hardware/)",
        ),
        OneOf(
            "P6",
            ("sglang-attention-backend",),
            supported("sglang_attention_backends"),
            "SGLang attention backend {value} is not available on {profile} (supported: {allowed})",
            "",
            checks="SGLang's attention backend is one the cell's platform supports; another fails when the"
            " engine starts.",
            source="the hardware profile's supports.sglang_attention_backends (matrices/hardware/)",
        ),
    )
}


def one_of(rule_id: str) -> None:
    """Register the table's rule ``rule_id``."""
    entry = ONE_OF[rule_id]

    def check(cell: Cell, _: Layout) -> Iterator[Problem]:
        yield from _outside(entry, cell)

    check.__name__ = f"one_of_{rule_id}"
    check.__doc__ = described(entry.checks, entry.source)
    rule(rule_id)(check)


def _outside(entry: OneOf, cell: Cell) -> Iterator[Problem]:
    allowed = entry.allowed(cell)
    for flag in entry.flags:
        value = cell.flag(flag)
        if value is None or value in allowed or (entry.within and value not in entry.within):
            continue
        words = {
            "flag": flag,
            "value": value,
            "allowed": ", ".join(allowed),
            "first": allowed[0] if allowed else "",
            "profile": cell.profile.name,
            "platform": cell.profile.platform,
            "on_stack": on_stack(cell),
        }
        yield problem(entry.rule, cell, (flag,), entry.message.format(**words), entry.hint.format(**words))


def on_stack(cell: Cell) -> str:
    """``mi355x with the miles-dc8b499b stack (container ...)``: software-dependent facts say whose."""
    profile, software = cell.profile, cell.profile.software
    if profile.stack is None or software is None:
        return profile.name
    shown = "; ".join(part for part in (software.container, software.transformer_engine) if part)
    return f"{profile.name} with the {profile.stack} stack" + (f" ({shown})" if shown else "")
