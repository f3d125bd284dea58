"""The ``matrix:`` block of a spec: axes that expand one spec into cells."""

import datetime
from typing import Any

from pydantic import Field, PositiveInt, field_validator

from schemas.values import Model

AxisValue = bool | int | float | str


class Skip(Model):
    reason: str = Field(min_length=1, description="why the cell cannot run; every skip has one")
    issue: str | None = Field(default=None, description="link to the issue that tracks it")
    expires: datetime.date | None = Field(default=None, description="after this date the skip is an error")


class Adjust(Model):
    """Changes for the cells a partial match selects."""

    match: dict[str, Any] = Field(
        default={},
        description="axis values, or dotted keys of the resolved cell (profile.vendor, hardware, args.*)",
    )
    overlay: list[str] = Field(
        default=[], description="overlay files to apply, relative to this spec; ${matrix.<axis>} allowed"
    )
    skip: Skip | None = None
    xfail: str | None = Field(default=None, description="the reason a failure is expected")
    timeout: PositiveInt | None = Field(default=None, description="seconds")

    @field_validator("overlay", mode="before")
    @classmethod
    def _one_or_more(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class Matrix(Model):
    axes: dict[str, list[AxisValue]] = Field(
        default={}, description="axis -> values; cells are their product"
    )
    zip: list[list[str]] = Field(default=[], description="groups of axes that vary together, not crossed")
    exclude: list[dict[str, AxisValue]] = Field(default=[], description="partial matches removed")
    include: list[dict[str, AxisValue]] = Field(
        default=[], description="whole cells added (every axis given)"
    )
    adjust: dict[str, Adjust] = Field(default={}, description="named adjustments, applied in order")
    max_cells: PositiveInt = Field(default=1000, description="a larger matrix is an error, never truncated")


class MatrixBlock(Model):
    """A spec as far as the matrix is concerned (the rest is modelled per cell)."""

    matrix: Matrix = Matrix()
