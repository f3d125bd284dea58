from __future__ import annotations

from pathlib import Path

import pytest

from runner import pipeline
from runner.errors import EnvironmentProblem
from runner.launch.planned import Planned
from runner.launch.render import Context, render
from runner.run.environment import entrypoint, job_env, probe
from runner.run.plan import Options
from runner.run.preview import preview
from runner.spec import locate

NV = locate.BUNDLED_MATRICES / "nv" / "glm5-colocate.yaml"


def planned(caller: dict[str, str]) -> Planned:
    cell = pipeline.cell(NV)
    return Planned(cell, render(cell, Context(caller, "/miles")), "nv/glm5-colocate.yaml", "")


@pytest.mark.allow_subprocess
def test_probes_run_here_unless_the_caller_decided():
    probes = {"NCCL_NVLS_ENABLE": "echo 1", "OTHER": "printf ' x '"}
    assert probe(probes, {"NCCL_NVLS_ENABLE": "0"}) == {"NCCL_NVLS_ENABLE": "0", "OTHER": "x"}
    with pytest.raises(EnvironmentProblem) as caught:
        probe({"BAD": "echo oops >&2; exit 3"}, {})
    assert str(caught.value) == "the probe for BAD failed (echo oops >&2; exit 3): oops"


def test_the_job_env_fills_references_and_carries_the_secrets_the_command_line_needs():
    caller = {"WANDB_API_KEY": "wandb-secret-123"}
    launch = planned(caller)
    env = job_env(launch, {"NCCL_NVLS_ENABLE": "0"}, caller)
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert env["WANDB_API_KEY"] == "wandb-secret-123"  # the entrypoint says "${WANDB_API_KEY}"
    assert list(env)[:3] == ["PYTHONPATH", "CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_NVLS_ENABLE"]
    line = entrypoint(launch.entry_argv)
    assert '--wandb-key "${WANDB_API_KEY}"' in line and "wandb-secret-123" not in line
    assert line.startswith("python3 /miles/train.py --spec miles_plugins.models.glm5.glm5 get_glm5_spec ")


def test_a_reference_nobody_sets_is_an_environment_problem():
    with pytest.raises(EnvironmentProblem) as caught:
        job_env(planned({}), {}, {})
    assert (
        str(caught.value)
        == "env.NCCL_NVLS_ENABLE refers to ${NCCL_NVLS_ENABLE}, which is not set: export NCCL_NVLS_ENABLE"
    )


def test_a_verify_jobs_references_reach_its_env_and_the_dry_run_shows_it(write):
    check = "miles.utils.test_utils.session_verify_runner.assert_session_verify_metrics"
    text = (
        f"extends: {NV}\nverify:\n  metrics:\n    call: {check}\n"
        "    args: {metrics_path: '$${RUN_DIR}/m.jsonl', assistant_text_threshold: 0.2}\n"
    )
    cell = pipeline.cell(write("spec.yaml", text))
    each = Planned(cell, render(cell, Context({}, "/miles")), "spec.yaml", "")
    env = job_env(each, {"NCCL_NVLS_ENABLE": "0"}, {"RUN_DIR": "/runs/7"})
    assert env["RUN_DIR"] == "/runs/7"  # the verify job's shell expands ${RUN_DIR} on the node
    with pytest.raises(EnvironmentProblem) as caught:
        job_env(each, {"NCCL_NVLS_ENABLE": "0"}, {})
    assert str(caught.value) == "verify.metrics.args refers to ${RUN_DIR}, which is not set: export RUN_DIR"
    (shown,) = preview(each, Options(None, None, Path("logs")), "run")["verify"]
    assert (shown["name"], shown["call"]) == ("metrics", check)
    # the shell leaves the reference alone ($ written \u0024): the program fills it, JSON intact
    assert shown["entrypoint"].endswith(
        f' {check} \'{{"metrics_path":"\\u0024{{RUN_DIR}}/m.jsonl","assistant_text_threshold":0.2}}\''
    )
