"""report: a run's results as JSON, JUnit XML and GitHub step-summary Markdown.

Presentation only: everything here reads ``RunResult`` and returns text (``run.outputs``
writes the files). Nothing in a
result holds a secret's value (the run step redacts them), so nothing here can leak one.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from typing import Any

from runner.errors import ExitCode, counted
from runner.results.outcome import CellResult, Gate, RunResult, Status

MARKS = {
    Status.PASSED: "✅",
    Status.FAILED: "❌",
    Status.ERROR: "💥",
    Status.SKIPPED: "⏭️",
    Status.XFAIL: "🟡",
    Status.INTERRUPTED: "⏹️",
}


def headline(result: RunResult) -> str:
    """``2 passed, 1 failed in 45 s``."""
    counts = Counter(c.status for c in result.cells)
    parts = [f"{counts[s]} {s.value}" for s in Status if counts[s]]
    said = f"{', '.join(parts) or 'no cells'} in {result.seconds:.0f} s"
    if result.exit_code is ExitCode.NOTHING_RAN:
        said += f": nothing ran, every selected cell was skipped (exit {int(ExitCode.NOTHING_RAN)})"
    return said


def _checks_summary(cell: CellResult) -> str:
    count = len(cell.checks)
    return f"{counted(count, 'check')} held" if count else ""


def to_json(result: RunResult) -> str:
    """Strict JSON: a metric's nan or inf (miles prints them) is written as the string "nan"/"inf"."""
    return json.dumps(finite(result.to_json()), indent=2, allow_nan=False) + "\n"


def finite(data: Any) -> Any:
    """``data`` with every non-finite float replaced by its name: JSON has no NaN or Infinity."""
    if isinstance(data, float) and not math.isfinite(data):
        return str(data)  # "nan", "inf", "-inf"
    if isinstance(data, dict):
        return {key: finite(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(value) for value in data]
    return data


def junit(result: RunResult) -> str:
    """One test case per cell; skipped cells carry their reason; properties say where it came from."""
    from junitparser import Error, Failure, JUnitXml, Properties, Property, Skipped, TestCase, TestSuite

    suite = TestSuite("run-matrix")
    suite.timestamp = result.started
    for cell in result.cells:
        case = TestCase(cell.id, cell.spec, cell.seconds)
        properties = Properties()
        for name, value in properties_of(cell):
            properties.add_property(Property(name, value))
        case.append(properties)
        if cell.status is Status.FAILED:
            case.result = [Failure(cell.reason, "timeout" if _timed_out(cell) else "failure")]
        elif cell.status in (Status.ERROR, Status.INTERRUPTED):
            case.result = [
                Error(cell.reason, "interrupted" if cell.status is Status.INTERRUPTED else "infra")
            ]
        elif cell.status is Status.SKIPPED:
            case.result = [Skipped(cell.reason)]
        elif cell.status is Status.XFAIL:
            case.result = [Skipped(cell.reason, "xfail")]
        case.system_out = "\n".join(details(cell))
        suite.add_testcase(case)
    suite.update_statistics()
    suite.time = round(result.seconds, 3)
    document = JUnitXml("run-matrix")
    document.add_testsuite(suite)
    text = document.tostring()
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        + (text.decode() if isinstance(text, bytes) else text)
        + "\n"
    )


def _timed_out(cell: CellResult) -> bool:
    return bool(cell.attempts) and cell.attempts[-1].outcome == "timeout"


def properties_of(cell: CellResult) -> list[tuple[str, str]]:
    found = [
        ("hardware", cell.hardware),
        ("spec_chain", " -> ".join(cell.spec_chain)),
        ("content_hash", cell.content_hash),
        ("reproduce", cell.reproduce),
    ]
    if cell.log:
        found.append(("log", cell.log))
    found += [(f"attempt_{a.number}", f"{a.submission_id}: {a.outcome}") for a in cell.attempts]
    found += [(f"attempt_{a.number}_run_id", a.run_id) for a in cell.attempts if a.run_id]
    if cell.history:
        found.append(("history_run", cell.history))
    found += [(f"gate:{g.metric}:{_step(g)}", _gate_property(g)) for g in cell.gates]
    return found


def _step(gate: Gate) -> str:
    return "last" if gate.step == -1 else str(gate.step)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _verdict(gate: Gate) -> str:
    return gate.verdict + ("" if gate.enforce else " (report only)")


def _gate_property(gate: Gate) -> str:
    """``fail: value=0.5 reference=0.077 corridor=[0.0616, 0.0924] baseline=3``."""
    return (
        f"{_verdict(gate)}: value={_number(gate.value)} reference={_number(gate.reference)} "
        f"corridor={gate.corridor or '-'} baseline={gate.baseline_runs}"
    )


def details(cell: CellResult) -> Iterator[str]:
    """What happened, line by line: requirements, prepare steps, attempts, verify jobs, checks."""
    for requirement in cell.requirements:
        verdict = "met" if requirement.met else ("unmet (optional)" if requirement.optional else "unmet")
        yield f"requirement {verdict}: {requirement.describe()}"
    for step in cell.prepare:
        yield f"prepare {step.name} ({step.kind}): {step.status}: {step.detail}"
    for attempt in cell.attempts:
        named = f" (run-id {attempt.run_id})" if attempt.run_id else ""
        yield f"attempt {attempt.number} {attempt.submission_id}{named}: {attempt.outcome}: {attempt.detail}"
    for verify in cell.verified:
        yield f"verify {verify.name} ({verify.call}): {verify.outcome}: {verify.detail}"
    for check in cell.checks:
        yield f"check {'ok' if check.ok else 'FAILED'}: {check.message}"
    for gate in cell.gates:
        yield f"gate {_verdict(gate)}: {gate.message}"
    if cell.history:
        yield f"history: recorded as run {cell.history}"


def markdown(result: RunResult) -> str:
    lines = [
        f"## run-matrix: {headline(result)}",
        "",
        "| cell | status | time | why |",
        "|---|---|---|---|",
    ]
    for cell in result.cells:
        why = _cell_text(cell.reason or _checks_summary(cell))
        mark = f"{MARKS[cell.status]} {cell.status.value}"
        lines.append(f"| `{cell.id}` | {mark} | {cell.seconds:.0f} s | {why} |")
    lines += gates_markdown(result)
    for cell in result.cells:
        found = list(details(cell))
        if found:
            lines += ["", f"<details><summary><code>{cell.id}</code></summary>", ""]
            lines += [f"- {_cell_text(line)}" for line in found]
            lines += ["", f"Reproduce: `{cell.reproduce}`", "", "</details>"]
    return "\n".join(lines) + "\n"


def gates_markdown(result: RunResult) -> list[str]:
    """The bands judged against history: value, reference, corridor, baseline size, verdict."""
    rows = [
        f"| `{cell.id}` | `{g.metric}` | {_step(g)} | {_number(g.value)} | {_number(g.reference)} | "
        f"{g.corridor or '-'} | {g.baseline_runs} | {MARKS_GATE[g.verdict]} {_verdict(g)} |"
        for cell in result.cells
        for g in cell.gates
    ]
    if not rows:
        return []
    head = ["", "| cell | metric | step | value | reference | corridor | baseline runs | verdict |"]
    return [*head, "|---|---|---|---|---|---|---|---|", *rows]


MARKS_GATE = {"pass": "✅", "fail": "❌", "inactive": "💤", "error": "💥"}


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
