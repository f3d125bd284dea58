"""run-matrix's actor rules against the real Megatron start-up (validate_args -> parallel state
-> TransformerConfig -> optimizer config) of each miles version (megatron-core 0.19.2 for the PR
era, radixark's fork for miles main), on at least 300 configurations per version."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.differential.megatron_oracle import VENVS, MegatronOracle
from tests.differential.oracle_fixtures import start
from tests.differential.verdicts import (
    MEGATRON_MESSAGES,
    STRICTER_THAN_MEGATRON,
    Agreement,
    cell_of,
    megatron_argv,
    megatron_configs,
    our_errors,
)

pytestmark = [pytest.mark.oracle, pytest.mark.allow_subprocess]
MEGATRON_RULES = {*MEGATRON_MESSAGES.values(), "G4"}


@pytest.fixture(scope="module", params=sorted(VENVS))
def megatron(request):
    yield from start(MegatronOracle, miles_version=request.param)


def megatron_rule(verdict: dict) -> str:
    """Which of our rules Megatron's rejection corresponds to."""
    if verdict["stage"] == "parse" and verdict["error_type"] == "KeyError":
        return "M13"  # --attention-backend goes through an enum lookup, not argparse choices
    for pattern, rule_id in MEGATRON_MESSAGES.items():
        if re.search(pattern, verdict["error"] or ""):
            return rule_id
    raise AssertionError(f"no rule of ours matches Megatron's {verdict['stage']} error: {verdict['error']}")


@pytest.mark.parametrize("miles_version", sorted(VENVS))
def test_at_least_300_configurations(miles_version: str):
    assert len(list(megatron_configs(miles_version=miles_version))) >= 300


def test_agrees_with_megatron(megatron, tmp_path: Path):
    agreement = Agreement(f"Megatron of miles {megatron.miles_version}", STRICTER_THAN_MEGATRON)
    for config in megatron_configs(miles_version=megatron.miles_version):
        cell = cell_of(config, tmp_path)
        assert cell.spec.miles_version == megatron.miles_version  # each spec's oracle is its version's
        ours = our_errors(cell) & (MEGATRON_RULES | STRICTER_THAN_MEGATRON.keys())
        world = cell.flag("actor-num-nodes") * cell.flag("actor-num-gpus-per-node")
        verdict = megatron.check(config.platform, world, megatron_argv(cell), env=config.env or None)
        if verdict["accepted"]:
            agreement.accepted(config.name, ours)
        else:
            agreement.rejected(
                config.name, ours, megatron_rule(verdict), f"{verdict['stage']}: {verdict['error']}"
            )
    agreement.check()
