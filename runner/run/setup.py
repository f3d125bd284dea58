"""setup: what is known before the first cell runs — requirements, skips, job envs, the redactor.

Preflight runs here too: a machine that cannot run the cells fails (exit 3) before any of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runner import redact as redaction
from runner.launch.planned import Planned
from runner.results.outcome import RequirementResult
from runner.run import environment, miles_check, preflight, requires
from runner.run.plan import Options


@dataclass(frozen=True)
class Setup:
    """What is known before the first cell runs: requirements, skips, job envs, the redactor."""

    checked: dict[str, tuple[RequirementResult, ...]]
    skips: dict[str, str]
    envs: dict[str, dict[str, str]]
    redact: redaction.Redactor
    refused: dict[str, str]  # cell id -> miles' parser's refusal: the cell fails before its Ray head
    notes: tuple[str, ...]  # for the run's summary

    @classmethod
    def of(cls, planned: Sequence[Planned], options: Options) -> Setup:
        if options.preflight and planned:
            preflight.need_checkout(options)
        checked, skips = skipped(planned, options)
        runnable = [p for p in planned if not skips[p.cell.id]]
        if options.preflight and runnable:
            preflight.check(runnable, options)
        redaction.refuse_short(options.caller_env, _secrets(planned))
        redact = redaction.Redactor.of(options.caller_env, _secrets(planned))
        envs = {p.cell.id: _job_env(p, options) for p in runnable}
        verdict = miles_check.check(runnable, options)
        return cls(checked, skips, envs, redact, verdict.refused, (verdict.note,) if verdict.note else ())


def skipped(
    planned: Sequence[Planned], options: Options
) -> tuple[dict[str, tuple[RequirementResult, ...]], dict[str, str]]:
    """Each cell's requirements, checked, and why it is skipped ("" when it is not)."""
    checked = {p.cell.id: requires.check(p.cell, options.miles_root, options.caller_env) for p in planned}
    return checked, {p.cell.id: _skip_reason(p, checked[p.cell.id]) for p in planned}


def _skip_reason(planned: Planned, checked: tuple[RequirementResult, ...]) -> str:
    """Why the cell is not run (its matrix skips it, or a requirement is unmet), or ""."""
    skip = planned.cell.skip
    if skip is not None:
        return f"skip: {skip.reason}" + (f" ({skip.issue})" if skip.issue else "")
    return "; ".join(r.describe() for r in requires.unmet(checked))


def _secrets(planned: Sequence[Planned]) -> list[str]:
    return sorted({name for p in planned for name in p.cell.conventions.secrets})


def _job_env(planned: Planned, options: Options) -> dict[str, str]:
    """The job's env; a dry run leaves the probes undecided, and still finds every secret that is not set."""
    decide = environment.undecided if options.dry_run else environment.probe
    probed = decide(planned.launch.probes, options.caller_env)
    return environment.job_env(planned, probed, options.caller_env)
