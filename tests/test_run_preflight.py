from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner import pipeline
from runner.errors import EnvironmentProblem
from runner.launch.planned import Planned
from runner.launch.render import Context, render
from runner.run.plan import Options
from runner.run.preflight import Gpus, check, local_gpus, need_checkout
from runner.spec import locate
from tests.conftest import DATA

FAKE_MILES = DATA / "fake-miles"
ROCM = locate.BUNDLED_MATRICES / "rocm" / "glm5-async.yaml"

SMI = {
    "nvidia-smi": "GPU {i}: NVIDIA H200 (UUID: GPU-{i})",
    "rocm-smi": "GPU[{i}]\t\t: Device Name: \t\tAMD Instinct MI355X\nGPU[{i}]\t\t: Device ID: \t\t0x75a3",
    "amd-smi": "GPU: {i}\n    BDF: 0000:0{i}:00.0",
}


def bin_with(tmp_path: Path, **gpus: int) -> str:
    """A PATH holding fake GPU tools: nvidia_smi=8 prints 8 NVIDIA GPUs."""
    folder = tmp_path / "-".join(["bin", *gpus])
    folder.mkdir()
    for name, count in gpus.items():
        tool = name.replace("_", "-")
        lines = "\n".join(["==== header ====", *(SMI[tool].format(i=i) for i in range(count))])
        (folder / tool).write_text(
            f"#!/bin/sh\nprintf '%s\\n' '{lines}'\n"
        )  # builtins only: PATH is this folder
        (folder / tool).chmod(0o755)
    return str(folder)


@pytest.mark.allow_subprocess
@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        ({"nvidia_smi": 8}, Gpus({"nvidia": 8}, "nvidia-smi")),
        ({"rocm_smi": 4}, Gpus({"amd": 4}, "rocm-smi")),
        ({"amd_smi": 8, "rocm_smi": 8}, Gpus({"amd": 8}, "amd-smi")),
        ({}, Gpus({}, "no nvidia-smi, amd-smi, rocm-smi or torch")),
    ],
)
def test_gpus_are_counted_by_the_vendors_tools(tmp_path, gpus, expected):
    assert local_gpus({"PATH": bin_with(tmp_path, **gpus)}) == expected


def test_the_override_replaces_detection():
    assert local_gpus({"RUN_MATRIX_GPUS": "amd:8", "PATH": ""}) == Gpus({"amd": 8}, "$RUN_MATRIX_GPUS")
    assert local_gpus({"RUN_MATRIX_GPUS": "none"}).describe() == "no GPUs ($RUN_MATRIX_GPUS)"
    with pytest.raises(EnvironmentProblem) as caught:
        local_gpus({"RUN_MATRIX_GPUS": "8"})
    assert str(caught.value) == "$RUN_MATRIX_GPUS='8': expected VENDOR:COUNT (amd:8, nvidia:4) or none"


def planned(path: Path = ROCM, miles_root: Path = FAKE_MILES) -> Planned:
    cell = pipeline.cell(path)
    launch = render(cell, Context(miles_root=str(miles_root)))
    return Planned(cell, launch, path.name, "run-matrix run ...")


def failure(planned_cells: list[Planned], **options: object) -> str:
    defaults: dict[str, object] = {"miles_root": FAKE_MILES, "ray_address": None, "log_dir": Path("logs")}
    with pytest.raises(EnvironmentProblem) as caught:
        check(planned_cells, Options(**{**defaults, **options}))  # type: ignore[arg-type]
    return str(caught.value)


@pytest.mark.allow_subprocess
def test_the_wrong_vendor_and_too_few_gpus(tmp_path):
    env = {"PATH": bin_with(tmp_path, nvidia_smi=8)}
    assert failure([planned()], caller_env=env, skip_prepare=True) == (
        "preflight failed (--no-preflight runs anyway):\n"
        "  rocm/glm5-async: needs 8 AMD GPUs (mi355x); this node has 8 NVIDIA GPUs (nvidia-smi)"
    )
    env = {"PATH": bin_with(tmp_path, rocm_smi=4)}
    assert failure([planned()], caller_env=env, skip_prepare=True).endswith(
        "rocm/glm5-async: needs 8 AMD GPUs (mi355x); this node has 4 AMD GPUs (rocm-smi)"
    )
    check(
        [planned()], Options(FAKE_MILES, None, Path("logs"), {"RUN_MATRIX_GPUS": "amd:8"}, skip_prepare=True)
    )


def test_every_finding_at_once(tmp_path):
    (tmp_path / "train.py").write_text("")
    env = {"RUN_MATRIX_GPUS": "amd:8", "PATH": str(tmp_path)}
    assert failure([planned(miles_root=tmp_path)], miles_root=tmp_path, caller_env=env) == (
        "preflight failed (--no-preflight runs anyway):\n"
        f"  rocm/glm5-async: the miles checkout {tmp_path} has no train_async.py\n"
        "  rocm/glm5-async: prepare step model needs hf, which is not on PATH\n"
        "  rocm/glm5-async: prepare step dataset needs hf, which is not on PATH\n"
        "  rocm/glm5-async: prepare step convert needs torchrun, which is not on PATH"
    )
    with pytest.raises(EnvironmentProblem) as caught:
        need_checkout(Options(None, None, Path("logs")))
    assert str(caught.value) == (
        "preflight failed (--no-preflight runs anyway):\n  no miles checkout: pass --miles-root DIR or set MILES_ROOT"
    )


def test_a_conversion_that_will_run_needs_its_tool_in_the_checkout(write, tmp_path):
    checkout = tmp_path / "miles"
    checkout.mkdir()
    (checkout / "train_async.py").write_text("")
    write("hardware/.keep", "")
    steps = "{mxfp8: {kind: convert-mxfp8, model_dir: /m, save_dir: /nowhere/m-mxfp8}}"
    spec = write("mx.yaml", f"extends: {ROCM}\nprepare: {steps}\nmatrix: !delete\n")
    env = {"RUN_MATRIX_GPUS": "amd:8", "PATH": str(tmp_path)}
    assert failure([planned(spec, checkout)], miles_root=checkout, caller_env=env).splitlines()[1:] == [
        f"  mx: the miles checkout {checkout} has no tools/convert_hf_to_mxfp8.py (prepare step mxfp8)",
        "  mx: prepare step model needs hf, which is not on PATH",
        "  mx: prepare step dataset needs hf, which is not on PATH",
        "  mx: prepare step convert needs torchrun, which is not on PATH",
        "  mx: prepare step mxfp8 needs python, which is not on PATH",
    ]


def test_a_local_head_is_one_node(write):
    write("hardware/.keep", "")
    spec = write("two.yaml", f"extends: {ROCM}\ncluster: {{nodes: 2}}\nmatrix: !delete\n")
    assert failure([planned(spec)], caller_env={"RUN_MATRIX_GPUS": "amd:8"}, skip_prepare=True) == (
        "preflight failed (--no-preflight runs anyway):\n"
        "  two: needs 2 nodes; a local head is one: start a Ray cluster and pass --ray-address"
    )


def test_an_unreachable_cluster():
    message = failure([planned()], ray_address="http://127.0.0.1:9", skip_prepare=True)
    assert message.startswith(
        "preflight failed (--no-preflight runs anyway):\n  Ray at http://127.0.0.1:9 is unreachable: "
    )


def test_a_prepare_call_needs_its_function_in_the_checkout_unless_prepare_is_skipped(write, tmp_path):
    checkout = tmp_path / "miles"
    shutil.copytree(DATA / "own-prepare", checkout)
    (checkout / "train_async.py").write_text("")
    write("hardware/.keep", "")
    prepared = "tests/e2e/long/test_tiny_0.6B_prepared.py"
    env = {"RUN_MATRIX_GPUS": "amd:8", "PATH": str(tmp_path)}

    def findings(function: str, **options: object) -> list[str]:
        step = f"{{kind: call, call: '{prepared}:{function}'}}"
        spec = write("own.yaml", f"extends: {ROCM}\nprepare: {{own: {step}}}\nmatrix: !delete\n")
        each = planned(spec, checkout)
        return failure([each], miles_root=checkout, caller_env=env, **options).splitlines()[1:]

    assert (
        f"  own: prepare.own: {prepared} defines no top-level function prepar (did you mean prepare? it defines:"
        " prepare, refuse, refuse_login)"
    ) in findings("prepar")
    assert [f for f in findings("prepare") if "prepare.own" in f] == []
    (checkout / prepared).unlink()
    assert f"  own: prepare.own: the checkout at {checkout} has no file {prepared}" in findings("prepare")
    each = planned(
        write(
            "own.yaml",
            f"extends: {ROCM}\nprepare: {{own: {{kind: call, call: 'x.py:f'}}}}\nmatrix: !delete\n",
        ),
        checkout,
    )
    check([each], Options(checkout, None, Path("logs"), env, skip_prepare=True))  # nothing to find: no raise
