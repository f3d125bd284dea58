"""A miles-shaped SGLang prefixing module for run-matrix's tests (not miles' code)."""
# ruff: noqa  (shaped like the upstream code it stands for, old typing forms included)

_SKIPPED = ["model_path", "port"]
_EVAL_SKIPPED = _SKIPPED + ["tp_size"]


def _add_prefixed_server_args(parser, *, flag_prefix, dest_prefix, skipped_args, inherit):
    pass  # the test reads only the calls below


def add_sglang_arguments(parser):
    parser.add_argument("--sglang-router-ip", type=str, default=None)
    _add_prefixed_server_args(parser, flag_prefix="sglang", dest_prefix="sglang_", skipped_args=_SKIPPED, inherit=False)
    _add_prefixed_server_args(
        parser, flag_prefix="eval-sglang", dest_prefix="eval_sglang_", skipped_args=_EVAL_SKIPPED, inherit=True
    )
    return parser
