from __future__ import annotations

import json
import math
from dataclasses import replace

from junitparser import JUnitXml

from runner.results import report
from runner.results.outcome import (
    Attempt,
    CellResult,
    Check,
    ClusterRecord,
    PrepareRecord,
    RequirementResult,
    RunResult,
    Sample,
    Status,
)

BASE = {
    "spec": "matrices/rocm/glm5-async.yaml",
    "spec_chain": ("matrices/base/glm5-744b-a40b-4layer.yaml", "matrices/rocm/glm5-async.yaml"),
    "hardware": "mi355x",
    "content_hash": "b8ee19c25901",
}
PASSED = CellResult(
    "rocm/glm5-async",
    Status.PASSED,
    "",
    reproduce="run-matrix run matrices/rocm/glm5-async.yaml -k rocm/glm5-async",
    log="logs/rocm-glm5-async.log",
    seconds=31.5,
    prepare=(PrepareRecord("model", "hf-download", "skipped", "/root/models/GLM-5_4layer exists"),),
    attempts=(
        Attempt(
            1, "rocm-glm5-async-1a2b3c4d", "infra", "Ray lost the job (JOB_SUPERVISOR_ACTOR_DIED): gone", 3.0
        ),
        Attempt(2, "rocm-glm5-async-5e6f7a8b", "succeeded", "the job succeeded", 28.0),
    ),
    checks=(
        Check(
            "train/ppo_kl",
            "value <= 1e-08 at step 0",
            True,
            "train/ppo_kl: 0 (expected value <= 1e-08 at step 0)",
        ),
    ),
    metrics={"train/ppo_kl": (Sample("step", 0, 0.0),)},
    **BASE,  # type: ignore[arg-type]
)
FAILED = CellResult(
    "rocm/glm5-async[fp8_rollout=true]",
    Status.FAILED,
    "train/x is 0.5 at step 1; expected value <= 0.1 at every step",
    reproduce="run-matrix run matrices/rocm/glm5-async.yaml -k 'rocm/glm5-async[fp8_rollout=true]'",
    seconds=12.0,
    **BASE,  # type: ignore[arg-type]
)
SKIPPED = CellResult(
    "nv/glm5-colocate",
    Status.SKIPPED,
    "requires.te: transformer_engine is not installed (CK grouped GEMM)",
    reproduce="run-matrix run matrices/nv/glm5-colocate.yaml -k nv/glm5-colocate",
    requirements=(
        RequirementResult(
            "te", "package", False, False, "transformer_engine is not installed", "CK grouped GEMM"
        ),
    ),
    **{**BASE, "hardware": "h200"},  # type: ignore[arg-type]
)
RUN = RunResult(
    (PASSED, FAILED, SKIPPED),
    "2026-05-13T12:00:00+00:00",
    44.0,
    (ClusterRecord("http://127.0.0.1:8265", False),),
)


def test_exit_codes():
    assert RUN.exit_code == 1
    assert RunResult((PASSED, SKIPPED), "", 1.0).exit_code == 0
    assert RunResult((PASSED, SKIPPED), "", 1.0, strict=True).exit_code == 1
    interrupted = CellResult(
        "x", Status.INTERRUPTED, "interrupted (Ctrl-C); the job was stopped", reproduce="", **BASE
    )  # type: ignore[arg-type]
    assert RunResult((FAILED, interrupted), "", 1.0).exit_code == 130


def test_junit_has_one_case_per_cell_with_properties():
    suite = next(iter(JUnitXml.fromstring(report.junit(RUN).split("\n", 1)[1])))
    assert (suite.tests, suite.failures, suite.skipped, suite.errors) == (3, 1, 1, 0)
    cases = {case.name: case for case in suite}
    assert cases["rocm/glm5-async"].is_passed
    failure = cases["rocm/glm5-async[fp8_rollout=true]"].result[0]
    assert (failure.message, failure.type) == (FAILED.reason, "failure")
    assert cases["nv/glm5-colocate"].result[0].message == SKIPPED.reason
    properties = {
        p.name: p.value for p in cases["rocm/glm5-async"].child(__import__("junitparser").Properties)
    }
    assert properties == {
        "hardware": "mi355x",
        "spec_chain": "matrices/base/glm5-744b-a40b-4layer.yaml -> matrices/rocm/glm5-async.yaml",
        "content_hash": "b8ee19c25901",
        "reproduce": "run-matrix run matrices/rocm/glm5-async.yaml -k rocm/glm5-async",
        "log": "logs/rocm-glm5-async.log",
        "attempt_1": "rocm-glm5-async-1a2b3c4d: infra",
        "attempt_2": "rocm-glm5-async-5e6f7a8b: succeeded",
    }
    assert cases["rocm/glm5-async"].system_out == (
        "prepare model (hf-download): skipped: /root/models/GLM-5_4layer exists\n"
        "attempt 1 rocm-glm5-async-1a2b3c4d: infra: Ray lost the job (JOB_SUPERVISOR_ACTOR_DIED): gone\n"
        "attempt 2 rocm-glm5-async-5e6f7a8b: succeeded: the job succeeded\n"
        "check ok: train/ppo_kl: 0 (expected value <= 1e-08 at step 0)"
    )


def test_markdown_summary():
    assert report.markdown(RUN) == (
        "## run-matrix: 1 passed, 1 failed, 1 skipped in 44 s\n"
        "\n"
        "| cell | status | time | why |\n"
        "|---|---|---|---|\n"
        "| `rocm/glm5-async` | ✅ passed | 32 s | 1 check held |\n"
        "| `rocm/glm5-async[fp8_rollout=true]` | ❌ failed | 12 s | train/x is 0.5 at step 1; expected value <= 0.1 at every step |\n"
        "| `nv/glm5-colocate` | ⏭️ skipped | 0 s | requires.te: transformer_engine is not installed (CK grouped GEMM) |\n"
        "\n"
        "<details><summary><code>rocm/glm5-async</code></summary>\n"
        "\n"
        "- prepare model (hf-download): skipped: /root/models/GLM-5_4layer exists\n"
        "- attempt 1 rocm-glm5-async-1a2b3c4d: infra: Ray lost the job (JOB_SUPERVISOR_ACTOR_DIED): gone\n"
        "- attempt 2 rocm-glm5-async-5e6f7a8b: succeeded: the job succeeded\n"
        "- check ok: train/ppo_kl: 0 (expected value <= 1e-08 at step 0)\n"
        "\n"
        "Reproduce: `run-matrix run matrices/rocm/glm5-async.yaml -k rocm/glm5-async`\n"
        "\n"
        "</details>\n"
        "\n"
        "<details><summary><code>nv/glm5-colocate</code></summary>\n"
        "\n"
        "- requirement unmet: requires.te: transformer_engine is not installed (CK grouped GEMM)\n"
        "\n"
        "Reproduce: `run-matrix run matrices/nv/glm5-colocate.yaml -k nv/glm5-colocate`\n"
        "\n"
        "</details>\n"
    )


def test_json_report_has_metrics_and_attempts():
    data = json.loads(report.to_json(RUN))
    assert (data["ok"], data["exit_code"], data["clusters"]) == (
        False,
        1,
        [{"address": "http://127.0.0.1:8265", "started": False, "pid": None}],
    )
    cell = data["cells"][0]
    assert cell["metrics"] == {"train/ppo_kl": [{"kind": "step", "step": 0, "value": 0.0}]}
    assert [a["outcome"] for a in cell["attempts"]] == ["infra", "succeeded"]
    assert cell["status"] == "passed" and cell["spec_chain"] == list(BASE["spec_chain"])


def test_json_is_strict_a_nan_metric_is_its_name():
    nan = replace(RUN.cells[0], metrics={"train/grad_norm": (Sample("step", 0, math.nan), Sample("step", 1, -math.inf))})
    text = report.to_json(replace(RUN, cells=(nan,)))
    assert "NaN" not in text and "Infinity" not in text
    values = json.loads(text)["cells"][0]["metrics"]["train/grad_norm"]
    assert [v["value"] for v in values] == ["nan", "-inf"]
