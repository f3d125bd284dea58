"""The checkout's MODEL_ARGS for a cell's launch: expanded in the sandbox, compared with the shipped preset."""

from __future__ import annotations

import shutil
import time
from dataclasses import replace

import pytest

from runner import pipeline
from runner.launch.checkout import _token_difference, launch_context, model_args, observer
from runner.launch.render import preset_tokens, render
from runner.spec import locate
from tests.conftest import DATA

pytestmark = pytest.mark.allow_subprocess
CHECKOUT = DATA / "fake-miles"
ROCM = locate.BUNDLED_MATRICES / "rocm/glm5-async.yaml"


def test_the_checkouts_glm5_preset_is_the_shipped_one():
    found = model_args(CHECKOUT, "glm5-744B-A40B_4layer")
    assert found is not None and found.tokens is not None
    assert found.tokens == preset_tokens(pipeline.cell(ROCM))


def test_no_preset_of_that_type_means_no_answer():
    assert model_args(CHECKOUT, "qwen3-4B") is None


def test_a_type_the_checkout_lacks_or_cannot_expand_keeps_the_shipped_preset_and_says_so(tmp_path):
    tmp_path.chmod(0o755)
    (tmp_path / "scripts/models").mkdir(parents=True)
    cell = pipeline.cell(ROCM)
    context, problems = launch_context(replace(cell, miles_root=tmp_path), {})
    assert context.model_args is None
    assert [p.message for p in problems] == [
        f"the checkout's execute_train cannot be observed (cannot load miles' helpers from {tmp_path}:"
        " ModuleNotFoundError: No module named 'miles'); using the shipped launch conventions (miles dc8b499b)",
        "the checkout has no scripts/models/glm5-744B-A40B_4layer.py or .sh; using the shipped preset"
        f" (miles {cell.preset.miles_commit[:8]})",
    ]
    (tmp_path / "scripts/models/glm5-744B-A40B_4layer.sh").write_text("exit 4\n")
    _, problems = launch_context(replace(cell, miles_root=tmp_path), {})
    assert [p.message for p in problems][1:] == [
        "the checkout's scripts/models/glm5-744B-A40B_4layer.sh fails with status 4 when bash sources it;"
        f" using the shipped preset (miles {cell.preset.miles_commit[:8]})"
    ]


def edited_checkout(tmp_path, old: str, new: str):
    """A copy of the stand-in checkout, readable by the sandbox's user, whose helper module has
    ``old`` replaced by ``new`` (once)."""
    checkout = tmp_path / "miles"
    shutil.copytree(CHECKOUT, checkout)
    for path in [tmp_path, *checkout.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    helpers = checkout / "miles/utils/external_utils/command_utils.py"
    text = helpers.read_text()
    assert old in text
    helpers.write_text(text.replace(old, new, 1))
    return checkout


def test_the_checkouts_own_execute_train_decides_the_runtime_env(tmp_path):
    """A checkout whose execute_train sets what the shipped conventions do not: said, and rendered."""
    checkout = edited_checkout(
        tmp_path,
        'env = {"PYTHONPATH": megatron_path,',
        'env = {"PYTHONUNBUFFERED": "1", "PYTHONPATH": f"{repo_base_dir}:{megatron_path}",',
    )
    cell = pipeline.cell(ROCM)
    context, problems = launch_context(replace(cell, miles_root=checkout), {})
    assert [(p.rule, p.message) for p in problems] == [
        (
            "launch",
            f"execute_train of {checkout} differs from the shipped launch conventions (miles dc8b499b),"
            " so the checkout's conventions are rendered:"
            f" PYTHONPATH={checkout}:/root/Megatron-LM (shipped: /root/Megatron-LM);"
            " PYTHONUNBUFFERED=1 (not in the shipped conventions)",
        )
    ]
    env = render(cell, context).env
    assert (env["PYTHONUNBUFFERED"], env["PYTHONPATH"]) == ("1", f"{checkout}:/root/Megatron-LM")
    assert (
        launch_context(replace(cell, miles_root=CHECKOUT), {})[1] == []
    )  # the shipped conventions hold for the stand-in


def test_a_stuck_execute_train_is_a_warning_once_per_command(tmp_path, monkeypatch):
    """A hostile (or broken) checkout whose execute_train never returns costs one probe timeout, not
    one per cell (the command's observer is given to each); render keeps the shipped conventions and
    says why."""
    from runner.knowledge import conventions

    monkeypatch.setattr(conventions, "PROBE_TIMEOUT_S", 2.0)
    checkout = edited_checkout(
        tmp_path, "    master = os.environ", "    while True:\n        pass\n    master = os.environ"
    )
    first, second = pipeline.cells(ROCM)  # [fp8_rollout=false], [fp8_rollout=true]
    started = time.monotonic()
    cells = [replace(cell, miles_root=checkout) for cell in (first, second)]
    observed = observer(cells)
    warnings = [launch_context(cell, {}, observed=observed)[1] for cell in cells]
    assert time.monotonic() - started < 10
    assert warnings[0] == warnings[1]
    assert warnings[0][0].message == (
        "the checkout's execute_train cannot be observed (it did not finish within 2 s in the sandbox (does"
        " it wait for something?)); using the shipped launch conventions (miles dc8b499b)"
    )
    assert (
        launch_context(replace(first, miles_root=CHECKOUT), {})[0].conventions == first.conventions
    )  # the stand-in's hold


def test_a_model_args_difference_names_each_flag_with_its_values():
    preset = ("--num-layers", "4", "--swiglu", "--rotary-base", "10000")
    found = ("--num-layers", "6", "--swiglu", "--qk-layernorm", "--rotary-base", "10000")
    assert _token_difference(preset, found) == "--num-layers 6 (preset: 4); checkout has --qk-layernorm"
    assert _token_difference(found, preset) == "--num-layers 4 (preset: 6); preset has --qk-layernorm"
    assert (
        _token_difference(preset, preset[2:] + preset[:2]) == "the same flags, in another order or repeated"
    )
