"""The "value must be one of" rules, as one table: which flags, and where the allowed values come
from (what the program accepts at all, or what the cell's hardware profile supports).

Each rule module registers its entries with :func:`one_of` where the rule stood, so that rules
keep their order (and problems theirs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import get_args

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.check import problem, rule
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
    rule: str
    flags: tuple[str, ...]
    allowed: Allowed
    message: str  # {flag}, {value}, {allowed}, {profile}, {platform}, {on_stack}
    hint: str = "use one of: {allowed}"  # also {first}
    within: tuple[str, ...] = ()  # only these values (others are another rule's to name)


ONE_OF = {
    entry.rule: entry
    for entry in (
        OneOf("M12", ("moe-token-dispatcher-type",), known(DISPATCHERS), "--{flag} {value}: invalid choice"),
        OneOf("M13", ("attention-backend",), known(ATTENTION_BACKENDS), "--{flag} {value}: invalid choice"),
        OneOf("S12", NSA_FLAGS, known(NSA_BACKENDS), "--{flag} {value} is not an NSA backend"),
        OneOf(
            "P2",
            NSA_FLAGS,
            supported("nsa_backends"),
            "{profile} has no {value} NSA kernels ({platform} supports {allowed})",
            "use {first}",
        ),
        OneOf(
            "P3",
            ("attention-backend",),
            supported("megatron_attention_backends"),
            "--attention-backend {value} is not available on {on_stack}"
            " (Transformer Engine there supports {allowed})",
            "use {first}",
        ),
        OneOf(
            "P5",
            ("moe-token-dispatcher-type",),
            supported("moe_token_dispatchers"),
            "the {value} token dispatcher is not available on {profile} (supported: {allowed})",
            "use alltoall",
            within=DISPATCHERS,
        ),
        OneOf(
            "P6",
            ("sglang-attention-backend",),
            supported("sglang_attention_backends"),
            "SGLang attention backend {value} is not available on {profile} (supported: {allowed})",
            "",
        ),
    )
}


def one_of(rule_id: str) -> None:
    """Register the table's rule ``rule_id``."""
    entry = ONE_OF[rule_id]

    def check(cell: Cell, _: Layout) -> Iterator[Problem]:
        yield from _outside(entry, cell)

    check.__name__ = f"one_of_{rule_id}"
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
