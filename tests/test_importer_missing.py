"""Import of a checkout whose helpers need packages this interpreter lacks, and whose libraries
read settings of their own: stand-ins for the first, no notes for the second."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.importer import capture
from tests.conftest import DATA

pytestmark = pytest.mark.allow_subprocess

HELPERS = "miles/utils/external_utils/command_utils.py"
NEEDS = """\
import httpx_not_installed_here as httpx
from typer_not_installed_here import Option
from torch_not_installed_here.nn import Module


class Client(httpx.Client):  # a base class from a missing package
    timeout: httpx.Timeout | None = None


@httpx.retry(3)  # a decorator from a missing package keeps the function
def ping(host: str = Option("localhost")) -> str:
    return host


assert ping("x") == "x" and Module is not None
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    root = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", root)
    helpers = root / HELPERS
    helpers.write_text(NEEDS + helpers.read_text())
    return root


def script(folder: Path, body: str) -> Path:
    path = folder / "test_case.py"
    path.write_text(
        "import os, tempfile\nimport miles.utils.external_utils.command_utils as U\n"
        f"{body}\n"
        'U.execute_train(train_args="--lr 1e-6 ", num_gpus_per_node=8, megatron_model_type="glm5-744B-A40B_4layer")\n'
    )
    return path


def test_missing_packages_of_the_checkout_are_stood_in_for(checkout):
    run = capture.record(script(checkout / "tests", ""), {}, [], miles_root=checkout)
    assert run.calls[0].args["train_args"] == "--lr 1e-6 "


def test_a_missing_package_the_script_itself_uses_is_stood_in_for_too(checkout):
    run = capture.record(
        script(checkout / "tests", "import ray_not_installed_here\nray_not_installed_here.init()"),
        {},
        [],
        miles_root=checkout,
    )
    assert len(run.calls) == 1


def test_only_the_scripts_own_environment_reads_are_switches(checkout):
    body = "tempfile.gettempdir()  # the standard library reads TMPDIR itself\nos.environ.get('MY_SWITCH')"
    run = capture.record(script(checkout / "tests", body), {}, [], miles_root=checkout)
    assert "TMPDIR" not in run.env_reads
    assert run.env_reads["MY_SWITCH"].line == 4


def test_a_library_probing_for_an_optional_package_still_gets_import_error(checkout, tmp_path):
    body = "import importlib.util\nassert importlib.util.find_spec('surely_not_installed_anywhere') is None"
    run = capture.record(script(checkout / "tests", body), {}, [], miles_root=checkout)
    assert len(run.calls) == 1


def test_a_stand_in_base_class_orders_with_real_ones(checkout):
    # miles_plugins/models/hf_attention.py: class HuggingfaceAttention(MegatronModule, ABC)
    body = (
        "from abc import ABC\nfrom megatron_not_installed_here.core import MegatronModule\n"
        "class Attention(MegatronModule, ABC):\n    def __init__(self, config):\n"
        "        super().__init__(config=config)\n"
        "assert Attention(None).config is not None and Attention.__mro__[-2:] == (ABC, object)"
    )
    run = capture.record(script(checkout / "tests", body), {}, [], miles_root=checkout)
    assert len(run.calls) == 1


@pytest.mark.parametrize(
    ("use", "does"),
    [
        ("'glm_moe_dsa' in _MODEL_REGISTRY", "asks whether 'glm_moe_dsa' is in"),
        ("len(_MODEL_REGISTRY)", "asks the length of"),
        ("_MODEL_REGISTRY < 3", "compares 3 with"),
        ("int(_MODEL_REGISTRY)", "takes the number of"),
    ],
)
def test_what_a_stand_in_cannot_answer_is_refused_naming_the_upstream_api(checkout, use, does):
    # PR 1792's preflight asks mbridge's registry inside `except Exception`: the refusal gets through.
    # The registry is answered for a checkout whose images pin the mbridge run-matrix knows
    # (test_importer_mbridge_registry.py); this one's pin none.
    body = (
        "try:\n    from mbridge.core.bridge import _MODEL_REGISTRY\n"
        f"    registered = {use}\nexcept Exception:\n    registered = False"
    )
    with pytest.raises(SpecError) as error:
        capture.record(script(checkout / "tests", body), {}, [], miles_root=checkout)
    assert (
        f"test_case.py:5: error [import]: test_case.py cannot be imported: it {does}"
        " mbridge.core.bridge._MODEL_REGISTRY, mbridge's AutoBridge registry, which import's stand-in for"
        " mbridge cannot answer: the checkout's docker/Dockerfile* pin no mbridge commit"
        " (`ISEEKYAN/mbridge.git@`), and run-matrix ships the registry of mbridge 89eb1088 only"
        " (miles/import.yaml mbridge:) (installed beside run-matrix, the real mbridge answers)"
    ) in str(error.value)
