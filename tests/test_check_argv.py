"""F1-F4: every flag against the catalog of the miles version a cell targets; whole messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner import check, pipeline
from runner.spec import locate

MATRICES = locate.BUNDLED_MATRICES
ROCM = MATRICES / "rocm" / "glm5-async.yaml"
NV = MATRICES / "nv" / "glm5-colocate.yaml"
MAIN = "31f1ca96"


def found(write, overlay: str, base: Path = ROCM, only: str = "F") -> list[str]:
    cell = pipeline.cell(write("spec.yaml", f"extends: {base}\n{overlay}"))
    return [str(p) for p in check.run(cell) if p.rule.startswith(only)]


# --- the corpus: typos, bad choices, wrong types, removed flags ----------------------------------

TYPOS = [
    ("sglang", "sglang-ep-siz: 2", "sglang-ep-size"),
    ("misc", "atention-backend: flash", "attention-backend"),
    ("rollout", "rollout-batchsize: 8", "rollout-batch-size"),
    ("misc", "use-flash-attn-v9: true", "use-flash-attn"),
    ("perf", "tensor-model-paralel-size: 1", "tensor-model-parallel-size"),
    ("sglang", "sglang-mem-fraction-statc: 0.7", "sglang-mem-fraction-static"),
    ("grpo", "kl-los-coef: 0.0", "kl-loss-coef"),
]


@pytest.mark.parametrize(("group", "line", "meant"), TYPOS)
def test_a_typo_is_f1_with_did_you_mean(write, group: str, line: str, meant: str) -> None:
    name = line.split(":")[0]
    assert found(write, f"args:\n  {group}:\n    {line}\n") == [
        f"spec.yaml:4: error [F1] args.{group}.{name}: --{name} is not a flag of miles dc8b499b"
        " (nor of Megatron and the SGLang its container installs)\n"
        f"  ==> did you mean {meant!r}?"
    ]


BAD_CHOICES = [
    (
        "grpo",
        "advantage-estimator: grop",
        "grpo, gspo, reinforce_plus_plus, reinforce_plus_plus_baseline, ppo, on_policy_distillation",
        "grpo",
    ),
    ("grpo", "kl-loss-type: lowvar_kl", "k1, k2, k3, low_var_kl", "low_var_kl"),
    ("optimizer", "lr-decay-style: cosin", "constant, linear, cosine, inverse-square-root, WSD", "cosine"),
    ("perf", "recompute-granularity: ful", "full, selective", "full"),
    (
        "sglang",
        "sglang-moe-a2a-backend: deep_ep",
        "none, deepep, mooncake, nixl, mori, ascend_fuseep, flashinfer",
        "deepep",
    ),
]


@pytest.mark.parametrize(("group", "line", "choices", "meant"), BAD_CHOICES)
def test_a_value_outside_the_choices_is_f3(write, group: str, line: str, choices: str, meant: str) -> None:
    name, value = (part.strip() for part in line.split(":"))
    assert found(write, f"args:\n  {group}:\n    {line}\n", only="F3") == [
        f"spec.yaml:4: error [F3] args.{group}.{name}: --{name} {value} is not one of its choices: {choices}\n"
        f"  ==> did you mean {meant!r}?"
    ]


@pytest.mark.parametrize(
    ("group", "line", "rule"),
    [
        ("misc", "attention-backend: flsh", "M13"),
        ("misc", "moe-token-dispatcher-type: all2all", "M12"),
        ("sglang", "sglang-nsa-decode-backend: tilelng", "S12"),
        ("perf", "tensor-model-parallel-size: one", "G4"),
    ],
)
def test_a_value_a_dedicated_rule_judges_is_one_error(write, group: str, line: str, rule: str) -> None:
    """F3/F4 leave these to G4, M12, M13 and S12, which list the choices too: one error per value."""
    cell = pipeline.cell(write("spec.yaml", f"extends: {ROCM}\nargs:\n  {group}:\n    {line}\n"))
    errors = [p.rule for p in check.run(cell) if p.severity == "error" and p.key.endswith(line.split(":")[0])]
    assert errors[0] == rule and not [
        e for e in errors if e.startswith("F")
    ]  # P rules add the platform's view


def test_a_word_for_a_number_is_f4(write) -> None:
    assert found(write, "args:\n  rollout:\n    rollout-batch-size: eight\n") == [
        "spec.yaml:4: error [F4] args.rollout.rollout-batch-size: --rollout-batch-size takes an integer,"
        " got 'eight'"
    ]


def test_a_fraction_for_an_integer_is_f4(write) -> None:
    assert found(write, "args:\n  perf:\n    max-tokens-per-gpu: 20.5\n", only="F4") == [
        "spec.yaml:4: error [F4] args.perf.max-tokens-per-gpu: --max-tokens-per-gpu takes an integer, got 20.5"
    ]


def test_a_list_for_one_value_is_f4_arity(write) -> None:
    assert found(write, "args:\n  optimizer:\n    lr: [1e-6, 2e-6]\n") == [
        "spec.yaml:4: error [F4] args.optimizer.lr: --lr takes one value (a number), got a list of 2"
    ]


def test_a_value_flag_written_as_a_switch_is_f4(write) -> None:
    assert found(write, "args:\n  ckpt:\n    save-interval: true\n") == [
        "spec.yaml:4: error [F4] args.ckpt.save-interval: --save-interval takes one value (an integer),"
        " got true (it would be passed with none)"
    ]


def test_a_switch_given_a_value_is_f4(write) -> None:
    assert found(write, "args:\n  rollout:\n    rollout-shuffle: 'yes'\n") == [
        "spec.yaml:4: error [F4] args.rollout.rollout-shuffle: --rollout-shuffle is a switch and takes no"
        " value, got 'yes'\n"
        "  ==> write `rollout-shuffle: true`"
    ]


def test_false_and_references_are_not_judged(write) -> None:
    overlay = "args:\n  rollout:\n    rollout-shuffle: false\n    prompt-data: $${DATA}\n"
    assert found(write, overlay) == []


def test_a_removed_flag_names_the_version_that_had_it(write) -> None:
    """The GLM-5 NVIDIA spec against miles main: --disable-weights-backuper is gone."""
    assert found(write, f"miles_version: {MAIN}\n", base=NV) == [
        f"{_rel(NV)}:59: error [F1] args.misc.disable-weights-backuper: --disable-weights-backuper is not a flag"
        " of miles 31f1ca96 (nor of Megatron and the SGLang its container installs); miles dc8b499b accepts it\n"
        "  ==> drop it, or check against miles dc8b499b (miles_version: dc8b499b)"
    ]


def _rel(path: Path) -> str:
    return str(path)  # the spec lies outside the test's working directory: shown whole


# --- aliases: resolved before any rule runs ------------------------------------------------------


def test_an_alias_is_seen_by_every_rule_under_its_canonical_name(write) -> None:
    def rules(line: str) -> list[str]:
        overlay = f"args:\n  sglang:\n    sglang-ep-size: !delete\n  misc:\n    {line}\n"
        cell = pipeline.cell(write("spec.yaml", f"extends: {ROCM}\n{overlay}"))
        return [p.rule for p in check.run(cell)]

    canonical = rules("sglang-ep-size: 3")
    assert len(canonical) >= 2 and not [r for r in canonical if r.startswith("F")]
    assert rules("sglang-expert-parallel-size: 3") == canonical
    assert rules("sglang-ep: 3") == canonical


def test_a_flag_under_two_spellings_is_f2_naming_both(write) -> None:
    problems = found(write, "args:\n  misc:\n    sglang-expert-parallel-size: 2\n")
    assert problems == [
        f"{_rel(ROCM)}:39: error [F2] args.misc.sglang-expert-parallel-size: --sglang-ep-size is set under 2"
        " spellings: --sglang-ep-size, --sglang-expert-parallel-size; argparse keeps the last one on the command"
        " line\n"
        "  ==> also at spec.yaml:4\n"
        "  ==> keep one, as sglang-ep-size"
    ]


# --- which version applies -----------------------------------------------------------------------


def test_no_miles_version_means_the_newest_shipped_and_explain_says_so(cli, write) -> None:
    path = write("spec.yaml", f"extends: {ROCM}\nmiles_version: !delete\n")
    result = cli("explain", str(path), "args.sglang.sglang-dp-size")
    assert result.code == 0, result.err
    assert result.out.splitlines()[-3:] == [
        "flags checked against the newest shipped catalog (2026-08-21-31f1ca96.json):"
        " the spec names no miles_version",
        "hardware facts of mi355x on its miles-31f1ca96 stack (the container of miles 31f1ca96):"
        " the newest shipped miles version, as the spec names none",
        f"MODEL_ARGS from {locate.PRESETS}/2026-08-21-31f1ca96/glm5-744B-A40B_4layer.yaml:"
        " miles 31f1ca96, the newest shipped version that has it (no miles_version)",
    ]


def test_without_a_stated_version_a_flag_another_version_has_only_warns(write) -> None:
    assert found(write, "miles_version: !delete\n", base=NV) == [
        f"{_rel(NV)}:59: warning [F1] args.misc.disable-weights-backuper: --disable-weights-backuper is not a"
        " flag of miles 31f1ca96 (nor of Megatron and the SGLang its container installs); miles dc8b499b accepts"
        " it; the spec names no miles_version, so this is not an error\n"
        "  ==> drop it, or check against miles dc8b499b (miles_version: dc8b499b)"
    ]


def test_an_unknown_miles_version_is_f0(cli, write) -> None:
    path = write("spec.yaml", f"extends: {ROCM}\nmiles_version: abc123\n")
    result = cli("validate", str(path))
    assert result.code == 2
    assert (
        "error [F0] miles_version: miles_version 'abc123' names no single shipped flag catalog"
        in result.out + result.err
    )


def test_with_miles_root_the_checkouts_own_flags_decide(cli, write) -> None:
    checkout = Path(__file__).parent / "data" / "flags" / "miles"
    result = cli("validate", str(NV), "--miles-root", str(checkout), "--format", "json")
    assert result.code == 2
    problems = json.loads(result.out)["problems"]
    removed = [p for p in problems if p["key"] == "args.misc.disable-weights-backuper"]
    assert removed[0]["message"] == (
        f"--disable-weights-backuper is not a flag of the miles checkout at {checkout} (nor of Megatron and"
        " SGLang as checked with it); miles dc8b499b accepts it"
    )
    assert {p["key"] for p in problems if p["rule"] == "F1"} >= {"args.rollout.rollout-shuffle"}
    explained = cli("explain", str(NV), "--miles-root", str(checkout), "--format", "json")
    assert json.loads(explained.out)["flags"]["why"].startswith(
        f"the checkout at {checkout}: its own miles flags"
    )


def test_a_checkout_without_argument_modules_keeps_the_shipped_catalog(cli) -> None:
    checkout = Path(__file__).parent / "data" / "fake-miles"
    result = cli("explain", str(ROCM), "--miles-root", str(checkout), "--format", "json")
    assert json.loads(result.out)["flags"]["why"] == (
        "miles dc8b499b, as the spec's miles_version says (2026-05-13-dc8b499b.json);"
        f" the checkout at {checkout} has no miles/utils/arguments.py to read"
    )


def test_flags_show_finds_any_spelling(cli) -> None:
    result = cli("flags", "show", "sglang-ep", "--miles-version", "dc8b499b")
    assert result.code == 0
    assert result.out.splitlines()[-1] == (
        "--sglang-ep-size [sglang] int aliases: --sglang-expert-parallel-size, --sglang-ep"
        "  (sglang/srt/server_args.py:4900)"
    )


# --- flags a custom function's module adds (miles' add_arguments), read from the checkout ----------

PLUGINS = Path(__file__).parent / "data" / "custom-flags"
AGENT = "custom-generate-function-path: plugins.agent.generate"


def custom(write, flags: str, miles_root: Path | None = PLUGINS, env: str = "") -> list[str]:
    spec = write("spec.yaml", f"extends: {ROCM}\nargs:\n  misc:\n    {flags}\n{env}")
    (cell,) = [c for c in pipeline.cells(spec, miles_root=miles_root) if c.id == "spec"]
    return [str(p) for p in check.run(cell) if p.rule.startswith("F")]


def test_the_flags_a_custom_functions_module_adds_are_known(write) -> None:
    assert custom(write, f"{AGENT}\n    agent-turns: 3\n    agent-mode: careful") == []


def test_a_flag_the_read_function_adds_is_judged_like_miles_own(write) -> None:
    assert custom(write, f"{AGENT}\n    agent-mode: hasty") == [
        "spec.yaml:5: error [F3] args.misc.agent-mode: --agent-mode hasty is not one of its choices: fast, careful\n"
        "  ==> did you mean 'fast'?"
    ]


def test_a_flag_no_function_read_adds_is_an_error_naming_them(write) -> None:
    assert custom(write, f"{AGENT}\n    agent-turn: 3") == [
        "spec.yaml:5: error [F1] args.misc.agent-turn: --agent-turn is not a flag of miles dc8b499b (nor of"
        " Megatron and the SGLang its container installs), nor does the function of"
        " --custom-generate-function-path (plugins.agent.generate) add it\n"
        "  ==> did you mean 'agent-turns'?"
    ]


def test_a_function_not_read_leaves_a_warning_that_says_why(write) -> None:
    assert custom(write, "custom-generate-function-path: plugins.opaque.generate\n    opaque-count: 2") == [
        "spec.yaml:5: warning [F1] args.misc.opaque-count: --opaque-count is not a flag of miles dc8b499b (nor"
        " of Megatron and the SGLang its container installs); the function of --custom-generate-function-path"
        " (plugins.opaque.generate) may add it, but plugins/opaque.py:12: an add_arguments made by code is"
        " not read\n"
        "  ==> search the catalog: run-matrix flags show TEXT"
    ]
    assert custom(write, f"{AGENT}\n    agent-turns: 3", miles_root=None) == [
        "spec.yaml:5: warning [F1] args.misc.agent-turns: --agent-turns is not a flag of miles dc8b499b (nor"
        " of Megatron and the SGLang its container installs); the function of --custom-generate-function-path"
        " (plugins.agent.generate) may add it, but no checkout is named to read its module from"
        " (--miles-root, $MILES_ROOT)\n"
        "  ==> search the catalog: run-matrix flags show TEXT"
    ]


def test_under_the_legacy_rollout_miles_adds_no_functions_flags(write) -> None:
    env = "env:\n  MILES_USE_LEGACY_ROLLOUT_V1: '1'\n"
    assert custom(write, f"{AGENT}\n    agent-turns: 3", env=env) == [
        "spec.yaml:5: error [F1] args.misc.agent-turns: --agent-turns is not a flag of miles dc8b499b (nor of"
        " Megatron and the SGLang its container installs)\n"
        "  ==> search the catalog: run-matrix flags show TEXT"
    ]


def test_miles_mains_session_verify_agent_flags_pass_with_its_checkout(write, upstream_miles) -> None:
    agent = "custom-generate-function-path: miles.utils.test_utils.session_verify_agent.generate"
    flags = f"{agent}\n    session-verify-cycles: 2\n    tool-call-failure-mode: rollback"
    found = custom(write, f"{flags}\n    custom-agent-function-path: a.b", miles_root=upstream_miles(MAIN))
    assert found == []  # before they were read, each was an F1 warning
