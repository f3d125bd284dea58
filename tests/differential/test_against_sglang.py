"""run-matrix's engine rules against the real SGLang ServerArgs (what an engine runs before it
spawns anything) of each miles version: 0.5.10 for the PR era, 0.5.16 for miles main, each cell's
ServerArgs built as that version's miles builds it, on at least 300 configurations per version,
presented as H200 and MI355X."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runner.cells.layout import layout
from runner.check.sglang import page_size
from tests.differential.oracle_fixtures import start
from tests.differential.sglang_oracle import VENVS, SGLangOracle
from tests.differential.verdicts import (
    ENGINE_RULES,
    SGLANG_MESSAGES,
    STRICTER_THAN_SGLANG,
    Agreement,
    cell_of,
    our_errors,
    sglang_configs,
    sglang_engine,
)

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]


@pytest.fixture(scope="module", params=sorted(VENVS))
def sglang(request):
    yield from start(SGLangOracle, miles_version=request.param)


def sglang_rule(verdict: dict) -> str:
    text = f"{verdict['error_type']}: {verdict['error']}"
    for pattern, rule_id in SGLANG_MESSAGES.items():
        if re.search(pattern, text):
            return rule_id
    raise AssertionError(f"no rule of ours matches SGLang's rejection: {text}")


@pytest.mark.parametrize("miles_version", sorted(VENVS))
def test_at_least_300_configurations(miles_version: str):
    assert len(list(sglang_configs(miles_version=miles_version))) >= 300


def test_agrees_with_sglang(sglang: SGLangOracle, tmp_path: Path):
    agreement = Agreement(f"SGLang {VENVS[sglang.miles_version].sglang}", STRICTER_THAN_SGLANG)
    for config in sglang_configs(miles_version=sglang.miles_version):
        cell = cell_of(config, tmp_path)
        assert cell.spec.miles_version == sglang.miles_version  # each spec's oracle is its version's
        ours = our_errors(cell) & ENGINE_RULES
        verdict = sglang.check_engine(config.platform, sglang_engine(cell))
        if verdict["accepted"]:
            agreement.accepted(config.name, ours)
            agreement.disagreements += _adjustments(config.name, cell, verdict["resolved"])
        else:
            agreement.rejected(config.name, ours, sglang_rule(verdict), str(verdict["error"]))
    agreement.check()


def _adjustments(name: str, cell, resolved: dict) -> list[str]:
    """What SGLang silently adjusts must be what run-matrix predicts (S4, S6, S9, S11)."""
    found = []
    if resolved["ep_size"] != layout(cell).engine.ep:
        found.append(
            f"{name}: SGLang runs ep {resolved['ep_size']}, we predict {layout(cell).engine.ep} (S9)"
        )
    if resolved["page_size"] != page_size(cell):
        found.append(f"{name}: SGLang uses page size {resolved['page_size']}, we predict {page_size(cell)}")
    engine = layout(cell).engine
    if engine.dp == 1 and resolved["enable_dp_attention"]:
        found.append(f"{name}: SGLang kept DP-attention on with dp 1 (S4 says it turns it off)")
    chunk = cell.flag("sglang-chunked-prefill-size")
    if chunk is not None:
        split = engine.dp_attention and engine.dp > 1
        expected = int(chunk) // engine.dp if split else int(chunk)
        if resolved["chunked_prefill_size"] != expected:
            found.append(
                f"{name}: SGLang's chunked prefill is {resolved['chunked_prefill_size']}, we predict {expected}"
            )
    return found
