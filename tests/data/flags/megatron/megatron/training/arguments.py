"""A Megatron-shaped argument module for run-matrix's tests (not Megatron's code)."""
# ruff: noqa  (shaped like the upstream code it stands for, old typing forms included)

from megatron.core.config import ModelConfig
from megatron.training.argument_utils import ArgumentGroupFactory


def add_megatron_arguments(parser):
    group = parser.add_argument_group(title="training")
    group.add_argument("--lr", type=float, default=None)
    group.add_argument("--micro-batch-size", type=int, default=None)
    group.add_argument("--no-rope-fusion", action="store_false", dest="apply_rope_fusion")
    exclude = ["internal_only"]
    ArgumentGroupFactory(ModelConfig, exclude=exclude).build_group(parser, "model")
    return parser
