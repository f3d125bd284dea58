"""A hardware profile: the facts about one kind of machine that verdicts depend on."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt

from schemas.values import Model

Vendor = Literal["nvidia", "amd"]
Platform = Literal["cuda", "rocm"]
Dispatcher = Literal["allgather", "alltoall", "flex"]


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


class HardwareProfile(Model):
    name: str
    description: str = ""
    vendor: Vendor
    platform: Platform
    arch: str = Field(description="sm90, sm100, gfx942, gfx950, ...")
    compute_capability: tuple[int, int]
    gpus_per_node: PositiveInt
    memory_gb: PositiveInt = Field(description="memory of one GPU")
    interconnect: str = ""
    visible_devices_env: Literal["CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"]
    supports: Capabilities
    sources: list[str] = Field(default=[], description="where these facts come from")
