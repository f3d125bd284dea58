"""An SGLang-0.5.16-shaped ServerArgs for run-matrix's tests (not SGLang's code)."""
# ruff: noqa  (shaped like the upstream code it stands for, old typing forms included)

import argparse
import dataclasses
from typing import Annotated as A
from typing import List, Literal, Optional

from sglang.srt.arg_groups.arg_utils import Arg, add_cli_args_from_dataclass
from sglang.srt.arg_groups.argparse_actions import DeprecatedAliasStoreAction

DSA_CHOICES = ["flashmla_sparse", "tilelang", "trtllm"]


@dataclasses.dataclass
class ServerArgs:
    model_path: A[str, Arg(help="weights", aliases=["--model"])]
    ep_size: A[int, Arg(help="EP.", aliases=["--expert-parallel-size", "--ep"])] = 1
    dsa_decode_backend: A[Optional[str], Arg(help="DSA.", choices=DSA_CHOICES)] = None
    enable_dp_attention: A[bool, "DP attention."] = False
    page_size: A[Optional[int], "page"] = None
    load_balance_method: A[Literal["round_robin", "shortest_queue"], "lb"] = "round_robin"
    cuda_graph_bs: A[Optional[List[int]], "bs"] = None
    internal: A[int, Arg(no_cli=True)] = 0
    not_a_flag: int = 0

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        parser.add_argument(
            "--nsa-decode-backend",
            dest="dsa_decode_backend",
            action=DeprecatedAliasStoreAction,
            new_flag="--dsa-decode-backend",
            default=argparse.SUPPRESS,
            type=str,
            choices=DSA_CHOICES,
        )
