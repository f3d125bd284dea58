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

Key = tuple[str, ...]  # a dotted key of the profile's data, split

Vendor = Literal["nvidia", "amd"]
Platform = Literal["cuda", "rocm"]
Dispatcher = Literal["allgather", "alltoall", "flex"]
MACHINE_SOURCE = "machine"  # the sources key of the machine facts (memory, interconnect, ...)
COMMIT = re.compile(r"[0-9a-fA-F]{7,40}")
# How each vendor names an architecture, and how the name spells its compute capability (major,
# minor): NVIDIA's sm<major><minor> (sm90 Hopper 9.0, sm100 B200/GB200 10.0, sm103 B300/GB300
# 10.3, sm120 12.0; a suffix a/f names arch-specific features); AMD's gfx<major><minor><stepping>,
# minor and stepping one hex digit each (gfx942 MI300X/MI325X 9.4, gfx950 MI350X/MI355X 9.5), as
# HIP reports major.minor and torch.cuda.get_device_capability() returns them on ROCm.
ARCH_NAMES: dict[Vendor, tuple[str, re.Pattern[str], int, str]] = {
    "nvidia": ("NVIDIA", re.compile(r"sm(\d+)(\d)[af]?"), 10, "sm<major><minor>: sm90, sm100, sm103, sm120"),
    "amd": (
        "AMD",
        re.compile(r"gfx(\d+)([0-9a-f])[0-9a-f]"),
        16,
        "gfx<major><minor><stepping>: gfx942, gfx950",
    ),
}


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

    def arch_mismatch(self) -> tuple[tuple[str, ...], str, str] | None:
        """(the fields that disagree, what is wrong, the fix) when ``arch`` is no architecture name of
        the vendor's or names another compute capability than ``compute_capability``; else None."""
        vendor, pattern, base, form = ARCH_NAMES[self.vendor]
        named = pattern.fullmatch(self.arch)
        if named is None:
            text = f"{self.arch!r} is not an {vendor} architecture name"
            return ("arch", "vendor"), text, f"write it as {form}, or set the vendor whose name it is"
        capability = (int(named[1]), int(named[2], base))
        if capability == self.compute_capability:
            return None
        said, meant = _dotted(self.compute_capability), _dotted(capability)
        return (
            ("compute_capability", "arch"),
            f"{self.arch} is compute capability {meant}, not {said} as compute_capability says",
            f"set compute_capability: {list(capability)}, or the arch whose compute capability is {said}",
        )


def _dotted(capability: tuple[int, int]) -> str:
    return f"{capability[0]}.{capability[1]}"


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

    def gaps(self) -> list[tuple[Key, str, Key | None]]:
        """(key, what is missing, the key whose writer is to blame) for each stack that lacks a fact,
        and each fact without a source; None as the blamed key: the profile file itself, whose
        machine facts no family can source."""
        found: list[tuple[Key, str, Key | None]] = []
        own: dict[str, Facts] = {name: stack.supports for name, stack in self.stacks.items()}
        for name, facts in (own or {"": Facts()}).items():
            stated = {**self.supports.stated(), **facts.stated()}
            missing = [f for f in CAPABILITIES if f not in OPTIONAL_CAPABILITIES and f not in stated]
            if missing:
                key = ("stacks", name, "supports") if name else ("supports",)
                found.append((key, f"{', '.join(missing)} not stated, for every stack or for this one", key))
        unsourced = sorted(set(self.supports.stated()) - set(self.sources))
        if unsourced:  # blamed where the first of them is stated
            text = f"no source for {', '.join(unsourced)}; say where each fact comes from"
            found.append((("sources",), text, ("supports", unsourced[0])))
        if MACHINE_SOURCE not in self.sources:  # memory_gb decides a verdict (R1): it is no guess
            text = (
                f"no source for the machine facts (memory_gb, arch, interconnect, ...): add"
                f" sources: {{{MACHINE_SOURCE}: <the product page>}}"
            )
            found.append((("sources",), text, None))
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
