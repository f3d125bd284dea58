"""run-matrix's actor memory (runner/memory/actor.py) against Megatron-LM's own formulas: radixark's
``megatron/training/theoretical_memory_usage.py``, read from ../shared/upstream/megatron-lm-2e64d788.tar.gz
and loaded with a stub for its one import beyond ``math`` (``from .utils import print_rank_0``).

On dense configurations (TP 1 to 8, PP 1 to 4, the distributed optimizer on and off over DP 1 to 8,
selective recompute with and without sequence parallel, no recompute, tied and untied embeddings, GQA
and MHA, swiglu or not, an interleaved schedule), LayerNorm and no linear bias, as that file counts:

- activations of the first stage are equal (``compute_activation_memory`` with SP and selective
  recompute, ``compute_activation_memory_without_sp`` otherwise, as ``report_theoretical_memory``
  chooses);
- weights, main grads and optimizer state of the most loaded stage are equal with TP 1 and PP 1, and
  otherwise differ by exactly the norms' bytes: the file divides every parameter by TP and spreads the
  final norm over the PP stages, where megatron-core replicates a norm on each TP rank and keeps the
  final norm on the last stage (as params.py counts them). With RMSNorm run-matrix counts a norm as h,
  the file as 2h always: 2h a layer plus h less.

Deliberate differences, where that file models nothing or something else (not compared here):

- MoE: the file's activations use ffn-hidden-size as a layer's MLP width; run-matrix uses what a
  token passes through (top-k experts and the shared expert), and shards experts over EP x ETP;
- full recompute: the file applies its no-recompute formula; run-matrix keeps each recomputed
  chunk's input and one chunk's working set;
- the last stage: the file adds the logits and loss only with PP 1 (its most loaded stage is the
  first); run-matrix adds them to the last stage of any PP and compares that stage too;
- CP, EP, ETP, CPU offload, the precision-aware optimizer's dtypes, MTP (the file puts it on the first
  stage, megatron-core on the last), learned positions and linear biases: not in the file.
"""

from __future__ import annotations

import importlib
import os
import sys
import tarfile
import types
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from runner.memory import activations, actor
from runner.memory.model import Shape
from runner.memory.params import Split, shards
from runner.memory.training import Recompute, Training
from tests.conftest import UPSTREAM

pytestmark = pytest.mark.oracle
ARCHIVE = UPSTREAM / "megatron-lm-2e64d788.tar.gz"
MEMBER = "megatron-lm-2e64d788/megatron/training/theoretical_memory_usage.py"
PACKAGE = "_megatron_theory"  # the fake package the file's relative import resolves in
HIDDEN, LAYERS, HEADS, HEAD_DIM, VOCAB = 1024, 8, 16, 64, 50257
SEQ, MICRO_BATCH = 2048, 2
RELATIVE = 1e-9


@dataclass(frozen=True)
class Config:
    name: str
    tp: int
    pp: int
    dp: int
    distributed: bool
    sequence_parallel: bool
    recompute: str | None
    untied: bool
    groups: int  # HEADS: multi-head attention
    swiglu: bool
    virtual: int | None = None
    norm: int = 2  # LayerNorm


CONFIGS = [
    Config("tp1-pp1-mha-untied", 1, 1, 1, False, False, None, True, HEADS, False),
    Config("tp1-pp1-dist-dp8-selective", 1, 1, 8, True, False, "selective", False, 4, True),
    Config("tp2-pp1-dist-dp2-sp-selective-tied", 2, 1, 2, True, True, "selective", False, 4, True),
    Config("tp4-pp1-dp8-sp-selective", 4, 1, 8, False, True, "selective", True, 4, True),
    Config("tp4-pp2-dist-dp8-selective-no-sp", 4, 2, 8, True, False, "selective", True, 4, True),
    Config("tp8-pp4-sp-selective-mha", 8, 4, 1, False, True, "selective", True, HEADS, False),
    Config("tp1-pp2-dist-dp2-tied", 1, 2, 2, True, False, None, False, HEADS, True),
    Config("tp2-pp4-dist-dp8-sp-no-recompute", 2, 4, 8, True, True, None, True, 4, False),
    Config("tp8-pp2-dist-dp2-tied", 8, 2, 2, True, False, None, False, 4, True),
    Config("tp2-pp4-vpp2-sp-selective", 2, 4, 2, True, True, "selective", True, 4, True, virtual=2),
]


@pytest.fixture(scope="module")
def theory() -> Iterator[types.ModuleType]:
    """theoretical_memory_usage.py from the archive, its ``.utils`` a stub whose print_rank_0 does nothing."""
    if not ARCHIVE.is_file():
        if os.environ.get("RUN_MATRIX_UPSTREAM") == "required":
            pytest.fail(f"RUN_MATRIX_UPSTREAM=required but {ARCHIVE} is not there")
        pytest.skip(f"no upstream Megatron-LM archive {ARCHIVE}")
    with tarfile.open(ARCHIVE) as archive:
        member = archive.extractfile(MEMBER)
        assert member is not None, f"{MEMBER} is not a file in {ARCHIVE}"
        source = member.read().decode("utf-8")
    package = types.ModuleType(PACKAGE)
    package.__path__ = []
    utils = types.ModuleType(f"{PACKAGE}.utils")
    utils.print_rank_0 = lambda *_args, **_kwargs: None  # type: ignore[attr-defined]
    module = types.ModuleType(f"{PACKAGE}.theoretical_memory_usage")
    module.__package__ = PACKAGE
    module.__file__ = f"{ARCHIVE}/{MEMBER}"
    added = {PACKAGE: package, utils.__name__: utils, module.__name__: module}
    sys.modules.update(added)
    try:
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        assert importlib.import_module(module.__name__) is module
        yield module
    finally:
        for name in added:
            sys.modules.pop(name, None)


def shape(c: Config) -> Shape:
    return Shape(
        hidden=HIDDEN,
        layers=LAYERS,
        vocab=VOCAB,
        vocab_multiple=128,
        heads=HEADS,
        query_groups=c.groups,
        head_dim=HEAD_DIM,
        ffn_hidden=2816 if c.swiglu else 4 * HIDDEN,
        gated=c.swiglu,
        untied=c.untied,
        norm=c.norm,
        qk_norm=False,
        linear_bias=False,
        qkv_bias=False,
        absolute_positions=0,
        moe_pattern=(False,) * LAYERS,
        experts=0,
        moe_ffn_hidden=0,
        shared_ffn_hidden=0,
        shared_gate=False,
        topk=0,
        mtp_layers=0,
        mla=None,
        indexer=None,
    )


def training(c: Config) -> Training:
    return Training(
        split=Split(tp=c.tp, pp=c.pp),
        world=c.tp * c.pp * c.dp,
        cp=1,
        distributed_optimizer=c.distributed,
        grad_bytes=4.0,
        master_bytes=4.0,
        moment_bytes=(4.0, 4.0),
        cpu_offload=0.0,
        tokens=SEQ * MICRO_BATCH,
        tokens_from="the test's seq_length x micro_batch_size",
        sequence_parallel=c.sequence_parallel,
        recompute=Recompute(c.recompute, None, 1),
        virtual_stages=c.virtual,
        lora_rank=0,
    )


def args(c: Config) -> types.SimpleNamespace:
    """The same configuration as Megatron's parsed arguments."""
    s = shape(c)
    return types.SimpleNamespace(
        hidden_size=HIDDEN,
        num_layers=LAYERS,
        kv_channels=HEAD_DIM,
        num_attention_heads=HEADS,
        group_query_attention=c.groups != HEADS,
        num_query_groups=c.groups,
        ffn_hidden_size=s.ffn_hidden,
        swiglu=c.swiglu,
        num_experts=None,
        moe_layer_freq=1,
        moe_ffn_hidden_size=None,
        moe_shared_expert_intermediate_size=None,
        mtp_num_layers=None,
        multi_latent_attention=False,
        padded_vocab_size=s.padded_vocab(c.tp),
        untie_embeddings_and_output_weights=c.untied,
        pipeline_model_parallel_size=c.pp,
        tensor_model_parallel_size=c.tp,
        use_distributed_optimizer=c.distributed,
        data_parallel_size=c.dp,
        seq_length=SEQ,
        micro_batch_size=MICRO_BATCH,
        virtual_pipeline_model_parallel_size=c.virtual,
        sequence_parallel=c.sequence_parallel,
        recompute_granularity=c.recompute,
        is_hybrid_model=False,
    )


def state_bytes(c: Config) -> float:
    """run-matrix's weights, grads and optimizer state on the stage the file calls most loaded: the
    first (the only one with PP 1)."""
    first = shards(shape(c), Split(tp=c.tp, pp=c.pp))[0]
    terms = actor.state_terms(shape(c), first, training(c))
    assert [t.name for t in terms] == ["weights", "gradients", "optimizer state"]
    return sum(t.bytes or 0.0 for t in terms)


def first_stage_activations(c: Config) -> float:
    value, _source = activations.activations(
        shape(c), training(c), LAYERS // c.pp, in_flight=c.pp, first=True, last=c.pp == 1
    )
    return value


def theory_activations(theory: types.ModuleType, c: Config) -> float:
    a = args(c)
    if a.sequence_parallel and a.recompute_granularity == "selective":
        return float(theory.compute_activation_memory(a, num_microbatches=None))
    return float(theory.compute_activation_memory_without_sp(a, num_microbatches=None))


def bytes_a_parameter(c: Config) -> float:
    return 6 + 12 / c.dp if c.distributed else 18


def norm_difference(c: Config) -> float:
    """Norm parameters on the first stage, run-matrix's (replicated over TP, the final norm on the
    last stage) less the file's (2h each, divided by TP, the final norm by PP too)."""
    ours = (LAYERS // c.pp) * 2 * c.norm * HIDDEN + (c.norm * HIDDEN if c.pp == 1 else 0)
    theirs = (LAYERS * 2 * 2 * HIDDEN + 2 * HIDDEN) / (c.pp * c.tp)
    return ours - theirs


def test_the_configurations_cover_what_the_file_models():
    assert {c.tp for c in CONFIGS} == {1, 2, 4, 8}
    assert {c.pp for c in CONFIGS} == {1, 2, 4}
    assert {(c.distributed, c.dp) for c in CONFIGS} >= {(True, 2), (True, 8), (False, 1), (False, 8)}
    assert {(c.recompute, c.sequence_parallel) for c in CONFIGS} == {
        ("selective", True),
        ("selective", False),
        (None, True),
        (None, False),
    }
    assert {(c.untied, c.groups == HEADS, c.swiglu) for c in CONFIGS} >= {
        (True, True, False),
        (False, False, True),
    }


@pytest.mark.parametrize("c", CONFIGS, ids=lambda c: c.name)
def test_activations_equal_the_files(theory: types.ModuleType, c: Config):
    assert first_stage_activations(c) == pytest.approx(theory_activations(theory, c), rel=RELATIVE)


@pytest.mark.parametrize("c", CONFIGS, ids=lambda c: c.name)
def test_state_equals_the_files_but_for_the_norms(theory: types.ModuleType, c: Config):
    expected = theory.compute_weight_and_optimizer_memory(args(c))
    expected += norm_difference(c) * bytes_a_parameter(c)
    assert state_bytes(c) == pytest.approx(expected, rel=RELATIVE)


@pytest.mark.parametrize("c", [c for c in CONFIGS if c.tp == c.pp == 1], ids=lambda c: c.name)
def test_state_equals_the_files_on_one_gpu_of_tp_and_pp(theory: types.ModuleType, c: Config):
    assert norm_difference(c) == 0
    assert state_bytes(c) == pytest.approx(theory.compute_weight_and_optimizer_memory(args(c)), rel=RELATIVE)


def test_rmsnorm_counts_half_the_files_norms(theory: types.ModuleType):
    """The file counts every norm as LayerNorm's 2h; an RMSNorm has h: 2h a layer and h less."""
    layer_norm = Config("tp1-pp1-rmsnorm", 1, 1, 1, False, False, "selective", True, 4, True)
    rms = Config(**{**layer_norm.__dict__, "norm": 1})
    theirs = theory.compute_weight_and_optimizer_memory(args(rms))
    assert theirs == theory.compute_weight_and_optimizer_memory(args(layer_norm))
    missing = (2 * HIDDEN * LAYERS + HIDDEN) * 18
    assert state_bytes(rms) == pytest.approx(theirs - missing, rel=RELATIVE)
    assert first_stage_activations(rms) == pytest.approx(theory_activations(theory, rms), rel=RELATIVE)
