"""Differential tests against the real systems (tools/oracles/*): shared pytest setup."""

from __future__ import annotations

import pytest

ORACLE_MARKER = "oracle: compares verdicts with the real SGLang / Megatron (needs tools/oracles/*/build.sh)"


def pytest_configure(config: pytest.Config) -> None:
    # pyproject.toml may already declare it; register only when it does not.
    if not any(line.split(":", 1)[0].strip() == "oracle" for line in config.getini("markers")):
        config.addinivalue_line("markers", ORACLE_MARKER)
