"""import of a test whose model type only the --miles-root checkout has (a new model on an open PR):
its preset is expanded from the checkout, with a note, on both preset forms (miles main's
``scripts/models/*.py``, the PR #1124 head's ``*.sh``); without the checkout's file it is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.importer import Request, import_test
from runner.spec.load import load

pytestmark = pytest.mark.allow_subprocess  # the import runs the script in a sandbox interpreter

NEW = "tiny-new-1B"
TOKENS = "--swiglu --num-layers 4 --hidden-size 512 --ffn-hidden-size 1024 --num-attention-heads 8 --vocab-size 32000"
PRESETS = {
    "31f1ca96": (f"{NEW}.py", f'def model_args() -> str:\n    return "{TOKENS} "\n'),
    "dc8b499b": (f"{NEW}.sh", "MODEL_ARGS=(\n   " + TOKENS.replace(" --", "\n   --") + "\n)\n"),
}
TEST = f"""\
import miles.utils.external_utils.command_utils as U

U.execute_train(
    train_args="--colocate --lr 1e-6 --rollout-batch-size 8 ",
    num_gpus_per_node=8,
    megatron_model_type="{NEW}",
)
"""


def checkout_with_a_new_model(upstream_miles, tmp_path: Path, commit: str, preset: bool = True) -> Path:
    tmp_path.chmod(0o755)
    root = tmp_path / "miles"
    shutil.copytree(upstream_miles(commit), root, symlinks=True)
    if preset:
        name, text = PRESETS[commit]
        (root / "scripts" / "models" / name).write_text(text)
    (root / "tests" / "e2e" / "test_new_model.py").write_text(TEST)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


@pytest.mark.parametrize("commit", sorted(PRESETS))
def test_a_model_type_only_the_checkout_has_imports_with_a_note(upstream_miles, tmp_path, commit, cli):
    root = checkout_with_a_new_model(upstream_miles, tmp_path, commit)
    spec = tmp_path / "new.yaml"
    imported = import_test(
        Request(root / "tests/e2e/test_new_model.py", spec, hardware="h200", miles_root=root)
    )
    assert load(spec).data["model"] == {"type": NEW}
    name = PRESETS[commit][0]
    assert [n.message for n in imported.notes if "preset" in n.message] == [
        f"run-matrix ships no preset of {NEW!r}: MODEL_ARGS from the checkout's scripts/models/{name}"
    ]
    assert str(root) not in spec.read_text()
    assert cli("validate", str(spec), "--miles-root", str(root)).code == 0
    rendered = cli("render", str(spec), "--miles-root", str(root))
    assert rendered.code == 0, rendered.err
    assert "--num-layers 4 \\\n  --hidden-size 512 \\\n" in rendered.out


def test_a_model_type_neither_shipped_nor_in_the_checkout_is_refused(upstream_miles, tmp_path):
    root = checkout_with_a_new_model(upstream_miles, tmp_path, "dc8b499b", preset=False)  # main asserts first
    with pytest.raises(SpecError) as error:
        import_test(
            Request(
                root / "tests/e2e/test_new_model.py", tmp_path / "new.yaml", hardware="h200", miles_root=root
            )
        )
    assert f"no model preset named {NEW!r}" in str(error.value)
