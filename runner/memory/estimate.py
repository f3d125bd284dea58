"""estimate: a cell's memory on its most loaded GPU, phase by phase, from its flags and hardware profile.

Colocated, miles runs each step in three phases on the same GPUs (``train.py``): the engines
generate while the actor is offloaded (``--offload-train``, on by default), the actor trains while
the engines are offloaded (``--offload-rollout``, with ``--offload-rollout-level``), and between them
the engines take the new weights while the actor is still on the GPU. Disaggregated, the actor's
GPUs train and the engines' GPUs generate. Each phase lists its terms (``runner.memory.actor``,
``runner.memory.engine``) and a named allowance for what is not modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from runner.cells.cell import Cell
from runner.cells.layout import Layout
from runner.memory import actor, engine, kv, training
from runner.memory.model import Indexer, Shape, Unknown, positive, shape
from runner.memory.params import Split
from runner.memory.rollout import rollout
from runner.memory.terms import GIB, Phase, Term

ACTOR_CONTEXT = 2.0 * GIB  # CUDA context, NCCL communicators and their buffers of the training process
FRAGMENTATION = 0.05  # of what the actor holds: PyTorch's caching allocator never packs it tight
UPDATE_BUFFER = 512 * 1024**2  # --update-weight-buffer-size's default (miles/utils/arguments.py)

Level = Literal["full", "partly", "none"]


@dataclass(frozen=True)
class Capacity:
    """An engine's KV pool in tokens, against what the rollout asks of it."""

    tokens: int
    cell: kv.Cell
    group: int | None
    asked: int | None
    demand_from: str


@dataclass(frozen=True)
class Static:
    """An engine's static memory (mem_fraction_static of the GPU) against its weights, at least."""

    budget: float
    weights: float
    weights_from: str
    fraction_from: str


@dataclass(frozen=True)
class Estimate:
    """A cell's memory on one GPU, phase by phase, against the GPU's (``why_not``: none made)."""

    gpu: str
    memory: float  # bytes of one GPU
    phases: tuple[Phase, ...]
    capacity: Capacity | None
    model: str  # where the model's shape comes from
    why_not: str = ""  # why nothing could be estimated
    static: Static | None = None

    @property
    def level(self) -> Level:
        if self.why_not or not self.phases:
            return "none"
        return "partly" if any(p.unknown for p in self.phases) else "full"

    @property
    def heaviest(self) -> Phase | None:
        return max(self.phases, key=lambda p: p.estimate, default=None)


def estimate(cell: Cell, facts: Layout, changed: Mapping[str, Any] | None = None) -> Estimate:
    """The estimate of ``cell`` laid out as ``facts`` says; ``changed``: flags that differ from the
    cell's (a hint's or the re-fit's candidate)."""
    memory = cell.profile.memory_gb * GIB
    flag = _reader(cell, changed or {})
    model = f"MODEL_ARGS of {cell.spec.model.type}" if cell.spec.model.type else "the spec's model flags"
    try:
        found = shape(flag, indexer(cell))
    except Unknown as exc:
        why = str(exc)
        if cell.backend != "megatron":  # FSDP reads the model's shape from config.json alone
            why = f"the {cell.backend} backend builds its model from the Hugging Face checkpoint: {why}"
        return Estimate(cell.profile.name, memory, (), None, model, why)
    trains = cell.backend == "megatron" and not flag("debug-rollout-only") and facts.actor.world > 0
    generates = not facts.train_only and facts.rollout_gpus > 0
    if not trains and not generates:
        why = (
            "neither Megatron trains nor an engine generates here"
            if cell.backend == "megatron"
            else f"the {cell.backend} backend's memory is not modelled"
        )
        return Estimate(cell.profile.name, memory, (), None, model, why)
    settings = (
        training.training(flag, split(flag, facts), facts.actor.world, facts.actor.cp) if trains else None
    )
    engines = rollout(cell, flag, facts, found) if generates else None
    phases = _phases(flag, found, settings, engines, memory, facts.colocate)
    if found.plugin:  # counted as standard layers: an estimate with a hole, never a figure presented as exact
        hole = Term(
            "actor",
            "plugin layers",
            None,
            "",
            "",
            why_not=f"the layers of {found.plugin} are not modelled (counted as megatron-core's GPT layers)",
        )
        phases = tuple(replace(p, terms=(*p.terms, hole)) for p in phases)
    return Estimate(
        cell.profile.name,
        memory,
        phases,
        _capacity(found, engines, memory),
        model,
        static=_static(found, engines, memory),
    )


def _reader(cell: Cell, changed: Mapping[str, Any]) -> Callable[[str], Any]:
    return lambda name: changed[name] if name in changed else cell.flag(name)


def _static(found: Shape, r: engine.Rollout | None, memory: float) -> Static | None:
    if r is None:
        return None
    params = engine.weights_per_gpu(found, r)
    said = f"{params / 1e9:.2f} B parameters a GPU x {r.weight_lower:g} B at least"
    return Static(
        r.fraction * memory,
        params * r.weight_lower,
        said,
        f"mem_fraction_static {r.fraction:g} ({r.fraction_from})",
    )


def split(flag: Callable[[str], Any], facts: Layout) -> Split:
    a = facts.actor
    return Split(
        a.tp,
        a.pp,
        a.ep,
        a.etp,
        positive(flag("decoder-first-pipeline-num-layers")),
        positive(flag("decoder-last-pipeline-num-layers")),
    )


# DeepSeek sparse attention's indexer, from each checkpoint's config.json (index_n_heads, index_head_dim)
INDEXERS = {
    "glm5": Indexer(32, 128, "zai-org/GLM-5 config.json"),
    "deepseek-v32": Indexer(64, 128, "deepseek-ai/DeepSeek-V3.2 config.json"),
}


def indexer(cell: Cell) -> Indexer | None:
    """The indexer of a sparse-attention model: the checkpoint's config.json when it was read, else
    the published config of its family."""
    if not cell.preset.sparse_attention:
        return None
    config = cell.hf_config or {}
    if positive(config.get("index_n_heads")) and positive(config.get("index_head_dim")):
        return Indexer(
            positive(config["index_n_heads"]),
            positive(config["index_head_dim"]),
            "the checkpoint's config.json",
        )
    family = (cell.spec.model.type or "").lower()
    return next((value for key, value in INDEXERS.items() if family.startswith(key)), None)


def _phases(
    flag: Callable[[str], Any],
    found: Shape,
    t: training.Training | None,
    r: engine.Rollout | None,
    memory: float,
    colocate: bool,
) -> tuple[Phase, ...]:
    trained = _trained(found, t) if t else []
    served = engine.terms(found, r, memory) if r else []
    if not colocate or not t or not r:
        pools = []
        if t:
            pools.append(Phase("training", "the actor's GPUs: Megatron trains", tuple(trained)))
        if r:
            pools.append(Phase("rollout", "the engines' GPUs: SGLang generates", tuple(served)))
        return tuple(pools)
    offload_train = _on(flag, "offload-train")
    offload_rollout = _on(flag, "offload-rollout")
    levels = flag("offload-rollout-level") or ["kv_cache", "weight"]
    levels = levels if isinstance(levels, list) else str(levels).split()
    state = [
        x
        for x in trained
        if x.name in ("weights", "gradients", "optimizer state", "gradients and optimizer state")
    ]
    context = [x for x in trained if x.name == "CUDA context and NCCL"]
    resident = context if offload_train else state + context
    rolling = Phase(
        "rollout",
        "SGLang generates; the actor "
        + ("is offloaded (--offload-train)" if offload_train else "stays (--no-offload-train)"),
        tuple(_sharing_reserve(served, resident) + resident),
    )
    kept = _engine_kept(served, offload_rollout, levels)
    trained_phase = Phase(
        "training",
        "Megatron trains; the engine "
        + ("is offloaded (--offload-rollout)" if offload_rollout else "stays (--no-offload-rollout)"),
        tuple(trained + kept),
    )
    phases = [rolling, trained_phase]
    if offload_rollout:  # miles offloads the actor (or clears its memory) before the engine takes weights
        weights = [x for x in served if x.name in ("weights", "weights, at least", "CUDA context and NCCL")]
        size = float(positive(flag("update-weight-buffer-size")) or UPDATE_BUFFER)
        buffer = Term(
            "actor",
            "weight update buffer",
            size,
            "miles: --update-weight-buffer-size",
            "one bucket of converted weights",
        )
        what = "the engine takes the new weights; the actor " + (
            "is offloaded" if offload_train else "keeps its state"
        )
        phases.append(Phase("weight update", what, tuple(resident + weights + [buffer])))
    return tuple(phases)


def _trained(found: Shape, t: training.Training) -> list[Term]:
    _, terms = actor.heaviest(found, t)
    held = sum(x.bytes or 0.0 for x in terms)
    terms.append(
        Term(
            "actor",
            "CUDA context and NCCL",
            ACTOR_CONTEXT,
            "run-matrix: an allowance, not modelled",
            "2 GiB a training process",
        )
    )
    terms.append(
        Term(
            "actor",
            "fragmentation",
            held * FRAGMENTATION,
            "run-matrix: an allowance, not modelled",
            f"{FRAGMENTATION:.0%} of what the actor holds",
        )
    )
    return terms


def _sharing_reserve(served: list[Term], resident: list[Term]) -> list[Term]:
    """The engine's reserve is room SGLang keeps free of its static memory: what the actor leaves on
    the GPU during the rollout takes that room first (the engines start before the actor)."""
    held = sum(x.bytes or 0.0 for x in resident)
    shared = []
    for term in served:
        if term.name == "activations and CUDA graphs" and term.bytes is not None:
            left = max(0.0, term.bytes - held)
            term = replace(
                term, bytes=left, inputs=f"{term.inputs}, less the actor's {held / GIB:.1f} GB in it"
            )
        shared.append(term)
    return shared


def _engine_kept(served: list[Term], offloaded: bool, levels: list[str]) -> list[Term]:
    """What of the engine stays on the GPU while the actor trains."""
    if not offloaded:
        return [x for x in served if x.name != "activations and CUDA graphs"]
    gone = {"activations and CUDA graphs"}
    if "kv_cache" in levels:
        gone.add("KV cache pool")
    if "weight" in levels:
        gone |= {"weights", "weights, at least"}
    return [x for x in served if x.name not in gone]


def _on(flag: Callable[[str], Any], name: str) -> bool:
    """miles' --offload-train / --offload-rollout: on by default when colocated, off when told."""
    return not (flag(f"no-{name}") is True or flag(name) is False)


def _capacity(found: Shape, r: engine.Rollout | None, memory: float) -> Capacity | None:
    if r is None:
        return None
    held = engine.capacity(found, r, memory)
    if held is None:
        return None
    tokens, cell = held
    return Capacity(tokens, cell, r.group_tokens, r.asked_tokens, r.demand_from)
