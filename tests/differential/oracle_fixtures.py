"""Start an oracle for a test module, or skip (fail under RUN_MATRIX_ORACLES=required)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


def start(cls: Any, **options: Any) -> Iterator[Any]:
    """`options` (an oracle's miles_version) go to the class's availability checks and to the oracle."""
    if not cls.available(**options):
        reason = (
            cls.unavailable_reason(**options)
            if hasattr(cls, "unavailable_reason")
            else f"{cls.__name__} not built"
        )
        if os.environ.get("RUN_MATRIX_ORACLES") == "required":
            pytest.fail(f"RUN_MATRIX_ORACLES=required but {reason}")
        pytest.skip(reason)
    with cls(**options) as oracle:
        yield oracle
