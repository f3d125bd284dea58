"""What miles main runs on AMD, asked of run-matrix and of the real SGLang 0.5.10 and Megatron
(megatron-core 0.19.2), presented as an MI355X (gfx950, the MI350X's architecture).

The configurations are tests/data/upstream-amd/: the launches of miles main's test_amd_*.py tests
(two disabled upstream, "FIXME: re-enable once this case passes"), its scripts/amd/ launchers and a
2-GPU FSDP test, as run-matrix's import sandbox recorded them (tools/check_amd_upstream.py checks
the same against a real checkout). run-matrix finds no error in any; each library must accept
each too, or this test names the configuration and the library's message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner import check, pipeline
from runner.cells.cell import Cell
from runner.cells.layout import layout
from runner.launch.render import render
from tests.conftest import DATA
from tests.differential.megatron_oracle import MegatronOracle
from tests.differential.oracle_fixtures import start
from tests.differential.sglang_oracle import SGLangOracle
from tests.differential.verdicts import NOT_PASSED_TO_SGLANG

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]
SPECS = sorted((DATA / "upstream-amd").glob("*.yaml"))
PLATFORM = "mi355x"  # the oracles' gfx950
# Flags of radixark's Megatron-LM fork (miles' container) that PyPI's megatron-core does not parse:
# the oracle cannot judge these launches, so they are named here rather than silently passed.
FORK_ONLY = {
    "run-deepseek-v4": "--experimental-attention-variant: invalid choice: 'dsv4'",  # DeepSeek-V4 attention
    "run-inkling": "unrecognized arguments: --custom-model-provider-path",
}


@pytest.fixture(scope="module")
def sglang():
    yield from start(SGLangOracle)


@pytest.fixture(scope="module")
def megatron():
    yield from start(MegatronOracle)


def _cell(spec: Path) -> Cell:
    cell = pipeline.cell(spec)
    assert [str(p) for p in check.run(cell) if p.severity == "error"] == []
    return cell


def _program_flags(cell: Cell, program: str) -> dict[str, Any]:
    """The cell's flags that ``program`` parses, by canonical name (the catalog says whose each is)."""
    assert cell.flags is not None
    index = cell.flags.catalog.index(cell.backend)
    return {
        index[name].name: value
        for name, value in cell.spec.args.flags().items()
        if name in index and index[name].program == program and value is not False
    }


def sglang_args(cell: Cell) -> dict[str, Any]:
    """ServerArgs keyword arguments as miles builds them for one engine of the cell."""
    engine = layout(cell).engine
    args: dict[str, Any] = {"tp_size": engine.tp, "nnodes": engine.nodes}
    for name, value in _program_flags(cell, "sglang").items():
        if name.startswith("sglang-") and name not in NOT_PASSED_TO_SGLANG:
            args[name.removeprefix("sglang-").replace("-", "_")] = value
    return args


def megatron_argv(cell: Cell) -> list[str]:
    argv = list(render(cell).model_args)
    for name, value in _program_flags(cell, "megatron").items():
        if value is True:
            argv.append(f"--{name}")
        else:
            argv += [f"--{name}", *(map(str, value) if isinstance(value, list) else [str(value)])]
    return argv


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_sglang_accepts_what_run_matrix_accepts(sglang, spec: Path) -> None:
    cell = _cell(spec)
    env = {name: str(value) for name, value in cell.spec.env.items() if name.startswith("SGLANG_")}
    verdict = sglang.check(PLATFORM, sglang_args(cell), env)
    assert verdict["accepted"], f"{spec.stem}: SGLang refuses: {verdict['error_type']}: {verdict['error']}"


def test_sglang_needs_the_mori_dispatch_budget_the_test_sets(sglang) -> None:
    # the disabled moriep test sets SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK=16384 for a reason:
    # without it SGLang refuses the engine (chunked prefill 16384 on ROCm > the default budget 4096)
    cell = _cell(DATA / "upstream-amd" / "test-amd-moriep-fp8-bridge.yaml")
    verdict = sglang.check(PLATFORM, sglang_args(cell), {})
    assert not verdict["accepted"]
    assert "SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK" in str(verdict["error"])


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_megatron_accepts_what_run_matrix_accepts(megatron, spec: Path) -> None:
    cell = _cell(spec)
    if cell.backend != "megatron":
        pytest.skip(f"{spec.stem} trains with {cell.backend}: Megatron never sees it")
    world = int(cell.flag("actor-num-nodes", 1)) * int(cell.flag("actor-num-gpus-per-node"))
    verdict = megatron.check(PLATFORM, world, megatron_argv(cell))
    if spec.stem in FORK_ONLY:
        assert (verdict["accepted"], verdict["stage"]) == (False, "parse")
        assert FORK_ONLY[spec.stem] in verdict["error"]
        return  # the PyPI oracle stops at the fork's flag; what it would say after is not known here
    assert verdict["accepted"], f"{spec.stem}: Megatron refuses at {verdict['stage']}: {verdict['error']}"
