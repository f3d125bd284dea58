"""Start an oracle for a test module, or skip (fail under RUN_MATRIX_ORACLES=required)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


def start(cls: Any) -> Iterator[Any]:
    if not cls.available():
        reason = cls.unavailable_reason() if hasattr(cls, "unavailable_reason") else f"{cls.__name__} not built"
        if os.environ.get("RUN_MATRIX_ORACLES") == "required":
            pytest.fail(f"RUN_MATRIX_ORACLES=required but {reason}")
        pytest.skip(reason)
    with cls() as oracle:
        yield oracle
