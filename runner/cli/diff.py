"""run-matrix diff: two specs (or cells) side by side — spec keys, launch, GPU layout."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from runner import pipeline
from runner.cli.output import add_format, print_json
from runner.diff import LEVELS, Diff, Difference, compact, diff
from runner.errors import ExitCode, counted
from runner.results.markdown import escape

SECTIONS = (("spec", "Spec"), ("launch", "Launch"), ("layout", "Layout"))


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Compare two resolved specs at three levels: the spec (dotted keys), the rendered "
        "launch (train script, flags, env vars) and the derived layout (GPUs for training and rollout, "
        "engines, TP/DP/EP). Each difference shows both values, the file:line that set each and the "
        "reason: B's why: for the value it has (the why: of the file that set that value); for what B "
        "leaves out, B's why: for its !delete or its why_not:; for what only B sets, A's why_not:. A "
        "reason written for another value (A's, or a base's that B changed) is never shown: a written "
        "difference without a reason says 'no reason given'. Defaults nobody wrote are "
        "not differences; a requires:/expect:/prepare: entry one side lacks is one row. With --allow "
        "or a spec's allowed_deltas:, exit 1 when the specs differ at a key no glob allows.",
    )
    parser.add_argument("a", metavar="A", help="a spec (its default cell) or a cell id")
    parser.add_argument("b", metavar="B", help="a spec (its default cell) or a cell id")
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="KEY_GLOB",
        help="a spec key that may differ (repeatable); a requires:/expect: entry is allowed by its key or "
        "by globs over each of its sub-keys that differ",
    )
    parser.add_argument(
        "--level",
        choices=LEVELS,
        action="append",
        help="show only this level (repeatable; default: all, a launch row a spec row shows left out)",
    )
    parser.add_argument(
        "--compact",
        action="store_true",
        help="one table of key, A, B, why — no sources; neighbours that change for one reason share a row "
        "(for a PR description)",
    )
    add_format(parser, "rich", "markdown", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    a, b = pipeline.one(args.a), pipeline.one(args.b)
    pipeline.problems(a), pipeline.problems(b)
    result = diff(a, b, args.allow, args.level or LEVELS)
    if args.format == "json":
        print_json(compact.to_json(result) if args.compact else result.to_json())
    elif args.format == "markdown":
        sys.stdout.write(compact_markdown(result) if args.compact else markdown(result))
    else:
        _rich(result, args.compact)
    if result.allowed and result.outside_allowed:
        print(
            f"run-matrix: {counted(len(result.outside_allowed), 'key')}"
            f" {'differs' if len(result.outside_allowed) == 1 else 'differ'} outside the allowed deltas: "
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
            f"| `{d.key}` | {_cell(d.a, d.a_source)} | {_cell(d.b, d.b_source)} | {escape(d.why)} |"
            for d in differences
        ]
        lines.append("")
    return "\n".join(lines)


def compact_markdown(result: Diff) -> str:
    """One table, no sources; neighbours that change for one reason share a row (``args.perf.{a, b}``)."""
    lines = [
        f"**`{result.a}` → `{result.b}`**",
        "",
        f"| key | `{result.a}` | `{result.b}` | why |",
        "|---|---|---|---|",
    ]
    for row in compact.rows(result):
        a, b = _values(list(row.a)), _values(list(row.b))
        lines.append(f"| `{escape(row.key)}` | {a} | {b} | {escape(row.why)} |")
    return "\n".join(lines) + "\n"


def _values(values: list[Any]) -> str:
    shown = [_cell(v, None) for v in values]
    return shown[0] if len(set(shown)) == 1 else ", ".join(shown)


def _cell(value: Any, source: str | None) -> str:
    shown = "—" if value is None else f"`{escape(_text(value))}`"
    return f"{shown} <sub>{source}</sub>" if source else shown


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def _rich(result: Diff, one_list: bool) -> None:
    from rich.console import Console

    console = Console(file=sys.stdout)
    sections = [(title, getattr(result, attribute)) for attribute, title in SECTIONS]
    if one_list:  # --compact: one table, neighbours that change for one reason in one row, no sources
        sections = [("Differences", tuple(_as_difference(row) for row in compact.rows(result)))]
    for title, differences in sections:
        if not differences:
            continue
        # keys are never wrapped (a key broken mid-word cannot be searched for); values and reasons are
        key_width = max(len(d.key) for d in differences)
        if console.width >= key_width + 3 * 24 + 13:
            console.print(_rich_table(result, title, differences, key_width, one_list))
        else:
            _rich_list(console, result, title, differences, one_list)


def _as_difference(row: compact.Row) -> Difference:
    """A compact row as rich shows a difference: no sources, a group's values joined as markdown's are."""
    return Difference(row.key, _joined(row.a), _joined(row.b), None, None, row.why)


def _joined(values: tuple[Any, ...]) -> str | None:
    if all(value is None for value in values):
        return None
    shown = [_plain(value) for value in values]
    return shown[0] if len(set(shown)) == 1 else ", ".join(shown)


def _rich_table(
    result: Diff, title: str, differences: tuple[Difference, ...], key_width: int, compact: bool
) -> Any:
    from rich.table import Table

    table = Table(title=f"{title}: {result.a} → {result.b}", title_justify="left")
    table.add_column("key", no_wrap=True, min_width=key_width)
    for column in (result.a, result.b):
        table.add_column(column, overflow="fold", ratio=1)
    table.add_column("why", ratio=2)
    for d in differences:
        sources = (None, None) if compact else (d.a_source, d.b_source)
        table.add_row(d.key, _rich_cell(d.a, sources[0]), _rich_cell(d.b, sources[1]), d.why)
    return table


def _rich_list(
    console: Any, result: Diff, title: str, differences: tuple[Difference, ...], compact: bool
) -> None:
    """Too narrow for a table: each difference as its key, then ``A → B`` and the reason, indented."""
    from rich.padding import Padding
    from rich.text import Text

    console.print(Text(f"{title}: {result.a} → {result.b}", style="bold"))
    for d in differences:
        console.print(Text(d.key, style="bold"), soft_wrap=True)
        change = Text(_plain(d.a)) + Text(" → ", style="dim") + Text(_plain(d.b))
        if not compact and (d.a_source or d.b_source):
            change.append(f"  ({d.a_source or '—'} → {d.b_source or '—'})", style="dim")
        console.print(Padding(change, (0, 0, 0, 4)))
        if d.why:
            console.print(Padding(Text(d.why, style="italic"), (0, 0, 0, 4)))


def _plain(value: Any) -> str:
    return "—" if value is None else _text(value)


def _rich_cell(value: Any, source: str | None) -> str:
    from rich.markup import escape

    shown = "[dim]—[/]" if value is None else escape(_text(value))
    return f"{shown}\n[dim]{escape(source)}[/]" if source else shown
