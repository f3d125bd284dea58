"""A hardware profile: the facts about one kind of machine that verdicts depend on.

What a machine supports depends on the software it runs: the same MI355X ran only Transformer
Engine's CK fused attention in the container of miles PR #1124 and runs flash attention in miles
main's. So a profile file (:class:`HardwareProfileFile`) holds the facts true of every stack it
knows in ``supports:``, and each software stack's own facts in ``stacks:``, each fact with its
source. A cell sees one stack's facts, merged (:class:`HardwareProfile`).
"""

import re
from typing import Any, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from schemas.values import Count, Model

Vendor = Literal["nvidia", "amd"]
Platform = Literal["cuda", "rocm"]
Dispatcher = Literal["allgather", "alltoall", "flex"]
MACHINE_SOURCE = "machine"
COMMIT = re.compile(r"[0-9a-fA-F]{7,40}")  # the sources key of the machine facts (memory, interconnect, ...)


class Capabilities(Model):
    """What the platform's software stack supports; rules read these, never vendor names."""

    megatron_attention_backends: list[str] = Field(
        description="--attention-backend values Transformer Engine supports here"
    )
    sglang_attention_backends: list[str]
    nsa_backends: list[str] = Field(description="kernels for --sglang-nsa-{prefill,decode}-backend")
    moe_token_dispatchers: list[Dispatcher]
    deepep: bool = Field(description="DeepEP (needs NVIDIA InfiniBand + GPUDirect RDMA)")
    custom_all_reduce: bool = Field(description="SGLang's custom all-reduce works here")
    dsa_page_size: PositiveInt = Field(description="page size SGLang forces for DSA (NSA) models")
    flashmla_sparse_heads: PositiveInt | None = Field(
        default=None,
        description="FlashMLA sparse pads heads per attention-TP rank to this (64 Hopper, 128 Blackwell)",
    )
    moe_dense_tp_full: bool = Field(
        default=False,
        description="SGLang also takes --sglang-moe-dense-tp-size = the engine's tp (0.5.16), not only 1",
    )


CAPABILITIES = tuple(Capabilities.model_fields)
OPTIONAL_CAPABILITIES = frozenset({"flashmla_sparse_heads", "moe_dense_tp_full"})


class Facts(Model):
    """Some of the capabilities: those a profile states for every stack, or one stack states."""

    megatron_attention_backends: list[str] | None = None
    sglang_attention_backends: list[str] | None = None
    nsa_backends: list[str] | None = None
    moe_token_dispatchers: list[Dispatcher] | None = None
    deepep: bool | None = None
    custom_all_reduce: bool | None = None
    dsa_page_size: PositiveInt | None = None
    flashmla_sparse_heads: PositiveInt | None = None
    moe_dense_tp_full: bool | None = None

    def stated(self) -> dict[str, Any]:
        return {name: value for name, value in self.model_dump().items() if value is not None}


class Stack(Model):
    """One software stack the machine runs: a container image, as a miles version pins it."""

    miles_version: str = Field(
        description="the miles commit (a prefix) whose container this is; specs targeting it get these facts",
    )
    container: str = Field(default="", description="the image, e.g. rocm/sgl-dev:v0.5.16-rocm720-mi35x")
    sglang: str = Field(default="", description="the SGLang version (and branch) in the container")
    transformer_engine: str = Field(default="", description="the Transformer Engine version or branch")
    supports: Facts = Facts()
    sources: dict[str, str] = Field(
        default={}, description="each fact this stack states -> where it comes from (a file, a release note)"
    )

    @field_validator("miles_version")
    @classmethod
    def _a_commit(cls, value: str) -> str:
        if not COMMIT.fullmatch(value):
            raise ValueError(f"expected a miles commit (7 to 40 hex digits), got {value!r}")
        return value

    @model_validator(mode="after")
    def _every_fact_has_a_source(self) -> "Stack":
        unsourced = sorted(set(self.supports.stated()) - set(self.sources))
        if unsourced:
            raise ValueError(f"sources: no source for {', '.join(unsourced)}; say where each fact comes from")
        return self


class Machine(Model):
    """The facts of the hardware itself, whatever software runs on it."""

    name: str
    description: str = ""
    vendor: Vendor
    platform: Platform
    arch: str = Field(description="sm90, sm100, gfx942, gfx950, ...")
    compute_capability: tuple[int, int]
    gpus_per_node: Count = Field(description="GPUs of one whole node; a runner may get a share of them")
    memory_gb: PositiveInt = Field(description="memory of one GPU")
    interconnect: str = ""
    visible_devices_env: Literal["CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"]


class HardwareProfileFile(Machine):
    """A file of ``matrices/hardware/`` (or, with ``extends:``, of a family it extends)."""

    supports: Facts = Field(default=Facts(), description="facts true of every stack in stacks:")
    stacks: dict[str, Stack] = Field(
        default={}, description="software stack name -> its own facts; a cell gets those of its miles_version"
    )
    sources: dict[str, str] = Field(
        default={},
        description=f"'{MACHINE_SOURCE}' and each fact of supports: -> where it comes from",
    )

    def gaps(self) -> list[tuple[tuple[str, ...], str]]:
        """(key, what is missing) for each stack that lacks a fact, and each fact without a source."""
        found: list[tuple[tuple[str, ...], str]] = []
        own: dict[str, Facts] = {name: stack.supports for name, stack in self.stacks.items()}
        for name, facts in (own or {"": Facts()}).items():
            stated = {**self.supports.stated(), **facts.stated()}
            missing = [f for f in CAPABILITIES if f not in OPTIONAL_CAPABILITIES and f not in stated]
            if missing:
                key = ("stacks", name, "supports") if name else ("supports",)
                found.append((key, f"{', '.join(missing)} not stated, for every stack or for this one"))
        unsourced = sorted(set(self.supports.stated()) - set(self.sources))
        if unsourced:
            found.append(
                (("sources",), f"no source for {', '.join(unsourced)}; say where each fact comes from")
            )
        if MACHINE_SOURCE not in self.sources:  # memory_gb decides a verdict (R1): it is no guess
            found.append(
                (
                    ("sources",),
                    f"no source for the machine facts (memory_gb, arch, interconnect, ...): add"
                    f" sources: {{{MACHINE_SOURCE}: <the product page>}}",
                )
            )
        return found

    def on(self, stack: str | None) -> "HardwareProfile":
        """This machine as a cell sees it: the facts of ``stack`` (None: a profile without stacks)."""
        chosen = self.stacks[stack] if stack else None
        facts = {**self.supports.stated(), **(chosen.supports.stated() if chosen else {})}
        sources = {**self.sources, **(chosen.sources if chosen else {})}
        machine = {name: getattr(self, name) for name in Machine.model_fields}
        return HardwareProfile(
            **machine, supports=Capabilities(**facts), stack=stack, software=chosen, sources=sources
        )


class HardwareProfile(Machine):
    """A profile with one stack chosen: what the rules, ``${profile.*}`` and ``port`` read."""

    supports: Capabilities
    stack: str | None = Field(default=None, description="the software stack these facts hold for")
    software: Stack | None = None
    sources: dict[str, str] = {}
