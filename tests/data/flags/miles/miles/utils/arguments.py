"""A miles-shaped argument module for run-matrix's tests (not miles' code)."""
# ruff: noqa  (shaped like the upstream code it stands for, old typing forms included)

import argparse

from miles.backends.sglang_utils.arguments import add_sglang_arguments

ESTIMATORS = ["grpo", "ppo"]


def reset_arg(parser, name, **kwargs):
    for action in parser._actions:
        if name in action.option_strings:
            action.default = kwargs.get("default")
            break
    else:
        parser.add_argument(name, **kwargs)


def add_miles_arguments(parser):
    parser.add_argument("--rollout-batch-size", type=int, required=True)
    parser.add_argument("--advantage-estimator", type=str, choices=ESTIMATORS + ["gspo"], default="grpo")
    parser.add_argument("--colocate", action="store_true")
    parser.add_argument("--eval-temperatures", type=float, nargs="+", default=[1.0])
    parser.add_argument("--train-backend", choices=["megatron", "fsdp"], default="megatron")
    reset_arg(parser, "--lr", type=float, default=1e-6)
    reset_arg(parser, "--seed", type=int, default=1234)
    add_sglang_arguments(parser)
    return parser
