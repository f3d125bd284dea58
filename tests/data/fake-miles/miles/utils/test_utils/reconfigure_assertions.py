"""A check of a run's events, with the signature of miles' own (written for run-matrix's tests): its
arguments are a ``Path`` and a list of pydantic models, which a spec's ``verify:`` gives it as JSON
and the verify program converts back by these annotations."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel


class ReconfigureInfo(BaseModel, frozen=True):
    rollout_id: int
    healed_cell_indices: list[int]


def assert_reconfigure_events(event_dir: Path, *, expected: list[ReconfigureInfo]) -> None:
    assert event_dir.is_dir(), f"Event directory {event_dir} does not exist or is not a directory"
    events = [json.loads(line) for line in (event_dir / "events.jsonl").read_text().splitlines()]
    actual = [ReconfigureInfo.model_validate(event) for event in events]
    assert actual == expected, f"expected {expected}, the run left {actual}"


def assert_soak_reconfigure_events(event_dir: Path, *, num_successful_injections: int) -> None:
    """A soak run healed at least as often as its fault injector says it injected (the count a
    before_submit hook reports once the job has ended)."""
    assert event_dir.is_dir(), f"Event directory {event_dir} does not exist or is not a directory"
    events = [json.loads(line) for line in (event_dir / "events.jsonl").read_text().splitlines()]
    healings = [event for event in events if event["healed_cell_indices"]]
    assert len(healings) >= num_successful_injections > 0, (
        f"{num_successful_injections} injection(s), {len(healings)} healing(s) in {event_dir}"
    )
