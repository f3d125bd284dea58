"""A Megatron-shaped config dataclass for run-matrix's tests (not Megatron's code)."""
# ruff: noqa  (shaped like the upstream code it stands for, old typing forms included)

import enum
from dataclasses import dataclass, field
from typing import Literal, Optional


class AttnBackend(enum.Enum):
    flash = 1
    fused = 2
    auto = 5


@dataclass
class ParallelConfig:
    tensor_model_parallel_size: int = 1
    """Intra-layer model parallelism."""

    sequence_parallel: bool = False


@dataclass
class ModelConfig(ParallelConfig):
    attention_backend: AttnBackend = AttnBackend.auto
    moe_token_dispatcher_type: Literal["allgather", "alltoall", "flex"] = "allgather"
    moe_layer_freq: list[int] = field(default_factory=list)
    bias_activation_fusion: bool = True
    hidden_dropout: Optional[float] = 0.1
    internal_only: int = 0
    computed: int = field(init=False, default=0)
    renamed: Optional[int] = field(default=None, metadata={"argparse_meta": {"arg_names": ["--renamed-flag"]}})
