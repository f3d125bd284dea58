"""A sglang-router-shaped RouterArgs for run-matrix's tests (not sglang-router's code)."""
# ruff: noqa  (shaped like the upstream code it stands for, old typing forms included)

import dataclasses


@dataclasses.dataclass
class RouterArgs:
    policy: str = "cache_aware"

    @staticmethod
    def add_cli_args(parser, use_router_prefix=False, exclude_host_port=False):
        prefix = "router-" if use_router_prefix else ""
        parser.add_argument(f"--{prefix}policy", type=str, choices=["random", "cache_aware"], default="cache_aware")
