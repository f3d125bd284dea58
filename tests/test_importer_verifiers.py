"""The sandbox's stand-in for a check (``runner/importer/verifiers.py``), called in this process: what
it records, and why it refuses an argument the verify program would not give the check back as the
test gave it. The import tests (``test_importer_suite.py``) run it in the sandbox."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from runner.importer import verifiers
from runner.importer.trace import TRACE, Refused


@dataclasses.dataclass(frozen=True)
class Mode:
    name: str
    cells: int


class Event(BaseModel):
    rollout_id: int
    healed: list[int] = []


def typed(event_dir: Path, mode: Mode, expected: list[Event], rtol: float = 0.0, pairs: Any = None) -> None:
    raise AssertionError("a stand-in never runs the check")


def untyped(dump_dir, mode) -> None:  # type: ignore[no-untyped-def]
    raise AssertionError("a stand-in never runs the check")


def unreadable(dump_dir: str, mode: NotImportedHere) -> None:  # type: ignore[name-defined]  # noqa: F821
    raise AssertionError("a stand-in never runs the check")


@pytest.fixture(autouse=True)
def trace() -> Iterator[None]:
    TRACE.events.clear()
    TRACE.refusal = None
    yield
    TRACE.events.clear()
    TRACE.refusal = None


def stand_in(function: Callable[..., None]) -> Callable[..., None]:
    return verifiers.verifying(
        f"checks.{function.__name__}", inspect.signature(function), verifiers._hints(function)
    )


def refusal(function: Callable[..., None], *args: Any, **kwargs: Any) -> str:
    with pytest.raises(Refused) as caught:
        stand_in(function)(*args, **kwargs)
    return str(caught.value)


def test_a_path_a_dataclass_and_models_are_recorded_as_json_their_annotations_give_back() -> None:
    stand_in(typed)(
        Path("/d/events"), Mode("dp4", 4), expected=[Event(rollout_id=2, healed=[1])], rtol=1, pairs=()
    )
    (event,) = TRACE.events
    assert (event["kind"], event["call"]) == ("verify", "checks.typed")
    assert event["args"] == {
        "event_dir": "/d/events",
        "mode": {"name": "dp4", "cells": 4},
        "expected": [{"rollout_id": 2, "healed": [1]}],
        "rtol": 1,  # a float parameter given an int: equal, as the check would compute with it
        "pairs": [],  # an unannotated tuple comes back a list: a sequence alike
    }


def test_a_value_the_annotation_converts_otherwise_is_refused_with_what_the_check_would_get() -> None:
    assert refusal(typed, "/d/events", Mode("dp4", 4), []) == (
        "passes typed() event_dir='/d/events', which the check would get back from a spec's verify: as"
        " PosixPath('/d/events') (converted by its annotation Path)"
    )


def test_a_dataclass_for_a_parameter_without_an_annotation_is_refused() -> None:
    assert refusal(untyped, "/d", Mode("dp4", 4)) == (
        "passes untyped() mode=Mode(name='dp4', cells=4), which the check would get back from a spec's"
        " verify: as {'name': 'dp4', 'cells': 4} (mode has no annotation to convert it back by)"
    )
    stand_in(untyped)("/d", {"name": "dp4"})  # JSON as it is needs no annotation
    assert TRACE.events[-1]["args"] == {"dump_dir": "/d", "mode": {"name": "dp4"}}


def test_a_value_the_annotation_rejects_is_refused_with_pydantics_reason() -> None:
    assert refusal(typed, Path("/d"), Mode("dp4", 4), expected=[{"rollout_id": "two"}]) == (
        "passes typed() expected=[{'rollout_id': 'two'}], which a spec's verify: cannot give the check back"
        " (converted by its annotation list[Event]: 0.rollout_id: Input should"
        " be a valid integer, unable to parse string as an integer)"
    )


def test_annotations_that_cannot_be_read_refuse_every_argument_but_plain_json_too() -> None:
    assert refusal(unreadable, "/d", {"name": "dp4"}) == (
        "passes unreadable() dump_dir='/d', which a spec's verify: cannot give the check back (its annotations"
        " cannot be read: NameError: name 'NotImportedHere' is not defined)"
    )
    assert TRACE.events == []


def test_the_check_itself_is_recorded_in_place_so_a_reference_taken_earlier_records_too() -> None:
    module = type(typing)("checks")

    def compare(dump_dir: str, mode: Mode) -> None:
        raise AssertionError("the check ran")

    compare.__module__ = module.__name__
    module.compare = compare  # type: ignore[attr-defined]
    kept = module.compare  # type: ignore[attr-defined]  # as a runner built at import keeps it
    verifiers._record_in(module, ["compare"])
    kept("/d", Mode("dp4", 4))
    assert kept is module.compare  # type: ignore[attr-defined]
    assert TRACE.events[-1]["args"] == {"dump_dir": "/d", "mode": {"name": "dp4", "cells": 4}}


def test_nan_and_infinity_are_no_json_numbers() -> None:
    assert refusal(typed, Path("/d"), Mode("dp4", 4), [], rtol=float("inf")) == (
        "passes typed() rtol=float('inf'), which a spec's verify: cannot hold (it gives a check JSON values:"
        " text, numbers, true/false, null, lists and mappings)"
    )
