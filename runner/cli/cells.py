"""run-matrix list: the cells of specs and folders, with status and content hash."""

from __future__ import annotations

import argparse
from typing import Any

from runner import pipeline
from runner.cell import Cell
from runner.cli.output import SELECT_HELP, add_format, print_json
from runner.layout import layout


def add_parser(subcommands: Any, name: str) -> None:
    parser = subcommands.add_parser(
        name,
        help="list the cells of specs and folders (default: matrices/)",
        description="List every cell: id, hardware, GPUs it needs (nodes x GPUs per node), status "
        "(runnable, skipped with its reason, xfail) and the content hash of its resolved spec.",
    )
    parser.add_argument("specs", nargs="*", default=["matrices"], metavar="SPEC|DIR|CELL")
    parser.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    rows = [_row(cell) for cell in pipeline.select(args.specs, args.k)]
    if args.format == "json":
        print_json({"cells": rows})
        return 0
    header = {"id": "CELL", "hardware": "HARDWARE", "gpus": "GPUS", "status": "STATUS", "hash": "HASH"}
    widths = {key: max(len(str(row[key])) for row in [header, *rows]) for key in ("id", "hardware", "gpus")}
    for row in [header, *rows]:
        status = row["status"] if row is header else _status_text(row)
        print(
            f"{row['id']:<{widths['id']}}  {row['hardware']:<{widths['hardware']}}  "
            f"{row['gpus']!s:>{widths['gpus']}}  {row['hash']:<12}  {status}"
        )
    return 0


def _row(cell: Cell) -> dict[str, Any]:
    facts = layout(cell)
    return {
        "id": cell.id,
        "hardware": cell.profile.name,
        "gpus": facts.cluster_gpus,
        "status": cell.status,
        "reason": cell.skip.reason if cell.skip else cell.xfail,
        "issue": cell.skip.issue if cell.skip else None,
        "expires": cell.skip.expires.isoformat() if cell.skip and cell.skip.expires else None,
        "timeout": cell.timeout,
        "axes": cell.axes,
        "hash": cell.content_hash,
    }


def _status_text(row: dict[str, Any]) -> str:
    if row["status"] == "runnable":
        return "runnable"
    extra = [part for part in (row["issue"], row["expires"] and f"until {row['expires']}") if part]
    return f"{row['status']}: {row['reason']}" + (f" ({', '.join(extra)})" if extra else "")
