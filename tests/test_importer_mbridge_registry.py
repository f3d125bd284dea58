"""A test whose preflight asks mbridge's bridge registry (native LoRA, miles PR 1792): import's stand-in
for mbridge answers it with the model types mbridge registers itself at the commit the checkout's
images pin, and those the checkout's own code registers through the stand-in's ``register_model``."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.importer import capture
from runner.importer.knowledge import knowledge
from tests.conftest import DATA
from tests.test_knowledge_checkpoints import hf_cache

pytestmark = pytest.mark.allow_subprocess

INSTALL = "RUN pip install git+https://github.com/ISEEKYAN/mbridge.git@{} --no-deps\n"
# the shape of PR 1792: miles_plugins/mbridge registers miles' own bridges as it imports (one type, or
# a list), miles_plugins/lora's preflight reads the checkpoint's model_type and asks the registry
FILES = {
    "miles_plugins/__init__.py": "",
    "miles_plugins/mbridge/__init__.py": "from .glm4moe_lite import GLM4MoELiteBridge\nfrom .qwen3_5 import Qwen3_5Bridge\n",
    "miles_plugins/mbridge/glm4moe_lite.py": """
        import torch
        from mbridge.core import register_model
        from mbridge.models import DeepseekV3Bridge


        @register_model("glm4_moe_lite")
        class GLM4MoELiteBridge(DeepseekV3Bridge):
            def _weight_to_mcore_format(self, name, weights):
                return torch.cat(weights)
        """,
    "miles_plugins/mbridge/qwen3_5.py": """
        from mbridge.core import register_model
        from mbridge.models import Qwen2MoEBridge


        @register_model(["qwen3_5", "qwen3_5_moe"])
        class Qwen3_5Bridge(Qwen2MoEBridge):
            pass
        """,
    "miles_plugins/lora/__init__.py": "from miles_plugins.lora.registry import preflight_native_lora\n",
    "miles_plugins/lora/registry.py": """
        import json
        import os


        def preflight_native_lora(hf_checkpoint, strict=False):
            with open(os.path.join(hf_checkpoint, "config.json")) as handle:
                model_type = json.load(handle)["model_type"]
            try:
                import miles_plugins.mbridge  # noqa: F401  (registers miles' bridges)
                from mbridge.core.bridge import _MODEL_REGISTRY

                registered = model_type in _MODEL_REGISTRY
            except Exception:
                registered = False
            if strict:
                assert registered, f"[lora-preflight] no mbridge bridge is registered for model_type {model_type!r}"
            return model_type
        """,
}
TEST = """
import miles.utils.external_utils.command_utils as U
from miles_plugins.lora import preflight_native_lora

U.exec_command("hf download {repo} --local-dir /root/models/model")
model_type = preflight_native_lora("/root/models/model", strict=True)
U.execute_train(train_args=f"--colocate --lr 1e-6 --wandb-group {{model_type}} ", num_gpus_per_node=8,
                megatron_model_type="glm5-744B-A40B_4layer")
"""
# the HF cache's configs: the model_type each test needs, nothing more
CACHED = {
    "zai-org/GLM-4.7-Flash": {"model_type": "glm4_moe_lite"},
    "Qwen/Qwen3.5-35B-A3B": {"model_type": "qwen3_5_moe"},
    "moonshotai/Kimi-K2-Instruct": {"model_type": "kimi_k2"},
}


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmp_path.chmod(0o755)  # the sandbox reads it as the unprivileged user nobody
    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    for name, text in {**FILES, "docker/Dockerfile": INSTALL.format(knowledge().mbridge.commit)}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    hf_cache(tmp_path / "hf" / "hub", CACHED)
    return root


def script_of(root: Path, repo: str) -> Path:
    path = root / "tests" / "e2e" / "lora_native" / "test_case.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEST.format(repo=repo).lstrip())
    return path


@pytest.mark.parametrize(
    ("repo", "model_type"),
    [
        ("Qwen/Qwen3-0.6B", "qwen3"),  # registered by mbridge itself (shipped), config shipped too
        ("zai-org/GLM-4.7-Flash", "glm4_moe_lite"),  # by the checkout's register_model("...")
        ("Qwen/Qwen3.5-35B-A3B", "qwen3_5_moe"),  # by the checkout's register_model([...])
    ],
)
def test_a_registered_model_type_imports(checkout, repo, model_type):
    run = capture.record(script_of(checkout, repo), {}, [], miles_root=checkout)
    assert f"--wandb-group {model_type} " in run.calls[0].args["train_args"]


def test_a_model_type_registered_nowhere_fails_as_the_checkout_says(checkout):
    with pytest.raises(SpecError) as error:
        capture.record(script_of(checkout, "moonshotai/Kimi-K2-Instruct"), {}, [], miles_root=checkout)
    assert (
        "test_case.py:5: error [import]: test_case.py cannot be imported: it raises AssertionError:"
        " [lora-preflight] no mbridge bridge is registered for model_type 'kimi_k2' at"
        " miles_plugins/lora/registry.py:16 (a line of the miles checkout's own code) under the recorder"
    ) in str(error.value)


def test_a_checkout_pinning_another_mbridge_is_refused_saying_so(checkout):
    (checkout / "docker" / "Dockerfile").write_text("FROM x\n" + INSTALL.format("0123abcd"))
    with pytest.raises(SpecError) as error:
        capture.record(script_of(checkout, "Qwen/Qwen3-0.6B"), {}, [], miles_root=checkout)
    assert (
        "test_case.py:5: error [import]: test_case.py cannot be imported: it asks whether 'qwen3' is in"
        " mbridge.core.bridge._MODEL_REGISTRY, mbridge's AutoBridge registry, which import's stand-in for"
        " mbridge cannot answer: the checkout's docker/Dockerfile:2 installs mbridge 0123abcd, and"
        " run-matrix ships the registry of mbridge 89eb1088 only (miles/import.yaml mbridge:) (installed"
        " beside run-matrix, the real mbridge answers)"
    ) in str(error.value)


def test_what_else_the_stand_in_cannot_answer_is_still_refused_naming_it(checkout):
    script = script_of(checkout, "Qwen/Qwen3-0.6B")
    script.write_text(
        "from mbridge import AutoBridge\nbridge = AutoBridge.from_config(None)\nlayers = len(bridge)\n"
        + script.read_text()
    )
    with pytest.raises(SpecError) as error:
        capture.record(script, {}, [], miles_root=checkout)
    assert (
        "test_case.py:3: error [import]: test_case.py cannot be imported: it asks the length of"
        " mbridge.AutoBridge.from_config() which import's stand-in for mbridge cannot answer: this"
        " interpreter lacks mbridge, and the stand-in has its names, not what they hold (installed beside"
        " run-matrix, the real mbridge answers)"
    ) in str(error.value)
