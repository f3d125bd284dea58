"""Exactness: the rendered GLM-5 launches equal what upstream miles runs (tests/data/upstream/)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from runner import pipeline
from runner.launch.render import Context, render
from tests.conftest import DATA

MATRICES = Path(__file__).parents[1] / "matrices"
CASES = [("nv", "nv/glm5-colocate.yaml"), ("rocm", "rocm/glm5-async.yaml")]
MODEL_SCRIPT = DATA / "fake-miles" / "scripts" / "models" / "glm5-744B-A40B_4layer.sh"


def upstream(platform: str) -> dict[str, object]:
    """What the upstream test runs, parsed from the captured commands."""
    lines = (DATA / "upstream" / f"glm5-{platform}.commands.txt").read_text().splitlines()
    ray_start = next(line for line in lines if "ray start --head" in line)
    submit = next(line for line in lines if "ray job submit" in line)
    tokens = shlex.split(submit.split(" -- ", 1)[1])
    assert tokens[:3] == ["python3", tokens[1], "${MODEL_ARGS[@]}"]
    env_json = submit.split("--runtime-env-json='", 1)[1].split("'", 1)[0]
    return {
        "train_script": Path(tokens[1]).name,
        "num_gpus": int(shlex.split(ray_start)[shlex.split(ray_start).index("--num-gpus") + 1]),
        "train_args": tokens[3:],
        "env": json.loads(env_json)["env_vars"],
    }


def flag_map(tokens: list[str] | tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """`--flag v1 v2 --switch` -> {flag: (v1, v2), switch: ()}; a repeated flag is an error."""
    flags: dict[str, list[str]] = {}
    current = None
    for token in tokens:
        if token.startswith("--"):
            current = token[2:]
            assert current not in flags, f"--{current} given twice"
            flags[current] = []
        else:
            assert current is not None, f"value {token!r} before any flag"
            flags[current].append(token)
    return {name: tuple(_number(v) for v in values) for name, values in flags.items()}


def _number(text: str) -> str:
    """argparse reads 0.70 and 0.7 as the same float: compare numbers as numbers."""
    try:
        return repr(float(text))
    except ValueError:
        return text


def model_args_of_upstream() -> list[str]:
    body = MODEL_SCRIPT.read_text().split("MODEL_ARGS=(", 1)[1].split(")", 1)[0]
    return shlex.split(body, comments=True)


@pytest.mark.parametrize(("platform", "spec"), CASES)
def test_train_script_and_gpus(platform: str, spec: str) -> None:
    launch = render(pipeline.cell(MATRICES / spec))
    expected = upstream(platform)
    assert launch.train_script == expected["train_script"]
    assert launch.num_gpus_per_node == expected["num_gpus"]


@pytest.mark.parametrize(("platform", "spec"), CASES)
def test_model_args_token_for_token(platform: str, spec: str) -> None:
    launch = render(pipeline.cell(MATRICES / spec))
    assert list(launch.model_args) == model_args_of_upstream()


@pytest.mark.parametrize(("platform", "spec"), CASES)
def test_train_args_as_flag_mapping(platform: str, spec: str) -> None:
    launch = render(pipeline.cell(MATRICES / spec))
    assert flag_map(launch.train_args) == flag_map(upstream(platform)["train_args"])  # type: ignore[arg-type]


@pytest.mark.parametrize(("platform", "spec"), CASES)
def test_train_args_keep_upstream_group_order(platform: str, spec: str) -> None:
    """Groups come in upstream's order (ckpt, rollout, optimizer, grpo, perf, sglang, ci, misc)."""
    cell = pipeline.cell(MATRICES / spec)
    expected = list(flag_map(upstream(platform)["train_args"]))  # type: ignore[arg-type]
    group_of = {name: g for g, flags in cell.spec.args.groups() for name in flags}
    ours = [group_of[name] for name in flag_map(render(cell).train_args)]
    theirs = [group_of[name] for name in expected]
    assert ours == sorted(theirs, key=[g for g, _ in cell.spec.args.groups()].index) == theirs


@pytest.mark.parametrize(("platform", "spec"), CASES)
def test_env_key_for_key(platform: str, spec: str) -> None:
    launch = render(pipeline.cell(MATRICES / spec))
    expected: dict[str, str] = upstream(platform)["env"]  # type: ignore[assignment]
    assert list(launch.env) == list(expected)
    assert {k: v for k, v in launch.env.items() if k != "NCCL_NVLS_ENABLE"} == {
        k: v for k, v in expected.items() if k != "NCCL_NVLS_ENABLE"
    }


@pytest.mark.parametrize(("platform", "spec"), CASES)
def test_nvls_is_a_run_time_probe_unless_the_caller_sets_it(platform: str, spec: str) -> None:
    cell = pipeline.cell(MATRICES / spec)
    probed = render(cell)
    if platform == "rocm":  # no nvidia-smi on an AMD node: upstream's probe prints 0 there, a constant
        assert (probed.env["NCCL_NVLS_ENABLE"], probed.probes) == ("0", {})
        assert probed.env["NCCL_NVLS_ENABLE"] == upstream(platform)["env"]["NCCL_NVLS_ENABLE"]  # type: ignore[index]
    else:
        assert probed.env["NCCL_NVLS_ENABLE"] == "${NCCL_NVLS_ENABLE}"
        assert "nvidia-smi topo -m" in probed.probes["NCCL_NVLS_ENABLE"]
    given = render(cell, Context(caller_env={"NCCL_NVLS_ENABLE": "0"}))
    assert given.env["NCCL_NVLS_ENABLE"] == upstream(platform)["env"]["NCCL_NVLS_ENABLE"]  # type: ignore[index]
    assert given.probes == {}
