#!/usr/bin/env python3
"""Megatron parameter-count oracle: megatron-core's own ``GPTModel`` built on the meta device for
one rank of a parallel layout, its parameters counted.

Run with the Megatron oracle venv's python (tools/oracles/megatron/build.sh):

    params_worker.py < requests.json > replies.json

Input: a JSON list of requests, each

    {"id": "x", "model_args": ["--num-layers", "4", ...],   # Megatron flags (MODEL_ARGS)
     "tp": 2, "pp": 2, "ep": 8, "etp": 1, "cp": 1, "stage": 1,
     "args": ["--decoder-first-pipeline-num-layers", "3"],    # optional: more Megatron flags
     "indexer": {"heads": 32, "head_dim": 128}}               # optional: DeepSeek sparse attention

Output: a JSON list of replies, in order,

    {"id": "x", "stage": 1, "layers": 2, "dense": 123, "experts": 456,
     "modules": {"embedding": ..., "decoder.layers.0": ..., ...}, "error": null}

where ``experts`` counts the parameters under ``.experts.`` (the routed experts), ``dense``
everything else on that rank, and ``modules`` the same parameters by top-level module (and
decoder layer), for a reader finding where a count differs.

How one model is built, as miles' model provider does (miles/backends/megatron_utils/
model_provider.py) but with the local (non-Transformer-Engine) layer spec, since TE cannot load
without a GPU:
  1. Megatron's parser and validate_args, through the Megatron oracle worker (worker.py), with the
     layout's --tensor/pipeline/expert/context parallel sizes and --transformer-impl local;
  2. initialize_model_parallel under worker.py's fake single-process torch.distributed, the world
     pp x lcm(tp x cp, ep x etp) and the process the first rank of the requested pipeline stage
     (rank ``stage x world / pp``: Megatron's tp-cp-ep-dp-pp order puts pp outermost), so that
     parallel_state answers for that rank;
  3. core_transformer_config_from_args, then the decoder block spec (get_gpt_decoder_block_spec for
     MoE, get_gpt_layer_local_spec otherwise), the MTP block spec when --mtp-num-layers is set,
     and GPTModel with pre_process / post_process for that stage, inside ``torch.device("meta")``.

Where the local spec is not the TE spec miles trains with, the worker makes it so when the count
would differ (MLA's replicated down projections), and otherwise only gets it to build without a GPU
(core attention, rotary tables, kernel choices: none own a parameter). With an "indexer", the
layers are megatron-core's DSA spec on the local backend (its builder asks for TE).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import sys
import traceback
import warnings
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import worker  # the Megatron oracle worker beside this file (the path above finds it)

PLATFORM = "h100"  # what the fake CUDA presents; no parameter depends on it


def layout_argv(req):
    """The parallel flags of a request, as Megatron's parser takes them."""
    return [
        "--tensor-model-parallel-size", str(req["tp"]),
        "--pipeline-model-parallel-size", str(req["pp"]),
        "--expert-model-parallel-size", str(req.get("ep", 1)),
        "--expert-tensor-parallel-size", str(req.get("etp", req["tp"])),
        "--context-parallel-size", str(req.get("cp", 1)),
        "--transformer-impl", "local",
        "--use-cpu-initialization",
        "--no-gradient-accumulation-fusion",  # needs APEX's CUDA extension; no parameter of its own
        "--no-persist-layer-norm",  # torch's LayerNorm (the local spec's) has no persistent kernel
        "--micro-batch-size", "1",
    ]  # fmt: skip


def world_and_rank(req):
    """The smallest world that holds the layout, and the first rank of the requested stage."""
    tp, pp, cp = req["tp"], req["pp"], req.get("cp", 1)
    ep, etp = req.get("ep", 1), req.get("etp", req["tp"])
    per_stage = math.lcm(tp * cp, ep * etp)
    stage = req["stage"]
    if not 0 <= stage < pp:
        raise ValueError(f"stage {stage} is not one of the {pp} pipeline stages")
    return per_stage * pp, stage * per_stage


def without_gpu_kernels(args):
    """Kernel choices that need a GPU (they own no parameters): MoE's fused permutation keeps its
    index tables on CUDA."""
    args.moe_permute_fusion = False


def local_core_attention():
    """The local DotProductAttention (it owns no parameters) as the oracle needs it: in 0.19.2
    multi-latent attention hands it k_channels and v_channels, which it does not take (dropped),
    and it refuses context parallelism, which only TE's implements (it is shown a copy of the
    config with CP 1; parallel_state keeps the layout's CP)."""
    import copy
    import inspect

    from megatron.core.transformer.dot_product_attention import DotProductAttention

    init = DotProductAttention.__init__
    takes_channels = "k_channels" in inspect.signature(init).parameters

    def __init__(self, config, *a, k_channels=None, v_channels=None, **k):
        if config.context_parallel_size > 1:
            config = copy.copy(config)
            config.context_parallel_size = 1
        if takes_channels:
            k.update(k_channels=k_channels, v_channels=v_channels)
        init(self, config, *a, **k)

    DotProductAttention.__init__ = __init__


def rotary_tables_whole():
    """YaRN's rotary table, cached at build time, is cut to this CP rank's positions on a pinned
    CUDA tensor; the table is a buffer, no parameter: kept whole."""
    from megatron.core.models.common.embeddings import yarn_rotary_pos_embedding

    yarn_rotary_pos_embedding.get_pos_emb_on_this_cp_rank = lambda emb, seq_dim, cp_group: emb


def padded_vocab(args):
    """miles' padded vocabulary (miles/backends/megatron_utils/arguments.py): Megatron-LM's
    ``_vocab_size_with_padding`` where the venv has it (radixark's fork), else its rule, a multiple
    of make-vocab-size-divisible-by x TP (megatron-core's wheel leaves the tokenizer out)."""
    try:
        from megatron.training.tokenizer.tokenizer import _vocab_size_with_padding
    except ImportError:
        multiple = args.make_vocab_size_divisible_by * args.tensor_model_parallel_size
        return math.ceil(args.vocab_size / multiple) * multiple
    return _vocab_size_with_padding(args.vocab_size, args, logging_enabled=False)


def layer_spec(args, config):
    """The decoder's layer spec as miles' model provider picks it, with the local backend."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec, get_gpt_layer_local_spec

    if config.experimental_attention_variant == "dsa":
        spec = sparse_attention_spec(config)
    elif args.num_experts:
        spec = get_gpt_decoder_block_spec(config, use_transformer_engine=False)
    else:
        spec = get_gpt_layer_local_spec(
            num_experts=args.num_experts,
            moe_grouped_gemm=args.moe_grouped_gemm,
            qk_layernorm=args.qk_layernorm,
            multi_latent_attention=args.multi_latent_attention,
            normalization=args.normalization,
        )
    for layer in getattr(spec, "layer_specs", [spec]):
        replicated_down_projections(layer)
    return spec


def sparse_attention(config, indexer):
    """DeepSeek sparse attention (megatron-core's DSA) with the request's indexer: its heads and
    head size are the checkpoint's (GLM-5's index_n_heads, index_head_dim), not flags'."""
    config.experimental_attention_variant = "dsa"
    config.dsa_indexer_n_heads = indexer["heads"]
    config.dsa_indexer_head_dim = indexer["head_dim"]
    config.dsa_indexer_topk = indexer.get("topk", 2048)
    config.dsa_indexer_topk_freq = indexer.get("topk_freq", 1)


def sparse_attention_spec(config):
    """This stage's layers of megatron-core's DSA block spec. Its builder asks for TE, but the
    per-layer specs take any backend: the local one, with the replicated linear TE's ``linear()``
    (TELinear, duplicated) would be, megatron-core's local Linear."""
    from megatron.core.models.backends import LocalSpecProvider
    from megatron.core.models.gpt import experimental_attention_variant_module_specs as variants
    from megatron.core.post_training.modelopt.layers import Linear
    from megatron.core.transformer.transformer_block import (
        TransformerBlockSubmodules,
        get_num_layers_to_build,
    )
    from megatron.core.transformer.transformer_layer import get_transformer_layer_offset

    class Local(LocalSpecProvider):
        def linear(self):
            return Linear

    backend = Local()
    layers = variants.get_transformer_layer_with_experimental_attention_variant_spec(config, backend=backend)
    offset, built = get_transformer_layer_offset(config), get_num_layers_to_build(config)
    return TransformerBlockSubmodules(
        layer_specs=layers[offset : offset + built],
        layer_norm=backend.layer_norm(rms_norm=config.normalization == "RMSNorm", for_qk=False),
    )


def replicated_down_projections(layer):
    """MLA's down projections as the TE spec builds them: TELinear with parallel_mode "duplicated",
    whole on every TP rank. The local spec makes them ColumnParallelLinear, split over TP; MLA also
    takes megatron-core's local replicated Linear (post_training.modelopt.layers), used here; the
    modules (MLA, and DSA's absorbed MLA) bind that name only when TE is installed, so it is bound
    here as TE's import would."""
    from megatron.core.post_training.modelopt.layers import Linear
    from megatron.core.transformer import multi_latent_attention
    from megatron.core.transformer.experimental_attention_variant import absorbed_mla

    multi_latent_attention.Linear = absorbed_mla.Linear = Linear

    attention = getattr(layer.submodules, "self_attention", None)
    submodules = getattr(attention, "submodules", None)
    for name in ("linear_q_down_proj", "linear_kv_down_proj"):
        if getattr(submodules, name, None) is not None:
            setattr(submodules, name, Linear)


def build(oracle, args, indexer=None):
    """GPTModel of this process's pipeline stage, on the meta device."""
    import torch
    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_mtp_block_spec

    config = oracle.core_transformer_config_from_args(args)
    config.perform_initialization = False  # the meta device holds no values to initialise
    config.init_model_with_meta_device = True  # nor copies the tied embedding between stages
    if indexer:
        sparse_attention(config, indexer)
    spec = layer_spec(args, config)
    mtp = get_gpt_mtp_block_spec(config, spec, use_transformer_engine=False) if args.mtp_num_layers else None
    kwargs = {
        "config": config,
        "transformer_layer_spec": spec,
        "vocab_size": args.padded_vocab_size,
        "max_sequence_length": args.max_position_embeddings,
        "pre_process": parallel_state.is_pipeline_first_stage(),
        "post_process": parallel_state.is_pipeline_last_stage(),
        "parallel_output": True,
        "share_embeddings_and_output_weights": not args.untie_embeddings_and_output_weights,
        "position_embedding_type": args.position_embedding_type,
        "rotary_percent": args.rotary_percent,
        "rotary_base": args.rotary_base,
        "rope_scaling": args.use_rope_scaling,
        "mtp_block_spec": mtp,
    }
    # Buffers such as YaRN's tables ask torch.cuda.current_device() (the fake CUDA's 0): meta too;
    # the all-to-all dispatcher makes a CUDA stream (no parameter): a placeholder.
    saved = torch.cuda.current_device, torch.cuda.Stream
    torch.cuda.current_device, torch.cuda.Stream = (lambda: "meta"), (lambda *a, **k: object())
    try:
        with torch.device("meta"):
            return GPTModel(**kwargs)
    finally:
        torch.cuda.current_device, torch.cuda.Stream = saved


def module_of(name):
    """A parameter's top-level module, a decoder layer or MTP layer kept apart."""
    parts = name.split(".")
    if parts[0] in ("decoder", "mtp") and len(parts) > 2 and parts[1] == "layers":
        return ".".join(parts[:3])
    return parts[0]


def count(model):
    dense = experts = 0
    modules = Counter()
    for name, param in model.named_parameters():
        n = param.numel()
        modules[module_of(name)] += n
        if ".experts." in f".{name}":
            experts += n
        else:
            dense += n
    return dense, experts, dict(modules)


def one(oracle, req):
    world, rank = world_and_rank(req)
    worker._FAKE["world_size"], worker._FAKE["rank"] = world, rank
    oracle.reset()
    try:
        args = oracle._parse([*req["model_args"], *layout_argv(req), *req.get("args", [])])
        oracle._set_default_megatron_args(args, world)
        args.rank = rank
        oracle._validate(args)
        args.padded_vocab_size = padded_vocab(args)
        without_gpu_kernels(args)
        oracle._initialize_model_parallel(args)
        model = build(oracle, args, req.get("indexer"))
        dense, experts, modules = count(model)
        layers = len(model.decoder.layers) if hasattr(model, "decoder") else 0
        return {
            "stage": req["stage"],
            "layers": layers,
            "dense": dense,
            "experts": experts,
            "modules": modules,
        }
    finally:
        oracle.reset()


def main():
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # Megatron's prints go to stderr; stdout carries the replies alone
    sys.stdout = sys.stderr
    requests = json.load(sys.stdin)
    os.environ.update(worker.MILES_ENV)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle = worker.Oracle(PLATFORM, worker.PLATFORMS[PLATFORM]["te"])
        local_core_attention()
        rotary_tables_whole()
        replies = []
        for req in requests:
            reply = {"id": req.get("id"), "error": None}
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    reply.update(one(oracle, req))
            except (Exception, SystemExit) as e:  # one bad request is that request's reply
                traceback.print_exc()
                reply["error"] = f"{type(e).__name__}: {e}"
            replies.append(reply)
    json.dump(replies, proto)
    proto.write("\n")
    proto.flush()


if __name__ == "__main__":
    main()
