"""run-matrix import on both of miles' CI platforms: a test that registers for CUDA and ROCm is one spec
with a platform axis, its AMD side recorded with what miles' ROCm CI sets (MILES_HARDWARE_PLATFORM=rocm).

The checkout is ``fake-miles`` with ``main-layout`` and ``platforms`` laid over it (see their READMEs).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner.importer import Request, import_test
from runner.spec.load import DELETE, load
from tests.conftest import DATA

pytestmark = pytest.mark.allow_subprocess  # the import runs each script in a sandbox interpreter

FOLDER = "tests/e2e/platforms"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)  # read in the sandbox as the unprivileged user nobody
    root = tmp_path / "miles"
    for layer in ("fake-miles", "main-layout", "platforms"):
        shutil.copytree(DATA / layer, root, dirs_exist_ok=True)
    return root


def imported(checkout: Path, tmp_path: Path, test: str, **options: object) -> tuple[Path, str]:
    spec = tmp_path / "out" / f"{Path(test).stem}.yaml"
    import_test(Request(checkout / FOLDER / test, spec, miles_root=checkout, **options))  # type: ignore[arg-type]
    return spec, spec.read_text()


def rendered(cli, cell: str) -> dict:
    result = cli("render", cell, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)["cells"][0]


def test_a_test_of_both_platforms_is_one_spec_whose_amd_side_says_why_it_differs(checkout, tmp_path, cli):
    spec, text = imported(checkout, tmp_path, "test_both.py")
    data = load(spec).data
    assert data["hardware"] == "h200"
    assert data["ci"] == {
        "backend": "cuda",
        "suite": "stage-c-4-gpu-h200",
        "est_time": 600,
        "labels": ["megatron"],
    }
    assert data["matrix"]["axes"] == {"platform": ["cuda", "rocm"]}
    assert data["matrix"]["adjust"] == {
        "platform-rocm": {"match": {"platform": "rocm"}, "overlay": "components/test_both-platform-rocm.yaml"}
    }
    assert data["args"]["misc"]["sglang-attention-backend"] == "fa3"
    amd = load(spec.parent / "components" / "test_both-platform-rocm.yaml").data
    assert amd["hardware"] == "mi350x"
    assert amd["ci"] == {
        "backend": "rocm",
        "suite": "stage-c-4-gpu-mi350",
        "est_time": 900,
        "labels": ["megatron", "amd"],
    }
    assert amd["args"] == {
        "misc": {"sglang-attention-backend": "triton", "sglang-disable-custom-all-reduce": True}
    }
    assert amd["env"] == {"HSA_NO_SCRATCH_RECLAIM": "1", "NCCL_ALGO": DELETE}
    assert amd["why"] == {
        "hardware, ci": "miles' AMD (ROCm) CI runs the test in suite stage-c-4-gpu-mi350 on runners labelled"
        " [self-hosted, amd, mi350, 4gpu] (.github/workflows/pr-test-rocm.yml:7) (register_rocm_ci at"
        " test_both.py:11)",
        "args.misc.{sglang-attention-backend, sglang-disable-custom-all-reduce}, env.{HSA_NO_SCRATCH_RECLAIM,"
        " NCCL_ALGO}": "MILES_HARDWARE_PLATFORM=rocm selects scripts/amd/run_tiny.py (read at test_both.py:3;"
        " set by .github/workflows/_run-ci-rocm.yml:12)",
    }
    assert "which is no known switch" not in text  # the variable is the platform's, not a switch
    cuda, rocm = rendered(cli, str(spec)), rendered(cli, f"{spec}[platform=rocm]")
    assert "--sglang-attention-backend triton" in " ".join(rocm["train_args"])
    assert "--sglang-attention-backend fa3" in " ".join(cuda["train_args"])
    assert (rocm["env"].get("HSA_NO_SCRATCH_RECLAIM"), cuda["env"].get("NCCL_ALGO")) == ("1", "Ring")


def test_the_amd_side_is_the_reviewers_table_of_what_it_changes(checkout, tmp_path, cli):
    spec, _ = imported(checkout, tmp_path, "test_both.py")
    result = cli("diff", str(spec), f"{spec}[platform=rocm]", "--format", "json")
    assert result.code == 0, result.err
    rows = {row["key"]: row for row in json.loads(result.out)["differences"]}
    assert rows["args.misc.sglang-attention-backend"]["a"] == "fa3"
    assert rows["args.misc.sglang-attention-backend"]["b"] == "triton"
    assert rows["args.misc.sglang-attention-backend"]["why"].startswith(
        "MILES_HARDWARE_PLATFORM=rocm selects"
    )
    assert rows["hardware"]["b"] == "mi350x"


def test_hardware_of_a_platform_imports_that_side_alone_in_its_ci_environment(checkout, tmp_path):
    spec, _text = imported(checkout, tmp_path, "test_both.py", hardware="mi350x")
    data = load(spec).data
    assert "matrix" not in data
    assert data["hardware"] == "mi350x"
    assert data["ci"]["backend"] == "rocm"
    assert data["args"]["misc"]["sglang-attention-backend"] == "triton"
    nvidia, _ = imported(checkout, tmp_path, "test_both.py", hardware="h200", force=True)
    assert load(nvidia).data["args"]["misc"]["sglang-attention-backend"] == "fa3"


def test_a_rocm_only_test_gives_amd_cells_recorded_as_the_rocm_ci_runs_it(checkout, tmp_path):
    spec, _text = imported(checkout, tmp_path, "test_amd_only.py")
    data = load(spec).data
    assert data["hardware"] == "mi350x"  # nightly-stage-c-8-gpu-mi350: only run_suite.py names it
    assert data["ci"]["backend"] == "rocm"
    assert "matrix" not in data
    assert str(data["args"]["misc"]["sglang-mem-fraction-static"]) == "0.5"  # the variable was set


def test_a_platform_miles_ci_disables_is_skipped_on_that_side_only(checkout, tmp_path, cli):
    (checkout / FOLDER / "test_rocm_disabled.py").write_text(
        (checkout / FOLDER / "test_both.py")
        .read_text()
        .replace('labels=["megatron", "amd"])', 'labels=["megatron", "amd"], disabled="hangs on MI350")')
    )
    spec, text = imported(checkout, tmp_path, "test_rocm_disabled.py")
    adjust = load(spec).data["matrix"]["adjust"]
    assert adjust["ci-disabled-rocm"]["match"] == {"platform": "rocm"}
    assert adjust["ci-disabled-rocm"]["skip"]["reason"] == "disabled in miles' CI: hangs on MI350"
    assert "# note: miles' ROCm CI disables this test; the skip's expires:" in text
    listed = json.loads(cli("list", str(spec), "--format", "json").out)["cells"]
    assert [(c["id"], c["status"]) for c in listed] == [
        ("test_rocm_disabled", "runnable"),
        ("test_rocm_disabled[platform=rocm]", "skipped"),
    ]


def test_an_amd_side_the_rules_reject_leaves_the_nvidia_side_imported_with_the_reason(checkout, tmp_path):
    spec, text = imported(checkout, tmp_path, "test_rocm_disabled.py")  # the CUDA launcher on MI350
    assert "matrix" not in load(spec).data
    assert (
        "# note: the AMD (ROCm) side is not imported: run-matrix's rules reject it: [P4]"
        " args.*.sglang-disable-custom-all-reduce: SGLang's custom all-reduce must be disabled on mi350x"
    ) in text
    assert "is not written" not in text  # it was tried; the note above says why it is not there


def test_an_amd_side_that_raises_in_miles_own_code_is_an_upstream_bug_and_the_nvidia_side_imports(
    checkout, tmp_path
):
    spec, text = imported(checkout, tmp_path, "test_rocm_broken.py")
    assert load(spec).data["ci"]["backend"] == "cuda"
    assert (
        "# note: the AMD (ROCm) side is not imported: under miles' AMD (ROCm) CI environment the test raises"
        " AttributeError: module 'miles.utils.external_utils.command_utils' has no attribute"
        " 'exec_command_that_miles_does_not_have' at scripts/amd/run_tiny.py:24 (a line of the miles"
        " checkout's own code) under the recorder"
    ) in text
    assert "miles raises it itself: an upstream bug to report (test_rocm_broken.py:12)" in text


def test_a_suite_no_profile_runs_is_a_note_and_the_other_platform_imports(checkout, tmp_path):
    spec, text = imported(checkout, tmp_path, "test_unknown_suite.py")
    assert load(spec).data["hardware"] == "h200"
    assert (
        "# note: the AMD (ROCm) side is not imported: its suite 'stage-c-4-gpu-zz9' runs on hardware"
        " run-matrix has no profile for; add one (docs/hardware.md, Add new hardware) or pass --hardware NAME"
        " (test_unknown_suite.py:5)"
    ) in text


def test_a_test_that_asks_torch_which_build_it_is_gets_the_answer_of_each_platform(checkout, tmp_path):
    spec, _ = imported(checkout, tmp_path, "test_asks_torch.py")
    amd = load(spec.parent / "components" / "test_asks_torch-platform-rocm.yaml").data
    assert amd["args"]["misc"]["sglang-attention-backend"] == "triton"
    assert list(amd["why"].values())[1] == (
        "the test asks torch.version.hip (at test_asks_torch.py:10), answered as an AMD (ROCm) build of"
        " torch does"
    )


def test_a_workflow_that_does_not_parse_is_a_note_at_its_line_and_import_goes_on(checkout, tmp_path):
    (checkout / ".github/workflows/pr-test.yml").write_text("jobs:\n  a: [\n")
    spec, text = imported(checkout, tmp_path, "test_both.py")
    assert (
        "# note: miles' CI is known without it: .github/workflows/pr-test.yml does not parse as YAML" in text
    )
    assert load(spec).data["matrix"]["axes"] == {"platform": ["cuda", "rocm"]}  # h200 from the suite's name


def test_a_dockerfile_with_an_unclosed_quote_is_a_note_and_the_workflow_env_still_applies(checkout, tmp_path):
    (checkout / "docker/Dockerfile.rocm").write_text('FROM x\nENV A="unclosed\n')
    spec, text = imported(checkout, tmp_path, "test_both.py")
    assert "docker/Dockerfile.rocm: ENV 'A=\"unclosed': No closing quotation" in text
    amd = load(spec.parent / "components" / "test_both-platform-rocm.yaml").data
    assert amd["args"]["misc"]["sglang-attention-backend"] == "triton"


def test_the_rocm_environment_never_gives_the_recording_a_secret(checkout, tmp_path):
    workflow = checkout / ".github/workflows/_run-ci-rocm.yml"
    workflow.write_text(
        workflow.read_text().replace(
            "      MILES_HARDWARE_PLATFORM: rocm\n",
            "      MILES_HARDWARE_PLATFORM: rocm\n      WANDB_API_KEY: literal-secret\n",
        )
    )
    (checkout / FOLDER / "test_env.py").write_text(
        (checkout / FOLDER / "test_both.py")
        .read_text()
        .replace("    train()", "    train(f\"--wandb-group {os.environ.get('WANDB_API_KEY', 'none')} \")")
    )
    _, text = imported(checkout, tmp_path, "test_env.py")  # the secret stays the sandbox's stand-in
    assert "literal-secret" not in text
    assert "    wandb-group: $${WANDB_API_KEY}\n" in text


def test_miles_mains_amd_launchers_become_amd_cells_and_its_upstream_bug_a_note(upstream_miles, tmp_path):
    """At miles main 31f1ca96: MILES_HARDWARE_PLATFORM=rocm picks scripts/amd/run_inkling.py (SGLang's
    attention on triton) and scripts/amd/run_deepseek_v4.py; GLM-5.2's AMD launcher calls a helper main
    does not have."""
    main = upstream_miles("31f1ca96")
    scripts = main / "tests/e2e/megatron/model_scripts"
    out = tmp_path / "out"
    inkling = out / "inkling.yaml"
    import_test(Request(scripts / "test_inkling_small_4layer_ci.py", inkling, miles_root=main))
    amd = load(out / "components" / "inkling-platform-rocm.yaml").data
    assert amd["hardware"] == "mi350x"
    assert amd["args"] == {"sglang": {"sglang-attention-backend": "triton"}}
    assert amd["why"]["args.sglang.sglang-attention-backend"] == (
        "MILES_HARDWARE_PLATFORM=rocm selects scripts/amd/run_inkling.py (read at"
        " test_inkling_small_4layer_ci.py:3; set by .github/workflows/_run-ci-rocm.yml:68)"
    )
    glm = out / "glm52.yaml"
    import_test(Request(scripts / "test_glm5_2_744b_a40b_5layer_ci.py", glm, miles_root=main))
    text = glm.read_text()
    assert "matrix" not in load(glm).data
    assert (
        "'exec_command' at scripts/amd/run_glm5_2_744b_a40b.py:105 (a line of the miles checkout's own code)"
        in text
    )


def test_a_folder_anyone_may_write_to_is_never_taken_for_the_tree_its_components_go_to(checkout, tmp_path):
    """-o /tmp/x/spec.yaml, with a /tmp/components/ someone made: the AMD component goes beside the spec,
    never into the shared folder (which kept every earlier import's components, or a planted link)."""
    shared = tmp_path / "scratch"
    (shared / "components").mkdir(parents=True)
    shared.chmod(0o1777)
    spec = shared / "x" / "test_both.yaml"
    import_test(Request(checkout / FOLDER / "test_both.py", spec, miles_root=checkout))
    assert (shared / "x" / "components" / "test_both-platform-rocm.yaml").is_file()
    assert list((shared / "components").iterdir()) == []
    shared.chmod(0o755)
    (shared / "hardware").mkdir()  # now a matrices tree of one's own: its components/ is the tree's
    mine = shared / "y" / "test_both.yaml"
    import_test(Request(checkout / FOLDER / "test_both.py", mine, miles_root=checkout))
    assert [p.name for p in (shared / "components").iterdir()] == ["y-test_both-platform-rocm.yaml"]
