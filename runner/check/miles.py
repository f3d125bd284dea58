"""L*: what miles itself decides — placement, modes, flags it ignores or that crash it.

What depends on the launcher (``launch.script``) is read from ``cell.launcher``: the data of
``miles/launchers.yaml`` (L2, L9, L10, L14); no rule names a launcher.
"""

from __future__ import annotations

from collections.abc import Iterator

from runner.cells.cell import Cell
from runner.cells.layout import Layout, integer
from runner.check import described, problem, rule
from runner.errors import Problem, counted, printable
from schemas.launchers import either

IGNORED_SGLANG_FLAGS = ("sglang-tp-size", "sglang-attn-cp-size", "sglang-moe-dp-size")
MILES_VALIDATE_ARGS = "miles miles/utils/arguments.py, miles_validate_args"
CRITIC_FLAGS = ("critic-num-gpus-per-node", "critic-num-nodes", "use-critic", "advantage-estimator")


@rule("L1")
def colocate_ignores_rollout_gpus(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """With --colocate the engines run on the training GPUs: a --rollout-num-gpus that differs is ignored.

    Source: miles miles/utils/arguments.py, miles_validate_args (colocate overrides rollout_num_gpus)
    """
    given = cell.flag("rollout-num-gpus")
    if facts.colocate and given is not None and integer(given, -1) != facts.rollout_gpus:
        yield problem(
            "L1",
            cell,
            ("rollout-num-gpus", "colocate"),
            f"--rollout-num-gpus {given} has no effect with --colocate: the engines use the"
            f" {facts.rollout_gpus} training GPUs",
            "delete --rollout-num-gpus",
            "warning",
        )


@rule("L2")
def launcher_rejects_colocate(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """A launcher that cannot colocate (train_async.py) refuses --colocate at start-up.

    Source: miles train_async.py (its assert), recorded as colocate_refusal in miles/launchers.yaml
    """
    refusal = cell.launcher.colocate_refusal
    if facts.colocate and refusal is not None:
        others = cell.launchers.colocating()
        instead = f"use launch.script: {either(others)}, or " if others else ""
        yield problem(
            "L2",
            cell,
            ("colocate",),
            f'{cell.spec.launch.script} rejects --colocate: "{refusal}"',
            f"{instead}delete --colocate and give the engines --rollout-num-gpus",
        )


@rule("L3")
def gpu_budget(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The actor, critic, rollout and eval GPUs must fit the cluster's nodes x GPUs per node, or Ray's
    placement group waits forever; GPUs left idle are a warning.

    Source: miles miles/ray/placement_group.py, create_placement_groups; the engines' GPU offsets in
    miles/backends/sglang_utils/sglang_engine.py, get_base_gpu_id
    """
    if not facts.colocate and not facts.train_only and cell.flag("rollout-num-gpus") is None:
        yield problem(
            "L3",
            cell,
            ("rollout-num-gpus",),
            "without --colocate, --rollout-num-gpus is required: the engines need GPUs of their own",
            f"set it to the GPUs the actor leaves free ({facts.cluster_gpus - facts.needed_gpus})",
        )
        return
    parts = [f"actor {facts.actor_gpus}"]
    parts += [f"critic {facts.critic_gpus}"] if facts.critic_gpus else []
    parts += [] if facts.colocate else [f"rollout {facts.rollout_gpus}"]
    parts += [f"eval fleet {facts.eval_gpus}"] if facts.eval_gpus else []
    sum_text = " + ".join(parts) + f" = {facts.needed_gpus}" if len(parts) > 1 else parts[0]
    have = f"{counted(facts.nodes, 'node')} x {counted(facts.gpus_per_node, 'GPU')} = {facts.cluster_gpus}"
    flags = ("actor-num-gpus-per-node", "actor-num-nodes", *(() if facts.colocate else ("rollout-num-gpus",)))
    flags += CRITIC_FLAGS if facts.critic_gpus else ()
    flags += ("eval-num-gpus",) if facts.eval_gpus else ()
    if facts.needed_gpus > facts.cluster_gpus:
        yield problem(
            "L3",
            cell,
            flags,
            f"needs {sum_text} GPUs but the cluster has {have}: Ray's placement group would wait forever",
            "shrink the actor or the rollout, or raise cluster.nodes",
        )
    elif facts.needed_gpus < facts.cluster_gpus:
        yield problem(
            "L3",
            cell,
            flags,
            f"uses {sum_text} of the {have} GPUs; {facts.cluster_gpus - facts.needed_gpus} stay idle"
            + _outside_ray(cell),
            severity="warning",
        )
    yield from _node_share(cell, facts)
    yield from _miles_gpus_per_node(cell, facts)


def _outside_ray(cell: Cell) -> str:
    """A custom eval function may start a server of its own on GPUs Ray's placement group left free
    (miles main's ExternalSglangEvalFn does, on the GPUs an environment variable names)."""
    function = cell.flag("eval-function-path")
    if not isinstance(function, str) or not function:
        return ""
    shown = printable(function)
    return f" in Ray's placement group; the function of --eval-function-path ({shown}) may use them"


def _node_share(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """cluster.gpus_per_node is the runner's share of a node: at most the node, at most the mask."""
    profile, share = cell.profile, cell.share
    where = (cell.location("cluster", "gpus_per_node"),)
    if facts.gpus_per_node > profile.gpus_per_node:
        yield Problem(
            "L3",
            f"cluster.gpus_per_node {facts.gpus_per_node} is more than a {profile.name} node has"
            f" ({profile.gpus_per_node})",
            "cluster.gpus_per_node",
            where,
            hint="set cluster.gpus_per_node: ${runner.gpus_per_node} (this runner's share) or a number up to"
            f" {profile.gpus_per_node}",
        )
    elif share is not None and share.devices and facts.gpus_per_node > share.gpus:
        yield Problem(
            "L3",
            f"cluster.gpus_per_node {facts.gpus_per_node} is more than this runner's share of the node:"
            f" {share.describe()} ({share.gpus} GPUs)",
            "cluster.gpus_per_node",
            where,
            hint="set cluster.gpus_per_node: ${runner.gpus_per_node},"
            " or run it where the mask gives enough GPUs",
        )


def _miles_gpus_per_node(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """miles places engines at (offset + rank x engine GPUs) % --num-gpus-per-node: on one node that
    needs no more GPUs than it has, a larger --num-gpus-per-node (its default 8 on a 2- or 4-GPU
    runner, as upstream's FSDP and test_amd_* tests run) never wraps; a smaller one, or any other
    value across nodes, puts engines on GPUs that are taken or do not exist."""
    miles_gpn = integer(cell.flag("num-gpus-per-node"), 8)
    if miles_gpn == facts.gpus_per_node or (facts.nodes == 1 and miles_gpn > facts.gpus_per_node):
        return
    why = (
        f"engine GPUs wrap around at {miles_gpn} onto GPUs the actor or another engine holds"
        if miles_gpn < facts.gpus_per_node
        else f"miles counts {miles_gpn} GPUs per node when it maps engine ranks to the {facts.nodes} nodes"
    )
    yield problem(
        "L3",
        cell,
        ("num-gpus-per-node",),
        f"--num-gpus-per-node {miles_gpn} differs from cluster.gpus_per_node {facts.gpus_per_node}"
        f" (what `ray start --num-gpus` gets): {why}",
        "set num-gpus-per-node: ${cluster.gpus_per_node}",
    )


@rule("L4")
def engines_fit(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """The rollout's GPUs make whole engines: no engine at all is an error, a remainder stays idle.

    Source: miles miles/ray/rollout.py (engines = rollout GPUs // GPUs per engine)
    """
    stride, rollout = facts.engine_stride, facts.rollout_gpus
    flags = ("rollout-num-gpus-per-engine", "rollout-num-gpus")
    if rollout and facts.engines == 0:
        yield problem(
            "L4",
            cell,
            flags,
            f"no engine fits: the rollout has {rollout} GPUs and one engine needs {stride}",
            f"give the rollout a multiple of {stride} GPUs, or smaller engines",
        )
    elif facts.wasted_rollout_gpus:
        yield problem(
            "L4",
            cell,
            flags,
            f"{rollout} rollout GPUs make {counted(facts.engines, 'engine')} of {counted(stride, 'GPU')};"
            f" {counted(facts.wasted_rollout_gpus, 'GPU')}"
            f" {'stays' if facts.wasted_rollout_gpus == 1 else 'stay'} idle",
            f"give the rollout a multiple of {stride} GPUs",
            "warning",
        )


@rule("L5")
def dp_needs_dp_attention(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """sglang-dp-size above 1 needs --sglang-enable-dp-attention: miles asserts it at start-up (without it
    every DP rank would be a whole engine).

    Source: miles miles/backends/sglang_utils/arguments.py, validate_args
    """
    engine = facts.engine
    if engine.dp > 1 and not engine.dp_attention:
        yield problem(
            "L5",
            cell,
            ("sglang-dp-size", "rollout-num-gpus-per-engine"),
            f"sglang-dp-size {engine.dp} without --sglang-enable-dp-attention: miles asserts at start-up."
            f" Without DP-attention each DP rank is a whole engine, tp x dp x pp ="
            f" {engine.tp} x {engine.dp} x {engine.pp} = {engine.dp * engine.tp * engine.pp} GPUs, not the"
            f" {engine.tp} miles gives an engine",
            f"add sglang-enable-dp-attention (then dp {engine.dp} splits the engine's {engine.tp} GPUs"
            f" into attention-TP {engine.tp}/{engine.dp}), or set sglang-dp-size 1",
        )


def _requires(rule_id: str, flag: str, needs: str, why: str, source: str = MILES_VALIDATE_ARGS) -> None:
    """Register a rule: --flag is only valid together with --needs (``source``: who says so)."""

    def check(cell: Cell, _: Layout) -> Iterator[Problem]:
        if cell.flag(flag) not in (None, False) and cell.flag(needs) in (None, False):
            yield problem(rule_id, cell, (flag,), f"--{flag} requires --{needs}: {why}", f"set {needs}")

    check.__doc__ = described(f"--{flag} requires --{needs}: {why}.", source)
    rule(rule_id)(check)


_requires("L6", "use-dynamic-batch-size", "max-tokens-per-gpu", "dynamic batches are cut by token count")
_requires("L7", "save-interval", "save", "there is nowhere to save to")


@rule("L8")
def p2p_transfer_not_colocated(cell: Cell, facts: Layout) -> Iterator[Problem]:
    """--update-weight-transfer-mode p2p cannot be used with --colocate: miles refuses it at start-up.

    Source: miles miles/utils/arguments.py, miles_validate_args
    """
    if facts.colocate and cell.flag("update-weight-transfer-mode") == "p2p":
        yield problem(
            "L8",
            cell,
            ("update-weight-transfer-mode", "colocate"),
            "--update-weight-transfer-mode p2p is incompatible with --colocate",
            "delete it: colocated engines receive weights in place",
        )


@rule("L9")
def flags_the_launcher_ignores(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A flag the chosen launcher parses but never acts on (--update-weights-interval under train.py) has no
    effect.

    Source: miles train.py and train_async.py (only train_async.py reads --update-weights-interval),
    recorded as ignores in miles/launchers.yaml
    """
    for name in cell.launcher.ignores:
        if cell.flag(name) is not None:
            others = cell.launchers.honouring(name)
            only = f"; only {either(others)} honour{'s' if len(others) == 1 else ''} it" if others else ""
            yield problem(
                "L9",
                cell,
                (name,),
                f"--{name} has no effect under {cell.spec.launch.script}{only}",
                f"delete it, or use launch.script: {either(others)}" if others else "delete it",
                "warning",
            )


@rule("L10")
def flags_that_crash_the_launcher(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A flag that crashes the chosen launcher at run time (--disable-weights-backuper under train_async.py:
    torch_memory_saver backs up every tensor to CPU and segfaults).

    Source: miles PR #1124 (the ROCm GLM-5 async test's reason), recorded as crashes in
    miles/launchers.yaml
    """
    for name, what in cell.launcher.crashes.items():
        if cell.flag(name):
            yield problem(
                "L10",
                cell,
                (name,),
                f"--{name} under {cell.spec.launch.script} {what}",
                f"delete it in {cell.launcher.mode} mode",
            )


@rule("L11")
def flags_that_never_reach_sglang(cell: Cell, _: Layout) -> Iterator[Problem]:
    """--sglang-tp-size, --sglang-attn-cp-size and --sglang-moe-dp-size are parsed by miles but never reach
    the engine: miles sets the engine's tp from rollout-num-gpus-per-engine.

    Source: miles miles/backends/sglang_utils/arguments.py, validate_args, and sglang_engine.py,
    _compute_server_args
    """
    for name in IGNORED_SGLANG_FLAGS:
        if cell.flag(name) is not None:
            hint = (
                "miles sets the engine's tp to rollout-num-gpus-per-engine"
                if name == "sglang-tp-size"
                else ""
            )
            yield problem(
                "L11",
                cell,
                (name,),
                f"--{name} is parsed by miles but never reaches the engine",
                hint or "delete it",
                "warning",
            )


@rule("L12")
def hf_config_agrees(cell: Cell, _: Layout) -> Iterator[Problem]:
    """The checkpoint's config.json agrees with the Megatron flags (hidden size, heads, layers, FFN size,
    norm epsilon, rope theta, tied embeddings), or miles stops with "hf_validate_args failed".

    Source: miles miles/utils/arguments.py, hf_validate_args
    """
    config = cell.hf_config
    if config is None:
        return
    pairs = [
        ("hidden_size", "hidden-size"),
        ("num_attention_heads", "num-attention-heads"),
        ("num_hidden_layers", "num-layers"),
        ("intermediate_size", "ffn-hidden-size"),
        ("rms_norm_eps", "norm-epsilon"),
    ]
    for field, flag in pairs:
        if field in config and cell.flag(flag) is not None and float(config[field]) != float(cell.flag(flag)):
            yield problem(
                "L12",
                cell,
                (flag,),
                f"config.json has {field} = {config[field]} but --{flag} is {cell.flag(flag)}:"
                ' miles stops with "hf_validate_args failed"',
                "point hf-checkpoint at the model the flags describe, or fix the flags",
            )
    theta = config.get("rope_theta", (config.get("rope_parameters") or {}).get("rope_theta"))
    if (
        theta is not None
        and cell.flag("rotary-base") is not None
        and float(theta) != float(cell.flag("rotary-base"))
    ):
        yield problem(
            "L12",
            cell,
            ("rotary-base",),
            f"config.json has rope_theta = {theta} but --rotary-base is {cell.flag('rotary-base')}",
        )
    if "tie_word_embeddings" in config and bool(config["tie_word_embeddings"]) == bool(
        cell.flag("untie-embeddings-and-output-weights")
    ):
        tied = "tied" if config["tie_word_embeddings"] else "untied"
        yield problem(
            "L12",
            cell,
            ("untie-embeddings-and-output-weights",),
            f"config.json has {tied} embeddings (tie_word_embeddings = {config['tie_word_embeddings']})"
            " but --untie-embeddings-and-output-weights says otherwise",
        )


@rule("L13")
def kl_needs_reference(cell: Cell, _: Layout) -> Iterator[Problem]:
    """A KL term (--kl-coef, --use-kl-loss) needs the reference model of --ref-load, and only one of
    --kl-coef and --kl-loss-coef may be non-zero.

    Source: miles miles/utils/arguments.py, miles_validate_args
    """
    kl_coef = _number(cell.flag("kl-coef"))
    kl_loss = _number(cell.flag("kl-loss-coef"))
    if (kl_coef or cell.flag("use-kl-loss")) and cell.flag("ref-load") is None:
        yield problem(
            "L13",
            cell,
            ("kl-coef",),
            "a KL term needs the reference model: --ref-load is not set",
            "set ref-load, or kl-coef 0 and no use-kl-loss",
        )
    if kl_coef and kl_loss:
        yield problem(
            "L13",
            cell,
            ("kl-coef", "kl-loss-coef"),
            f"--kl-coef {kl_coef} and --kl-loss-coef {kl_loss} are both non-zero; miles takes one KL",
            "set one of them to 0",
        )


@rule("L14")
def offload_never_onloaded(cell: Cell, _: Layout) -> Iterator[Problem]:
    """Offload flags under a launcher that never onloads the engines (train_async.py) leave them offloaded
    from the start.

    Source: miles train_async.py (it never onloads the engines), recorded as never_onloaded in
    miles/launchers.yaml
    """
    for name in cell.launcher.never_onloaded:
        if cell.flag(name):
            yield problem(
                "L14",
                cell,
                (name,),
                f"--{name} under {cell.spec.launch.script}: engines offloaded at start are never onloaded",
                f"delete it in {cell.launcher.mode} mode"
                " (optimizer-cpu-offload is a different thing and fine)",
            )


def _number(value: object) -> float:
    try:
        return float(str(value)) if value not in (None, False) else 0.0
    except ValueError:
        return 0.0
