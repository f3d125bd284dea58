"""An SGLang-0.5.10-shaped ServerArgs for run-matrix's tests (not SGLang's code)."""
# ruff: noqa  (shaped like the upstream code it stands for, old typing forms included)

import argparse
import dataclasses

NSA_CHOICES = ["flashmla_sparse", "tilelang"]


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    port: int = 30000
    tp_size: int = 1
    ep_size: int = 1
    enable_dp_attention: bool = False
    nsa_decode_backend: str = None

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument("--model-path", "--model", type=str, required=True)
        parser.add_argument("--port", type=int, default=ServerArgs.port)
        parser.add_argument("--tensor-parallel-size", "--tp-size", type=int, default=ServerArgs.tp_size)
        parser.add_argument("--expert-parallel-size", "--ep-size", "--ep", type=int, default=ServerArgs.ep_size)
        parser.add_argument("--enable-dp-attention", action="store_true")
        parser.add_argument("--nsa-decode-backend", type=str, choices=NSA_CHOICES, default=ServerArgs.nsa_decode_backend)
