"""run-matrix's side of the differential tests: a parallelism config -> a cell -> our verdict.

A config is an overlay on one of the shipped GLM-5 specs (NVIDIA h200 colocate, ROCm
mi355x async) at a miles version (the PR era dc8b499b, or miles main 31f1ca96: the specs moved
there); our verdict is the set of error rule ids that validation reports.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from runner import check, pipeline
from runner.cells.cell import Cell
from runner.launch.render import render
from runner.spec import locate

MATRICES = locate.BUNDLED_MATRICES
BASES = {"h200": MATRICES / "nv" / "glm5-colocate.yaml", "mi355x": MATRICES / "rocm" / "glm5-async.yaml"}
PR_ERA, MAIN = "dc8b499b", "31f1ca96"
# The same two specs at miles main: nv/glm5-main.yaml is glm5-colocate moved by `run-matrix upgrade`;
# the ROCm one needs no change of flag but its miles_version (the config's overlay sets it).
MAIN_BASES = {**BASES, "h200": MATRICES / "nv" / "glm5-main.yaml"}


@dataclass(frozen=True)
class Config:
    """One variant: flags per group, to overlay on the platform's shipped spec."""

    platform: str
    flags: dict[str, dict[str, object]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    miles_version: str = PR_ERA

    @property
    def name(self) -> str:
        parts = [f"{k}={v}" for group in self.flags.values() for k, v in group.items()]
        return f"{self.platform}@{self.miles_version}[{','.join(parts)}]"

    def overlay(self) -> str:
        base = (MAIN_BASES if self.miles_version == MAIN else BASES)[self.platform]
        lines = [f"extends: {base}", f"miles_version: {self.miles_version}", "args:"]
        for group, flags in self.flags.items():
            if not flags:
                continue
            lines.append(f"  {group}:")
            lines += [f"    {name}: {_yaml(value)}" for name, value in flags.items()]
        if self.env:
            lines.append("env:")
            lines += [f"  {name}: '{value}'" for name, value in self.env.items()]
        return "\n".join(lines) + "\n"


def _yaml(value: object) -> str:
    if value is None:
        return "!delete"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cell_of(config: Config, folder: Path) -> Cell:
    digest = hashlib.sha1(config.name.encode()).hexdigest()[:12]
    path = folder / f"{config.platform}-{digest}.yaml"
    path.write_text(config.overlay())
    return pipeline.cell(path)


def our_errors(cell: Cell) -> set[str]:
    return {p.rule for p in check.run(cell) if p.severity == "error"}


# --- Megatron -----------------------------------------------------------------------------------

# Flags of the rendered launch that miles parses itself; Megatron's parser would refuse them.
MILES_ONLY = {
    "hf-checkpoint", "ref-load", "use-dynamic-batch-size", "max-tokens-per-gpu", "data-pad-size-multiplier",
    "log-probs-chunk-size", "allgather-cp", "update-weight-buffer-size", "actor-num-nodes",
    "actor-num-gpus-per-node", "num-gpus-per-node", "colocate", "dump-details", "disable-weights-backuper",
    "update-weights-interval", "overlap-cpu-optimizer-d2h-h2d", "rematerialize-param-from-master-weight",
}  # fmt: skip
MEGATRON_GROUPS = ("ckpt", "rollout", "optimizer", "perf", "misc")
MEGATRON_ROLLOUT_FLAGS = {"global-batch-size"}


def megatron_argv(cell: Cell) -> list[str]:
    """What Megatron's parser sees of this cell: MODEL_ARGS and the actor's own flags."""
    launch = render(cell)
    argv = list(launch.model_args)
    for group, flags in cell.spec.args.groups():
        if group not in MEGATRON_GROUPS:
            continue
        for name, value in flags.items():
            if name in MILES_ONLY or (group == "rollout" and name not in MEGATRON_ROLLOUT_FLAGS):
                continue
            if value is True:
                argv.append(f"--{name}")
            elif value is not False:
                argv += [f"--{name}", *(map(str, value) if isinstance(value, list) else [str(value)])]
    return argv


def megatron_configs(seed: int = 1124, miles_version: str = PR_ERA) -> Iterator[Config]:
    """A grid over the actor's parallelism on both platforms, then random variants of everything else,
    each an overlay at ``miles_version``."""
    for config in _megatron_configs(seed):
        yield Config(config.platform, config.flags, config.env, miles_version)


def _megatron_configs(seed: int) -> Iterator[Config]:
    for platform in BASES:
        for tp in (1, 2, 3, 4):
            for pp in (1, 2, 4):
                for ep in (1, 3, 4, 8):
                    for cp in (1, 2):
                        yield Config(platform, {"perf": {
                            "tensor-model-parallel-size": tp, "pipeline-model-parallel-size": pp,
                            "expert-model-parallel-size": ep, "context-parallel-size": cp,
                            "sequence-parallel": tp > 1,
                        }})  # fmt: skip
    yield from _targeted_megatron_configs()
    rng = random.Random(seed)
    for _ in range(160):
        platform = rng.choice(list(BASES))
        perf = {
            "tensor-model-parallel-size": rng.choice([1, 2, 4, 8]),
            "pipeline-model-parallel-size": rng.choice([1, 1, 2, 4]),
            "context-parallel-size": rng.choice([1, 1, 2]),
            "expert-model-parallel-size": rng.choice([1, 2, 4, 8, 16, 6]),
            "expert-tensor-parallel-size": rng.choice([1, 1, 2]),
        }
        misc: dict[str, object] = {"actor-num-gpus-per-node": rng.choice([4, 8])}
        if rng.random() < 0.3:
            misc["moe-enable-deepep"] = True
            misc["moe-token-dispatcher-type"] = rng.choice(["flex", "alltoall"])
        if rng.random() < 0.2:
            misc["attention-backend"] = rng.choice(["flash", "fused", "unfused", "auto"])
        optimizer: dict[str, object] = {}
        if rng.random() < 0.3:
            optimizer = {
                "optimizer-cpu-offload": True,
                "use-precision-aware-optimizer": rng.random() < 0.5,
                "optimizer": rng.choice(["adam", "sgd"]),
            }
        rollout = {"global-batch-size": rng.choice([64, 64, 96, 63, 128])}
        yield Config(platform, {"optimizer": optimizer, "perf": perf, "misc": misc, "rollout": rollout})


def _targeted_megatron_configs() -> Iterator[Config]:
    """Rules the grid reaches only behind an earlier one (heads, layers, sequence, names, env)."""
    for platform in BASES:
        for tp, pp, ep in ((3, 1, 1), (3, 1, 2), (1, 3, 1), (1, 3, 2), (3, 2, 1), (2, 3, 1)):
            perf = {
                "tensor-model-parallel-size": tp,
                "pipeline-model-parallel-size": pp,
                "expert-model-parallel-size": ep,
                "context-parallel-size": 1,
                "sequence-parallel": tp > 1,
            }
            yield Config(platform, {"perf": perf, "misc": {"actor-num-gpus-per-node": 6}})
        for seq in (4094, 4096, 4100):
            yield Config(
                platform,
                {
                    "perf": {
                        "seq-length": seq,
                        "context-parallel-size": 2,
                        "tensor-model-parallel-size": 1,
                        "expert-model-parallel-size": 4,
                    }
                },
            )
        yield Config(platform, {"optimizer": {"optimizer": "sgd", "use-precision-aware-optimizer": True}})
        yield Config(platform, {"misc": {"moe-token-dispatcher-type": "bogus", "moe-enable-deepep": False}})
        yield Config(platform, {"misc": {"attention-backend": "bogus"}})
        yield Config(
            platform, {"misc": {"moe-token-dispatcher-type": "allgather", "moe-enable-deepep": False}}
        )
        yield Config(
            platform,
            {
                "perf": {
                    "tensor-model-parallel-size": 2,
                    "expert-model-parallel-size": 4,
                    "context-parallel-size": 1,
                }
            },
            env={"CUDA_DEVICE_MAX_CONNECTIONS": "8"},
        )


# What Megatron says, and which of our rules says the same thing.
MEGATRON_MESSAGES = {
    r"is not divisible by total_model_size": "M1",
    r"expert_tensor_model_pipeline_parallel size": "M2",
    r"Number of experts should be a multiple": "M3",
    r"num_attention_heads .* must be a multiple": "M4",
    r"num_query_groups": "M5",
    r"seq-length should be a multiple": "M6",
    r"Number of layers should be divisible": "M8",
    r"cpu offload must be used|precision-aware-optimizer only supported": "M9",
    r"DeepEP backend is only supported with flex": "M10",
    r"moe-token-dispatcher-type: invalid choice": "M12",
    r"attention.backend|AttnBackend": "M13",
    r"global_batch_size .* must be divisible|global batch size .* is not divisible": "M14",
    r"CUDA_DEVICE_MAX_CONNECTIONS": "M15",
}
# Where run-matrix rejects what Megatron's start-up accepts, on purpose.
STRICTER_THAN_MEGATRON = {
    "M11": "DeepEP with ETP x EP = 1 passes Megatron's checks and fails at run time",
    "P1": "DeepEP is a flag to Megatron; the package is missing on ROCm and fails at run time",
    "P3": "Megatron parses --attention-backend flash on ROCm; in PR 1124's container (no flash-attn)"
    " Transformer Engine fails when it builds the layer",
    "P5": "the flex dispatcher exists in Megatron; on ROCm it has no DeepEP behind it",
    # an actor of the whole node leaves the async ROCm spec's rollout 0 GPUs; Megatron never sees them
    "G4": "--rollout-num-gpus 0: miles has no GPU to start an engine on; Megatron does not see rollout",
}


# --- SGLang -------------------------------------------------------------------------------------

NOT_PASSED_TO_SGLANG = {
    "sglang-tp-size",
    "sglang-attn-cp-size",
    "sglang-moe-dp-size",
}  # miles drops them (L11)


def sglang_engine(cell: Cell) -> dict[str, object]:
    """One engine of this cell as the SGLang worker's 'engine' request: what miles'
    _compute_server_args reads (the worker builds ServerArgs from it as that miles version does)."""
    from runner.cells.layout import integer, layout

    flags: list[str] = []
    for name, value in cell.spec.args.sglang.items():
        if not name.startswith("sglang-") or name in NOT_PASSED_TO_SGLANG or value is False or value is None:
            continue
        flags += [f"--{name}"] if value is True else [f"--{name}", *_tokens(value)]
    return {
        "gpus_per_engine": layout(cell).engine.tp,
        "gpus_per_node": integer(cell.flag("num-gpus-per-node"), 8),
        "flags": flags,
        "miles": {
            "use_rollout_routing_replay": bool(cell.flag("use-rollout-routing-replay")),
            "fp16": bool(cell.flag("fp16")),
        },
    }


def _tokens(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def sglang_configs(seed: int = 1124, miles_version: str = PR_ERA) -> Iterator[Config]:
    """A grid over the engine's tp, dp, ep and DP-attention on both platforms, then random extras;
    with the all-to-all backends that force ep = tp (S7 vs S9)."""
    for platform in BASES:
        for tp in (1, 2, 4, 8, 16, 17):
            for dp in (1, 2, 4, 8):
                for ep in (1, 2, 4, 8):
                    for dp_attention in (True, False):
                        yield Config(
                            platform, {"sglang": _engine(tp, dp, ep, dp_attention)}, {}, miles_version
                        )
    yield from _a2a_configs(miles_version)
    rng = random.Random(seed)
    for _ in range(120):
        platform = rng.choice(list(BASES))
        sglang = _engine(
            rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4]), rng.choice([1, 2, 3, 4, 8]), rng.random() < 0.7
        )
        if rng.random() < 0.4:
            sglang["sglang-page-size"] = rng.choice([1, 16, 64, 128])
        if rng.random() < 0.5:
            sglang["sglang-chunked-prefill-size"] = rng.choice([4096, 8192, 16384, 1000, 6000, 16000])
        if rng.random() < 0.3:
            sglang["sglang-enable-dp-lm-head"] = True
        if rng.random() < 0.3:
            sglang["sglang-moe-dense-tp-size"] = rng.choice([1, 2])
        if rng.random() < 0.3:
            backend = rng.choice(["flashmla_sparse", "fa3", "tilelang", "trtllm", "aiter"])
            sglang["sglang-nsa-prefill-backend"] = sglang["sglang-nsa-decode-backend"] = backend
        yield Config(platform, {"sglang": sglang}, {}, miles_version)


def _a2a_configs(miles_version: str) -> Iterator[Config]:
    """DeepEP with an ep that is not tp, as miles main's tests pass it (MoRI, ROCm's, also caps the
    dispatch tokens by an SGLANG_* variable: test_sglang_oracle and test_sglang_of_miles_main pin it)."""
    for tp in (2, 4, 8):
        for ep in (1, 2, 4, 8, 16):
            sglang = {**_engine(tp, 1, ep, False), "sglang-moe-a2a-backend": "deepep"}
            yield Config("h200", {"sglang": sglang}, {}, miles_version)


def _engine(tp: int, dp: int, ep: int, dp_attention: bool) -> dict[str, object]:
    """One engine's sizes; the rollout gets exactly one engine, so placement rules stay quiet."""
    return {
        "rollout-num-gpus-per-engine": tp, "sglang-dp-size": dp, "sglang-ep-size": ep,
        "sglang-enable-dp-attention": dp_attention, "sglang-enable-dp-lm-head": False,
    }  # fmt: skip


SGLANG_MESSAGES = {
    r"tp_size must be divisible by number of nodes": "S2",
    r"_handle_data_parallelism|tp_size % dp_size|dp_size": "S3",
    r"enable dp attention when setting enable_dp_lm_head": "S5",
    r"chunked_prefill_size must be divisible by page_size": "S6",
    r"moe_dense_tp_size only supports? (1|None, 1, or tp_size)": "S10",
    r"multi-node data parallel is not supported": "S16",
}
ENGINE_RULES = {
    "L5",
    "S2",
    "S3",
    "S5",
    "S6",
    "S7",
    "S8",
    "S10",
    "S12",
    "S13",
    "S14",
    "S16",
    "S17",
    "P2",
    "P4",
    "P6",
}
STRICTER_THAN_SGLANG = {
    "L5": "miles asserts dp > 1 needs DP-attention before it builds ServerArgs",
    "S7": "ep not dividing tp breaks the process groups when the engine starts, not in ServerArgs",
    "S8": "experts % ep and MoE intermediate % MoE-TP fail when the model is built",
    "S12": "miles' argparse knows the NSA backend names; ServerArgs(**kwargs) does not check them",
    "S13": "FlashMLA sparse head padding fails in the kernel, at the first forward",
    "S14": "heads per attention-TP rank fail when the attention layers are built",
    "S17": "an engine larger than the node addresses GPUs that do not exist, at start-up",
    "P2": "SGLang accepts CUDA-only NSA kernels on ROCm; they fail to load there",
    "P4": "custom all-reduce must be disabled in PR 1124's ROCm container; SGLang never rejects it",
    "P6": "the attention backend's kernels are missing on this platform",
}


# --- judging -------------------------------------------------------------------------------------


@dataclass
class Agreement:
    """run-matrix's verdicts against a library's, tallied; every disagreement said in words."""

    library: str
    stricter: dict[str, str]  # our rules that reject what the library accepts, on purpose: why
    tally: Counter[str] = field(default_factory=Counter)
    disagreements: list[str] = field(default_factory=list)

    def accepted(self, name: str, ours: set[str]) -> None:
        self.tally["both accept" if not ours else "stricter: " + ",".join(sorted(ours))] += 1
        unexplained = ours - self.stricter.keys()
        if unexplained:
            self.disagreements.append(f"{name}: {self.library} accepts, we reject with {sorted(unexplained)}")

    def rejected(self, name: str, ours: set[str], theirs: str, detail: str) -> None:
        self.tally[f"both reject ({theirs})" if theirs in ours else "disagree"] += 1
        if theirs not in ours:
            self.disagreements.append(
                f"{name}: {self.library} rejects ({theirs}: {detail}), we say {sorted(ours) or 'ok'}"
            )

    def check(self) -> None:
        print("\n" + "\n".join(f"{n:4d}  {k}" for k, n in sorted(self.tally.items())))
        assert self.disagreements == []
        assert self.tally["both accept"] > 20, "too few accepted configurations to mean anything"
        assert sum(n for k, n in self.tally.items() if k.startswith("both reject")) > 50
