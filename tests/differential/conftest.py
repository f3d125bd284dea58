"""Differential tests against the real systems (tools/oracles/*): shared pytest setup."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.differential import miles_oracle

ORACLE_MARKER = "oracle: compares verdicts with the real SGLang / Megatron (needs tools/oracles/*/build.sh)"


def pytest_configure(config: pytest.Config) -> None:
    # pyproject.toml may already declare it; register only when it does not.
    if not any(line.split(":", 1)[0].strip() == "oracle" for line in config.getini("markers")):
        config.addinivalue_line("markers", ORACLE_MARKER)


@pytest.fixture(scope="module")
def main_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """miles main's checkout, beside a built miles oracle (.oracles/miles); else skip, or fail
    under RUN_MATRIX_ORACLES=required."""
    reason = miles_oracle.unavailable_reason()
    if reason is not None:
        if os.environ.get("RUN_MATRIX_ORACLES") == "required":
            pytest.fail(f"RUN_MATRIX_ORACLES=required but {reason}")
        pytest.skip(reason)
    return miles_oracle.extract(tmp_path_factory.mktemp("miles-main"))
