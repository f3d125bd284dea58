"""miles' launch conventions per pinned version: what render adds around the test's env, and which
version an import reads a checkout's launch against."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from runner import pipeline
from runner.importer import Request, import_test
from runner.launch.render import Context, render
from runner.spec import locate
from tests.conftest import DATA

ROCM = locate.BUNDLED_MATRICES / "rocm/glm5-async.yaml"
HELPERS = "miles/utils/external_utils/command_utils.py"


def env_of(write, version: str, extra: str = "", caller: dict[str, str] | None = None) -> dict[str, str]:
    spec = write("spec.yaml", f"extends: {ROCM}\nmiles_version: {version}\n{extra}")
    return dict(render(pipeline.one(str(spec)), Context(caller or {})).env)


def test_the_pr_era_puts_megatron_on_the_path_first(write):
    env = env_of(write, "dc8b499b")
    assert list(env)[:2] == ["PYTHONPATH", "CUDA_DEVICE_MAX_CONNECTIONS"]
    assert env["PYTHONPATH"] == "/root/Megatron-LM" and "PYTHONUNBUFFERED" not in env


def test_main_unbuffers_and_puts_the_checkout_first_on_the_path_last(write):
    env = env_of(write, "31f1ca96")
    assert next(iter(env)) == "PYTHONUNBUFFERED" and env["PYTHONUNBUFFERED"] == "1"
    assert list(env)[-1] == "PYTHONPATH"  # assigned after the test's own env vars, as miles does
    assert env["PYTHONPATH"] == "${MILES_ROOT}:/root/Megatron-LM"


def test_main_merges_the_tests_and_the_callers_path_without_repeats(write):
    extra = "env:\n  PYTHONPATH: /opt/extra:/root/Megatron-LM\n  FOO: bar\n"
    env = env_of(write, "31f1ca96", extra, caller={"PYTHONPATH": "/home/me/lib:/opt/extra"})
    assert env["PYTHONPATH"] == "${MILES_ROOT}:/root/Megatron-LM:/opt/extra:/home/me/lib"
    assert list(env)[-2:] == ["PYTHONPATH", "FOO"]  # where the test set it


@pytest.mark.allow_subprocess
def test_import_reads_an_unknown_checkout_against_the_conventions_its_launch_follows(tmp_path, in_repo):
    tmp_path.chmod(0o755)
    checkout = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", checkout)
    helpers = checkout / HELPERS
    text = helpers.read_text()
    text = text.replace(
        'env = {"PYTHONPATH": megatron_path, "CUDA_DEVICE_MAX_CONNECTIONS": "1"}',
        'env = {"PYTHONUNBUFFERED": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1"}',
    )
    text = text.replace(
        "    exec_command(\n        f'source",
        '    env["PYTHONPATH"] = f"{repo_base_dir}:{megatron_path}"\n    exec_command(\n        f\'source',
    )
    helpers.write_text(text)  # miles main's execute_train, as far as the env goes
    out = tmp_path / "spec.yaml"
    script = checkout / "test_glm5.py"  # less the flag miles main removed (F1 would refuse it)
    original = (DATA / "import" / "test_glm5_744b_a40b_4layer.py").read_text()
    script.write_text(original.replace("--disable-weights-backuper ", ""))
    import_test(Request(script, out, hardware="h200", miles_root=checkout))
    assert "\nmiles_version: 31f1ca96\n" in out.read_text()
    plain = tmp_path / "plain.yaml"
    import_test(
        Request(
            DATA / "import" / "test_glm5_744b_a40b_4layer.py",
            plain,
            hardware="h200",
            miles_root=DATA / "fake-miles",
        )
    )
    assert "\nmiles_version: dc8b499b\n" in plain.read_text()
    assert render(pipeline.one(str(out))).env["PYTHONPATH"] == "${MILES_ROOT}:/root/Megatron-LM"


@pytest.mark.allow_subprocess
def test_check_verifiers_reads_each_checks_parameters_from_the_checkout_as_text():
    tool = locate.PROJECT / "tools" / "launch" / "check_verifiers.py"
    done = subprocess.run([sys.executable, str(tool), str(DATA / "fake-miles"), "31f1ca96"], capture_output=True, text=True)
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stderr
    # the stand-in checkout's four checks keep miles main's signatures; it has no others (the FT
    # scenario's stand-in is in main-layout/)
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "ok   miles.utils.test_utils.comparisons.metrics.compare_metrics",
        "DIFF miles.utils.test_utils.comparisons.dumps.compare_dumps",
        "DIFF miles.utils.test_utils.comparisons.inference_engine_checksums.compare_inference_engine_checksums",
        "ok   miles.utils.test_utils.session_verify_runner.assert_session_verify_metrics",
        "ok   miles.utils.test_utils.reconfigure_assertions.assert_reconfigure_events",
        "ok   miles.utils.test_utils.reconfigure_assertions.assert_soak_reconfigure_events",
        "DIFF tests.e2e.ft.conftest_ft.scenario_deterministic._compare",
        "DIFF tests.e2e.ft.conftest_ft.scenario_with_failure._compare",
    ]
    assert lines[1].endswith(": no module miles/utils/test_utils/comparisons/dumps.py")
    assert lines[-1] == f"8 checks of miles 31f1ca96; 4 differ from {DATA / 'fake-miles'}"
