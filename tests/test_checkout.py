from __future__ import annotations

from pathlib import Path

from runner import pipeline
from runner.checkout import model_args
from runner.render import preset_tokens
from tests.conftest import DATA

CHECKOUT = DATA / "fake-miles"


def test_reads_model_args_statically():
    found = model_args(CHECKOUT, "glm5-744B-A40B_4layer")
    assert found is not None and found.tokens is not None
    cell = pipeline.cell(pipeline.locate.BUNDLED_MATRICES / "rocm/glm5-async.yaml")
    assert found.tokens == preset_tokens(cell)


def test_no_script_means_no_answer():
    assert model_args(CHECKOUT, "qwen3-4B") is None


def test_shell_expansion_is_not_guessed(tmp_path: Path):
    (tmp_path / "scripts" / "models").mkdir(parents=True)
    (tmp_path / "scripts" / "models" / "m.sh").write_text("MODEL_ARGS=(\n --num-layers ${LAYERS}\n)\n")
    found = model_args(tmp_path, "m")
    assert found is not None
    assert (found.tokens, found.reason) == (None, "it needs the shell to expand '${LAYERS}'")


def test_no_array(tmp_path: Path):
    (tmp_path / "scripts" / "models").mkdir(parents=True)
    (tmp_path / "scripts" / "models" / "m.sh").write_text("ARGS=(--a)\n")
    found = model_args(tmp_path, "m")
    assert found is not None and found.reason == "it declares no MODEL_ARGS=( ... ) array"


def test_comments_and_quotes(tmp_path: Path):
    (tmp_path / "scripts" / "models").mkdir(parents=True)
    (tmp_path / "scripts" / "models" / "m.sh").write_text(
        'NLAYERS=4\nMODEL_ARGS=(\n   --spec "a.b" "c"  # the spec\n   --moe-layer-freq [0]*3+[1]*1\n)\necho done\n'
    )
    found = model_args(tmp_path, "m")
    assert found is not None
    assert found.tokens == ("--spec", "a.b", "c", "--moe-layer-freq", "[0]*3+[1]*1")
