"""run-matrix diff: two specs (or cells) side by side — spec keys, launch, GPU layout."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from runner import pipeline
from runner.cli.output import add_format, print_json
from runner.diff import Diff, Difference, diff
from runner.errors import ExitCode

SECTIONS = (("spec", "Spec"), ("launch", "Launch"), ("layout", "Layout"))


def add_parser(subcommands: Any, name: str) -> None:
    parser = subcommands.add_parser(
        name,
        help="compare two specs: keys, launch and GPU layout, with sources and reasons",
        description="Compare two resolved specs at three levels: the spec (dotted keys), the rendered "
        "launch (train script, flags, env vars) and the derived layout (GPUs for training and rollout, "
        "engines, TP/DP/EP). Each difference shows both values, the file:line that set each and the "
        "reason (B's why:/why_not:, else A's). With --allow or a spec's allowed_deltas:, exit 1 when "
        "the specs differ at a key no glob allows.",
    )
    parser.add_argument("a", metavar="A", help="a spec (its default cell) or a cell id")
    parser.add_argument("b", metavar="B", help="a spec (its default cell) or a cell id")
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="KEY_GLOB",
        help="a spec key that may differ (repeatable)",
    )
    add_format(parser, "rich", "markdown", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    a, b = pipeline.one(args.a), pipeline.one(args.b)
    pipeline.problems(a), pipeline.problems(b)
    result = diff(a, b, args.allow)
    if args.format == "json":
        print_json(result.to_json())
    elif args.format == "markdown":
        sys.stdout.write(markdown(result))
    else:
        _rich(result)
    if result.allowed and result.outside_allowed:
        print(
            f"run-matrix: {len(result.outside_allowed)} key(s) differ outside the allowed deltas: "
            + ", ".join(result.outside_allowed),
            file=sys.stderr,
        )
        return ExitCode.RUN_FAILED
    return ExitCode.OK


def markdown(result: Diff) -> str:
    lines = [f"## `{result.a}` → `{result.b}`", ""]
    for attribute, title in SECTIONS:
        differences: tuple[Difference, ...] = getattr(result, attribute)
        if not differences:
            continue
        lines += [f"### {title}", "", f"| key | `{result.a}` | `{result.b}` | why |", "|---|---|---|---|"]
        lines += [
            f"| `{d.key}` | {_cell(d.a, d.a_source)} | {_cell(d.b, d.b_source)} | {_escape(d.why)} |"
            for d in differences
        ]
        lines.append("")
    return "\n".join(lines)


def _cell(value: Any, source: str | None) -> str:
    shown = "—" if value is None else f"`{_escape(_text(value))}`"
    return f"{shown} <sub>{source}</sub>" if source else shown


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return str(value)


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rich(result: Diff) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout)
    for attribute, title in SECTIONS:
        differences: tuple[Difference, ...] = getattr(result, attribute)
        if not differences:
            continue
        table = Table(title=f"{title}: {result.a} → {result.b}", title_justify="left")
        for column in ("key", result.a, result.b, "why"):
            table.add_column(column, overflow="fold")
        for d in differences:
            table.add_row(d.key, _rich_cell(d.a, d.a_source), _rich_cell(d.b, d.b_source), d.why)
        console.print(table)


def _rich_cell(value: Any, source: str | None) -> str:
    from rich.markup import escape

    shown = "[dim]—[/]" if value is None else escape(_text(value))
    return f"{shown}\n[dim]{escape(source)}[/]" if source else shown
