"""run-matrix list: the cells of specs and folders, with status and content hash."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from runner import pipeline
from runner.cells.cell import Cell
from runner.cells.layout import layout
from runner.ci import estimate
from runner.cli.output import (
    SELECT_HELP,
    add_changed,
    add_format,
    add_miles_python,
    add_miles_root,
    add_trust_checkout,
    miles_verdicts,
    needs_miles_root,
    print_json,
)
from runner.errors import UsageError, counted, printable
from schemas.ci import CI


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="List every cell: id, hardware, GPUs it needs (nodes x GPUs per node), status "
        "(runnable, or 'runnable, 2 TODOs' while todo: entries are open; skipped with its reason, xfail; "
        "with requires: and no miles checkout to check them "
        "against: requirements unchecked), the content hash of its resolved spec, and its CI block "
        "(suite or runner label, est_time and where it comes from, nightly) when a cell has one. With a "
        "miles checkout, each cell's requires: are checked as run checks them: a cell whose requirement "
        "is unmet is listed as unmet, with the reason.",
    )
    parser.add_argument(
        "specs",
        nargs="*",
        default=["matrices"],
        metavar="SPEC|DIR|CELL",
        help="spec files, folders or cell ids",
    )
    parser.add_argument("-k", metavar="EXPR", help=SELECT_HELP)
    add_miles_root(parser, "check requires: against it (git, package, file, env)")
    add_miles_python(
        parser,
        "run the --miles-root checkout's own parse_args() on each listed cell's launch in the sandbox, as"
        " validate --miles-python does: a MILES column says accepts, refuses (miles' message on stderr) or"
        " unchecked (a value decided at launch); JSON: miles and miles_problems per cell",
    )
    add_trust_checkout(parser)
    parser.add_argument(
        "--history",
        metavar="PATH|URL",
        help="est_time from the durations recorded there, as `ci plan` takes it: a SQLite file or "
        "postgresql://... (without it: from the specs)",
    )
    add_changed(parser)
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.miles_root is not None and not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    needs_miles_root(args)
    cells = pipeline.select(args.specs, args.k, miles_root=args.miles_root)
    chosen = None
    if args.changed is not None or args.since is not None:
        from runner.changed.gather import narrow  # reads git and the checkout: only when asked

        chosen = narrow(cells, args.changed, args.since, args.miles_root)
    why = {s.cell.id: list(s.reasons) for s in chosen} if chosen is not None else {}
    cells = [s.cell for s in chosen] if chosen is not None else cells
    durations = estimate.recorded(args.history, {}, [c.id for c in cells])  # asked for only
    rows = [_row(cell, durations.get(cell.id, ())) for cell in cells]
    for row in rows if why else []:
        row["changed"] = why[row["id"]]  # JSON only: the inputs that selected it
    if args.miles_root is not None:
        from runner.run import requires  # checks git, packages, files and env: only when asked

        for cell, row in zip(cells, rows, strict=True):
            _with_requirements(row, requires.check(cell, args.miles_root.resolve(), os.environ))
    else:
        for cell, row in zip(cells, rows, strict=True):
            _unchecked(row, cell)
    if args.miles_python is not None:
        _with_miles(rows, cells, args)
    if args.format == "json":
        print_json({"cells": rows})
        return 0
    header = {"id": "CELL", "hardware": "HARDWARE", "gpus": "GPUS", "status": "STATUS", "hash": "HASH"}
    # a CI column only where some cell says something of its CI (or history measured it)
    shown_ci = any(
        row["ci"] != CI().model_dump(mode="json") or row["est_source"] == "history" for row in rows
    )
    # a cell id holds an axis value as written: a newline or an ESC in it is printed escaped
    heads = {**header, "ci": "CI", "miles": "MILES"}
    texts = [heads, *({**_shown(row), "ci": printable(_ci_text(row))} for row in rows)]
    keys = ("id", "hardware", "gpus", "ci")
    widths = {key: max(len(str(row[key])) for row in texts) for key in keys}
    for row in texts:
        status = row["status"] if row is texts[0] else printable(_status_text(row))
        ci = f"{row['ci']:<{widths['ci']}}  " if shown_ci else ""
        miles = f"{row['miles']:<9}  " if args.miles_python is not None else ""
        print(
            f"{row['id']:<{widths['id']}}  {row['hardware']:<{widths['hardware']}}  "
            f"{row['gpus']!s:>{widths['gpus']}}  {row['hash']:<12}  {ci}{miles}{status}"
        )
    return 0


def _with_miles(rows: list[dict[str, Any]], cells: list[Cell], args: argparse.Namespace) -> None:
    """Each row's verdict of miles' own parser (accepts, refuses, unchecked) and its problems."""
    from runner import miles_parser

    found = miles_verdicts(cells, args)
    for cell, row in zip(cells, rows, strict=True):
        row["miles"] = miles_parser.verdict(found[cell.id])
        row["miles_problems"] = [p.to_json() for p in found[cell.id]]


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "id": printable(row["id"]), "hardware": printable(row["hardware"])}


def _ci_text(row: dict[str, Any]) -> str:
    """``stage-c-4-gpu-mi350, 500 s (spec), nightly``."""
    ci = row["ci"]
    where = ci["suite"] or ci["runs_on"]
    parts = [where] if where else []
    parts.append(f"{row['est_time']} s ({row['est_source']})")
    return ", ".join(parts + (["nightly"] if ci["nightly"] else []))


def _row(cell: Cell, durations: Sequence[float] = ()) -> dict[str, Any]:
    facts = layout(cell)
    seconds, source = estimate.est_time(cell, durations)
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
        "ci": cell.spec.ci.model_dump(mode="json"),
        "todo": list(cell.spec.todo),  # open decisions (port's, upgrade's): runnable, but not done
        "est_time": seconds,
        "est_source": source,
    }


def _with_requirements(row: dict[str, Any], checked: tuple[Any, ...]) -> None:
    row["requirements"] = [
        {"name": r.name, "kind": r.kind, "met": r.met, "optional": r.optional, "detail": r.detail}
        for r in checked
    ]
    unmet = [r for r in checked if not r.met and not r.optional]
    if unmet and row["status"] == "runnable":
        row["status"], row["reason"] = "unmet", "; ".join(f"requires.{r.name}: {r.detail}" for r in unmet)


UNCHECKED = "requirements unchecked (no --miles-root)"  # what list and coverage say of them without one


def _unchecked(row: dict[str, Any], cell: Cell) -> None:
    """A cell whose requires: no checkout checked is not called runnable: run may skip it."""
    if cell.spec.requires and row["status"] == "runnable":
        named = ", ".join(f"requires.{name}" for name in cell.spec.requires)
        row["status"], row["reason"] = "unchecked", f"{UNCHECKED}: {named}"


def _status_text(row: dict[str, Any]) -> str:
    if row["status"] == "runnable":
        todo = f", {counted(len(row['todo']), 'TODO')}" if row["todo"] else ""
        return _runnable(row.get("requirements")) + todo
    if row["status"] in ("unmet", "unchecked"):
        return row["reason"] if row["status"] == "unchecked" else f"unmet: {row['reason']}"
    extra = [part for part in (row["issue"], row["expires"] and f"until {row['expires']}") if part]
    return f"{row['status']}: {row['reason']}" + (f" ({', '.join(extra)})" if extra else "")


def _runnable(checked: list[dict[str, Any]] | None) -> str:
    """``runnable``, with the requirements a checkout met and each optional one it did not."""
    if not checked:
        return "runnable"
    optional = [r for r in checked if not r["met"]]
    met = f"runnable ({counted(len(checked) - len(optional), 'requirement')} met"
    return met + "".join(f"; optional requires.{r['name']}: {r['detail']}" for r in optional) + ")"
