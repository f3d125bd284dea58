"""A model type only the --miles-root checkout has: expanded from it, used, and said."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner import pipeline
from runner.errors import SpecError
from runner.knowledge import preset_sync
from runner.spec import locate
from tests.conftest import DATA

pytestmark = pytest.mark.allow_subprocess
SPEC = """
hardware: h200
model: {type: TYPE}
cluster: {gpus_per_node: 8}
launch: {script: train.py}
args:
  misc: {colocate: true}
"""
NOTE = (
    "spec.yaml:2: warning [model-args] model.type: run-matrix ships no preset of 'qwen9-new':"
    " MODEL_ARGS from the checkout's scripts/models/qwen9-new.{suffix}\n"
    "  ==> if the checkout is right, `run-matrix presets sync --miles-root DIR` ships its presets"
)


def checkout_with(tmp_path: Path, name: str, text: str) -> Path:
    """A copy of the stand-in checkout, readable by the sandbox's user, with one preset file more."""
    checkout = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", checkout)
    (checkout / "scripts/models" / name).write_text(text)
    for path in [tmp_path, *checkout.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return checkout


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("qwen9-new.py", 'def model_args():\n    return "--num-layers 3 --hidden-size 64 --swiglu"\n'),
        ("qwen9-new.sh", "MODEL_ARGS=(--num-layers 3 --hidden-size 64 --swiglu)\n"),
    ],
)
def test_a_type_only_the_checkout_has_validates_renders_and_explains(cli, write, tmp_path, name, text):
    checkout = checkout_with(tmp_path, name, text)
    write("spec.yaml", SPEC.replace("TYPE", "qwen9-new"))
    refused = cli("validate", "spec.yaml")
    assert refused.code == 2 and "no model preset named 'qwen9-new'" in refused.out + refused.err
    validated = cli("validate", "spec.yaml", "--miles-root", "miles")  # a relative path, too
    assert validated.code == 0, validated.out + validated.err
    assert NOTE.format(suffix=name.split(".")[1]) in validated.out
    rendered = cli("render", "spec.yaml", "--miles-root", str(checkout))
    assert rendered.code == 0, rendered.err
    assert "  --num-layers 3 \\\n  --hidden-size 64 \\\n  --swiglu \\\n" in rendered.out
    assert NOTE.format(suffix=name.split(".")[1]) in rendered.err
    explained = cli("explain", "spec.yaml", "--miles-root", "miles", "--format", "json")
    assert explained.code == 0, explained.err
    assert json.loads(explained.out)["model_args"]["file"] == str(checkout / "scripts/models" / name)


def test_a_shipped_type_is_still_the_shipped_preset(write, tmp_path):
    checkout = checkout_with(tmp_path, "qwen9-new.sh", "MODEL_ARGS=(--num-layers 3)\n")
    cell = pipeline.cell(write("spec.yaml", SPEC.replace("TYPE", "glm5-744B-A40B_4layer")))
    with_checkout = pipeline.select(["spec.yaml"], miles_root=checkout)[0]
    assert with_checkout.preset == cell.preset and with_checkout.notes == ()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("exit 5\n", "the checkout's scripts/models/qwen9-new.sh fails with status 5 when bash sources it"),
        ("true\n", "the checkout's scripts/models/qwen9-new.sh sets no MODEL_ARGS when bash sources it"),
        (
            "MODEL_ARGS=(3 --num-layers)\n",
            "the checkout's scripts/models/qwen9-new.sh: MODEL_ARGS start with '3', which follows no flag",
        ),
    ],
)
def test_a_checkout_preset_that_does_not_expand_is_an_error_with_its_reason(write, tmp_path, text, reason):
    checkout = checkout_with(tmp_path, "qwen9-new.sh", text)
    write("spec.yaml", SPEC.replace("TYPE", "qwen9-new"))
    with pytest.raises(SpecError) as caught:
        pipeline.select(["spec.yaml"], miles_root=checkout)
    assert str(caught.value) == (
        "spec.yaml:2: error [unknown-name] model.type: no model preset named 'qwen9-new' is shipped, and the"
        f" checkout's does not expand: {reason}\n"
        "  ==> fix the checkout's preset file, or name a shipped type (`run-matrix presets list`)"
    )


def test_a_type_neither_has_is_the_shipped_error(write, tmp_path):
    checkout = checkout_with(tmp_path, "qwen9-new.sh", "MODEL_ARGS=(--num-layers 3)\n")
    write("spec.yaml", SPEC.replace("TYPE", "qwen9-old"))
    with pytest.raises(SpecError, match="no model preset named 'qwen9-old'"):
        pipeline.select(["spec.yaml"], miles_root=checkout)


def test_sync_check_lists_only_the_one_preset_a_checkout_adds(cli, tmp_path, monkeypatch):
    checkout = checkout_with(tmp_path, "qwen9-new.sh", "MODEL_ARGS=(--num-layers 3)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(locate, "PRESETS", tmp_path / "models")
    folder = tmp_path / "models/2026-11-30-ffffffff"
    folder.mkdir(parents=True)
    for path, text in preset_sync.plan(checkout, check=True).texts.items():  # the checkout's own, as shipped
        if path.stem != "qwen9-new":
            (folder / path.name).write_text(text)
    (tmp_path / "models/2026-01-01-eeeeeeee").mkdir()  # an older version that has none of them
    checked = cli("presets", "sync", "--miles-root", "miles", "--check", "--format", "json")
    assert checked.code == 1  # the new type, and tiny-broken, which does not expand
    report = json.loads(checked.out)
    assert (report["folder"], report["changed"], report["removed"]) == (
        "models/2026-11-30-ffffffff",
        ["qwen9-new"],
        [],
    )
    text = cli("presets", "sync", "--miles-root", "miles", "--check")
    assert "qwen9-new: new (not in models/2026-11-30-ffffffff)" in text.out.splitlines()
