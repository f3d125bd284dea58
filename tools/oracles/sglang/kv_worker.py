"""Ask the real SGLang the bytes of one token's KV cache on one GPU, and the tokens its pool holds.

Run with the interpreter of an SGLang oracle venv (0.5.10: ``.oracles/sglang``, miles' PR era; 0.5.16:
``.oracles/miles``, miles main)::

    .oracles/miles/bin/python tools/oracles/sglang/kv_worker.py --platform h200 < requests.json

Protocol: a JSON list of requests on stdin, a JSON list of replies (same order) on stdout; SGLang's
logging and prints go to stderr. A request::

    {"id": "qwen3-8b", "config": {...a HF config.json...}, "tp": 4, "dp": 1, "pp": 1,
     "kv_cache_dtype": "auto", "memory": {"free_gib": 139.0, "after_load_gib": 120.0,
                                          "mem_fraction_static": null}}

``dp`` > 1 turns DP-attention on (``enable_dp_attention``); ``memory`` is optional: the GPU's free
memory (GiB) before the weights load and after, and the fraction (null: SGLang's default for the
platform and engine). A reply::

    {"id", "sglang", "error", "kv_cache_dtype" (after ServerArgs), "kv_torch_dtype", "attention_tp",
     "mla_kv_cache_dim" (what the MLA pool stores a layer, in values of the KV dtype; null without MLA),
     "layers": [per PP rank], "cells": [bytes per token, per PP rank], "page_size",
     "mem_fraction_static" (the one ServerArgs resolved), "max_total_num_tokens" (per PP rank)}

Everything is SGLang's own code: ``ServerArgs`` (all of ``__post_init__``, as an engine on the presented
GPU builds it), ``ModelConfig.from_server_args``, ``get_pp_indices`` for each rank's layers,
``compute_dp_attention_world_info`` for the attention TP, the KV dtype as ``ModelRunner`` configures it, and
the per-token cell and the pool as the model runner sizes them: 0.5.10's ``ModelRunnerKVCacheMixin``
(``get_cell_size_per_token``, ``profile_max_num_token``, ``_resolve_token_capacity``), 0.5.16's
``create_memory_pool_configurator`` and ``KVCacheConfigurator`` (``_profile_available_bytes``,
``config_from_budget``). Those methods are called on a stand-in runner carrying only the attributes they
read; what they ask of the process (the attention TP group, the free GPU memory, the world group) is
presented by replacing the module-level functions they call. The PP ranks' capacities are reported one by
one: SGLang takes their minimum with an all-reduce, which a single process cannot run.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import logging
import os
import sys
import tempfile
import traceback
import types
from pathlib import Path
from typing import Any

import worker  # the platform presentation of tools/oracles/sglang/worker.py, beside this file

log = logging.getLogger("sglang_kv_oracle")
Ranks = list[tuple[int, int]]  # each PP rank's [start, end) layers
Sizing = tuple[Any, "int | None", list[int], "list[int] | None"]  # dtype, MLA cache dim, cells, tokens
MILES_FIXED_ARGS = worker.MILES_FIXED_ARGS


def model_runner_function(name: str) -> Any:
    """A method of SGLang 0.5.10's ``ModelRunner``, compiled from its own source file with the names it
    uses: model_runner.py itself cannot be imported in the argument oracle's venv (its imports reach
    msgspec and einops, which that venv does not install)."""
    import ast

    import torch
    from sglang.srt.layers.quantization.fp8_kernel import fp8_dtype
    from sglang.srt.model_executor import model_runner_kv_cache_mixin as mixin
    from sglang.srt.utils import is_hip, log_info_on_rank0

    path = Path(mixin.__file__).with_name("model_runner.py")
    tree = ast.parse(path.read_text(), str(path))
    (runner,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelRunner"]
    (function,) = [n for n in runner.body if isinstance(n, ast.FunctionDef) and n.name == name]
    tables = [
        n
        for n in tree.body
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "TORCH_DTYPE_TO_KV_CACHE_STR" for t in n.targets)
    ]
    names: dict[str, Any] = {
        "torch": torch,
        "fp8_dtype": fp8_dtype,
        "_is_hip": is_hip(),
        "logger": log,
        "log_info_on_rank0": log_info_on_rank0,
    }
    exec(compile(ast.Module(body=[*tables, function], type_ignores=[]), str(path), "exec"), names)
    return names[name]


def world_group() -> types.SimpleNamespace:
    return types.SimpleNamespace(world_size=1, cpu_group=None)


class KV:
    """One SGLang version's KV sizing, reached through its own modules."""

    def __init__(self) -> None:
        from sglang.srt import server_args
        from sglang.srt.configs import model_config
        from sglang.srt.distributed import utils
        from sglang.srt.layers import dp_attention

        self.server_args, self.model_config = server_args, model_config
        self.get_pp_indices = utils.get_pp_indices
        self.world_info = dp_attention.compute_dp_attention_world_info
        self.version = importlib.metadata.version("sglang")
        self.new = importlib.util.find_spec("sglang.srt.model_executor.pool_configurator") is not None

    def answer(self, request: dict[str, Any], model_dir: Path) -> dict[str, Any]:
        (model_dir / "config.json").write_text(json.dumps(request["config"]))
        tp, dp, pp = (int(request.get(key, 1)) for key in ("tp", "dp", "pp"))
        memory = request.get("memory") or {}
        kwargs: dict[str, Any] = {
            **MILES_FIXED_ARGS,
            "model_path": str(model_dir),
            "tp_size": tp,
            "dp_size": dp,
            "pp_size": pp,
            "enable_dp_attention": dp > 1,
            "kv_cache_dtype": request.get("kv_cache_dtype", "auto"),
        }
        if memory.get("mem_fraction_static") is not None:
            kwargs["mem_fraction_static"] = memory["mem_fraction_static"]
        with worker.preserved_environ():
            args = self.server_args.ServerArgs(**kwargs)
            config = self.model_config.ModelConfig.from_server_args(args)
            attention_tp = self.world_info(dp > 1, 0, tp, dp)[1]
            ranks = [self.get_pp_indices(config.num_hidden_layers, rank, pp) for rank in range(pp)]
            sizing = self._new if self.new else self._old
            dtype, latent, cells, tokens = sizing(args, config, attention_tp, ranks, memory)
        return {
            "kv_cache_dtype": args.kv_cache_dtype,
            "kv_torch_dtype": str(dtype),
            "attention_tp": attention_tp,
            "mla_kv_cache_dim": latent,
            "layers": [end - start for start, end in ranks],
            "cells": cells,
            "page_size": args.page_size,
            "mem_fraction_static": args.mem_fraction_static,
            "max_total_num_tokens": tokens,
        }

    def _old(self, args: Any, config: Any, attention_tp: int, ranks: Ranks, memory: dict[str, Any]) -> Sizing:
        """SGLang 0.5.10: ModelRunner's own methods (model_runner.py, model_runner_kv_cache_mixin.py)."""
        from sglang.srt.model_executor import model_runner_kv_cache_mixin as mixin

        configure_kv_cache_dtype = model_runner_function("configure_kv_cache_dtype")

        mixin.get_attention_tp_size = lambda: attention_tp
        mixin.get_world_group = world_group
        mixin.get_available_gpu_memory = lambda *a, **k: memory.get("after_load_gib")
        cells, tokens = [], []
        for start, end in ranks:
            runner = self._runner(args, config, start, end)
            runner.model, runner.dtype = None, config.dtype
            configure_kv_cache_dtype(runner)
            for name in ("get_cell_size_per_token", "profile_max_num_token", "_resolve_token_capacity"):
                setattr(runner, name, types.MethodType(getattr(mixin.ModelRunnerKVCacheMixin, name), runner))
            runner.mem_fraction_static = args.mem_fraction_static
            runner.pp_size = 1  # each rank alone: the caller takes the minimum (SGLang's all-reduce)
            cells.append(runner.get_cell_size_per_token(runner.num_effective_layers))
            runner.latent = (
                mixin.ModelRunnerKVCacheMixin.calculate_mla_kv_cache_dim(runner)
                if runner.use_mla_backend
                else None
            )
            if memory:
                tokens.append(
                    runner._resolve_token_capacity(runner.profile_max_num_token(memory["free_gib"]))
                )
        return runner.kv_cache_dtype, runner.latent, cells, tokens if memory else None

    def _new(self, args: Any, config: Any, attention_tp: int, ranks: Ranks, memory: dict[str, Any]) -> Sizing:
        """SGLang 0.5.16: the pool configurators (pool_configurator.py, kv_cache_configurator.py)."""
        import torch
        from sglang.srt.layers.cp import utils as cp_utils
        from sglang.srt.mem_cache import kv_cache_configurator as kvc_module
        from sglang.srt.mem_cache.kv_cache_dtype import configure_kv_cache_dtype
        from sglang.srt.model_executor import pool_configurator
        from sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state import (
            SpecAuxHiddenStateConfig,
        )
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        parallel = types.SimpleNamespace(attn_tp_size=attention_tp, attn_cp_size=1)
        for module in (pool_configurator, cp_utils, kvc_module):
            module.get_parallel = lambda: parallel
        kvc_module.get_world_group = world_group
        kvc_module.get_available_gpu_memory = lambda *a, **k: memory.get("after_load_gib")
        _, dtype = configure_kv_cache_dtype(
            server_args_kv_cache_dtype=args.kv_cache_dtype,
            model=None,
            model_dtype=config.dtype,
            is_draft_worker=False,
            is_dflash=False,
            speculative_draft_attention_backend=None,
        )
        cells, tokens = [], []
        for start, end in ranks:
            kvc = self._runner(args, config, start, end)
            kvc.kv_cache_dtype, kvc.model_dtype, kvc.page_size = dtype, config.dtype, args.page_size
            kvc.layer_info = types.SimpleNamespace(
                start_layer=start, end_layer=end, num_effective_layers=end - start
            )
            kvc.spec_algorithm = SpeculativeAlgorithm.from_string(None)
            kvc.spec_aux_config, kvc.post_capture_kv_active = SpecAuxHiddenStateConfig(), False
            kvc.ps = types.SimpleNamespace(attn_dp_size=args.dp_size if args.enable_dp_attention else 1)
            kvc.server_args = types.SimpleNamespace(**{**vars(args), "pp_size": 1})  # each rank alone
            for name in ("_profile_available_bytes", "config_from_budget", "_apply_token_constraints"):
                setattr(kvc, name, types.MethodType(getattr(kvc_module.KVCacheConfigurator, name), kvc))
            configurator = pool_configurator.create_memory_pool_configurator(kvc)
            cells.append(configurator._cell_size)
            if memory:
                budget = kvc._profile_available_bytes(memory["free_gib"])
                tokens.append(kvc.config_from_budget(budget).max_total_num_tokens)
        assert isinstance(dtype, torch.dtype)
        latent = (
            kvc_module.calculate_mla_kv_cache_dim(model_config=config, kv_cache_dtype=dtype, server_args=args)
            if kvc.use_mla_backend
            else None
        )
        return dtype, latent, cells, tokens if memory else None

    def _runner(self, args: Any, config: Any, start: int, end: int) -> types.SimpleNamespace:
        """What both versions' runners read of themselves, as ModelRunner.__init__ sets it."""
        from sglang.srt.configs.model_config import AttentionArch as Arch

        if config.is_hybrid_swa or getattr(config, "hybrid_gdn_config", None):
            raise ValueError("a hybrid (SWA or linear-attention) model is not sized by this oracle")
        return types.SimpleNamespace(
            model_config=config,
            server_args=args,
            device="cuda",
            gpu_id=0,
            is_draft_worker=False,
            mambaish_config=None,
            is_hybrid_swa=False,
            use_mla_backend=config.attention_arch == Arch.MLA,
            start_layer=start,
            end_layer=end,
            num_effective_layers=end - start,
            dp_size=args.dp_size,
        )


def answer(kv: KV, request: Any, model_dir: Path) -> dict[str, Any]:
    request_id = request.get("id") if isinstance(request, dict) else None
    try:
        if not (isinstance(request, dict) and isinstance(request.get("config"), dict)):
            raise TypeError("a request is an object with a 'config' object")
        reply = kv.answer(request, model_dir)
    except Exception as exc:  # SGLang refusing the engine, or a bad request: said in the reply
        log.debug("failed", exc_info=True)
        error = f"{type(exc).__name__}: {worker.describe_error(exc)}"
        return {
            "id": request_id,
            "sglang": kv.version,
            "error": error,
            "trace": traceback.format_exc(limit=-3),
        }
    return {"id": request_id, "sglang": kv.version, "error": None, **reply}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", default="h200", choices=sorted(worker.PLATFORMS))
    options = parser.parse_args(argv)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="[sglang-kv-oracle %(levelname)s] %(message)s"
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    for key in [key for key in os.environ if key.startswith("SGLANG_")]:
        del os.environ[key]  # sizes must not depend on the caller's shell (SGLANG_PP_LAYER_PARTITION)
    requests = json.load(sys.stdin)
    if not isinstance(requests, list):
        raise SystemExit("stdin holds a JSON list of requests")
    platform = worker.PLATFORMS[options.platform]
    with tempfile.TemporaryDirectory(prefix="sglang-kv-oracle-") as tmp:
        root = Path(tmp)
        (root / "bin").mkdir()
        worker.fake_tools(root / "bin", platform)
        worker.present_platform(platform)
        worker.install_stubs(platform)
        kv = KV()
        replies = []
        for index, request in enumerate(requests):
            model_dir = root / f"model-{index}"
            model_dir.mkdir()
            replies.append(answer(kv, request, model_dir))
    json.dump(replies, out)
    out.write("\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
