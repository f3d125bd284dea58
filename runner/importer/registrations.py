"""registrations: a test's CI registrations -> the spec's ``ci:`` block, ``expect:`` gates and skip.

* ``register_cuda_ci`` / ``register_rocm_ci`` -> ``ci:`` (backend, suite, est_time, labels,
  nightly), from the registration whose backend is the spec's hardware platform; one for the
  other platform is a note (a ROCm overlay carries it). ``disabled="reason"`` -> a skip of every
  cell with that reason and an ``expires:`` date the import sets, with a note to confirm it.
* ``register_ci_gate`` -> an ``expect:`` entry: ``band`` (the constraint's band parameters as
  written or as miles' ``GATE_DEFAULTS`` fill them), ``steps`` and ``enforce`` (miles' default is
  ``False``, report only; run-matrix's is true, so it is always written). ``run`` judges it
  against the trusted history (``runner/results/history``), as miles' gate does.

Pure: the registrations come from ``capture``.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import Location
from runner.importer.events import refused
from runner.importer.notes import Note
from runner.importer.traced import Registration
from runner.spec import locate
from runner.spec.emit import Text

PLATFORM_NAMES = {"cuda": "CUDA", "rocm": "ROCm"}
SKIP_DAYS = 90  # how long an imported skip lasts before validate calls it expired
BACKENDS = {"register_cuda_ci": "cuda", "register_rocm_ci": "rocm", "register_cpu_ci": "cpu"}
BAND = ("rel_up", "abs_floor_up", "rel_down", "abs_floor_down")
SUITE_HARDWARE = re.compile(r"-\d+-gpu-([a-z]+\d+[a-z0-9]*)$")  # a GPU model: mi350, h100, b200


@dataclass(frozen=True)
class FromCI:
    """What the registrations put in the spec, and what they could not."""

    ci: dict[str, Any]
    expect: dict[str, dict[str, Any]]
    skip: dict[str, Any] | None
    notes: list[Note]


def spec_data(
    registrations: Sequence[Registration],
    platform: str,
    script: Path,
    today: datetime.date,
    written: frozenset[str] = frozenset(),
) -> FromCI:
    """What the registrations of ``platform`` put in the spec (``written``: other platforms whose
    registration the spec holds too, as a side of its own)."""
    calls = [r for r in registrations if r.kind == "ci" and BACKENDS.get(r.name) not in written]
    ci, skip, notes = _registration(calls, platform, script, today, bool(written))
    expect: dict[str, dict[str, Any]] = {}
    for gate in (r for r in registrations if r.kind == "gate"):
        metric, expectation = _expectation(gate)
        expect[metric] = expectation
        if gate.args.get("allowlist_reason"):
            reason = gate.args["allowlist_reason"]
            notes.append(Note(f"the gate on {metric} is allowlisted in miles' CI: {reason}", gate.at))
    defaulted = [r.args["metric_key"] for r in registrations if r.kind == "gate" and r.defaulted]
    if defaulted:
        notes.append(
            Note(
                f"the steps and band of {', '.join(defaulted)} are miles' GATE_DEFAULTS"
                " (tests/ci/metric_history/register.py), which the script's register_ci_gate leaves out",
                Location(script),
            )
        )
    return FromCI(ci, expect, skip, notes)


def hardware_of(registrations: Sequence[Registration], spec: Path) -> tuple[str | None, str | None]:
    """The first GPU suite, and the hardware profile it names (``stage-c-8-gpu-h100`` -> h100,
    ``...-gpu-mi300`` -> mi300x), None when there is no such profile."""
    for registration in registrations:
        suite = str(registration.args.get("suite") or "")
        match = SUITE_HARDWARE.search(suite)
        if registration.kind == "ci" and match is not None:
            return suite, profile_of(match.group(1), spec)
    return None, None


def profile_of(model: str, spec: Path) -> str | None:
    """The hardware profile of a GPU model a suite or runner label names (``h100``, ``mi350`` ->
    ``mi350x``): in the spec's matrices tree, else run-matrix's; None when there is none."""
    folders = [root / "hardware" for root in (locate.matrices_root(spec), locate.BUNDLED_MATRICES) if root]
    names = (model, f"{model}x")
    return next((name for name in names if any((f / f"{name}.yaml").is_file() for f in folders)), None)


def _registration(
    calls: list[Registration], platform: str, script: Path, today: datetime.date, sided: bool
) -> tuple[dict[str, Any], dict[str, Any] | None, list[Note]]:
    """The ``ci:`` block and skip of ``platform``'s registration, and the notes of the others."""
    mine = [c for c in calls if BACKENDS.get(c.name) == platform]
    notes = [
        Note(
            f"{other.name}(suite={other.args.get('suite')!r}, est_time={other.args.get('est_time')!r})"
            f" is not written: the spec's ci: block is the {platform} registration"
            + (
                " (import it without --hardware, or with hardware of that platform, to write its cells)"
                if BACKENDS.get(other.name) != "cpu"
                else ""
            ),
            other.at,
        )
        for other in calls
        if other not in mine[:1]
    ]
    if not mine:
        return {}, None, notes
    call = mine[0].args
    ci: dict[str, Any] = {"backend": platform}
    if isinstance(call.get("suite"), str):
        ci["suite"] = call["suite"]
    if isinstance(call.get("est_time"), (int, float)) and call["est_time"] > 0:
        ci["est_time"] = math.ceil(call["est_time"])
    if call.get("labels"):
        ci["labels"] = list(call["labels"])
    if call.get("nightly"):
        ci["nightly"] = True
    if not call.get("disabled"):
        return ci, None, notes
    expires = today + datetime.timedelta(days=SKIP_DAYS)
    skip = {"reason": f"disabled in miles' CI: {call['disabled']}", "expires": Text(expires.isoformat())}
    notes.append(
        Note(
            f"miles' {PLATFORM_NAMES.get(platform, platform) + ' ' if sided else ''}CI disables"
            " this test;"
            f" the skip's expires: {expires} was set by import"
            f" ({SKIP_DAYS} days): confirm it, or re-enable the test",
            mine[0].at,
        )
    )
    return ci, skip, notes


def _expectation(gate: Registration) -> tuple[str, dict[str, Any]]:
    args = gate.args
    metric = args["metric_key"]
    constraint = args.get("constraint")
    if not isinstance(constraint, dict):
        raise refused(
            gate.at,
            f"registers a gate on {metric} without a constraint, which miles fills from its GATE_DEFAULTS:"
            " only a checkout has them — import with --miles-root DIR",
        )
    unknown = sorted(set(constraint) - set(BAND))
    if unknown:
        raise refused(gate.at, f"gives the gate on {metric} constraint parameters no band has: {unknown}")
    entry: dict[str, Any] = {"band": {name: constraint[name] for name in BAND if name in constraint}}
    if args.get("steps") is not None:
        entry["steps"] = args["steps"]
    entry["enforce"] = bool(args.get("enforce"))
    return metric, entry
