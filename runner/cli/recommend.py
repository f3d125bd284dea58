"""run-matrix history recommend CELL|SPEC [--metric M]: a band for each gated metric from
its trusted runs, with the statistics it came from (``runner.results.history.recommend``)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from runner.cli.output import print_json
from runner.errors import UsageError
from runner.results.history.checks import printable

if TYPE_CHECKING:
    from runner.results.history.location import Location
    from runner.results.history.recommend import Recommendation
    from runner.results.history.write import Written


def run(location: Location, args: argparse.Namespace) -> int:
    from runner.results.history.reads import Reader

    names = args.names[1:]
    if not names:
        raise UsageError("usage: run-matrix history recommend CELL|SPEC [--metric M] [--rate P] [--write]")
    if not 0 < args.rate < 1:
        raise UsageError(
            f"--rate {args.rate}: give a false-failure rate between 0 and 1 (0.01: 1 run in 100)"
        )
    reader = Reader.open(location)
    try:
        cells = [cell for name in names for cell in _cells(reader, name, args.k)]
        found = [(cell, _recommend(reader, cell, args)) for cell in cells]
    finally:
        reader.close()
    written = _write(found) if args.write else []
    if args.format == "json":
        cells = [{"id": c.id, "metrics": [r.to_json() for r in rs]} for c, rs in found]
        print_json({"cells": cells, "written": [w.to_json() for w in written]})
    else:
        for cell, recommended in found:
            _print(cell.id, recommended)
        for each in written:
            print(f"wrote {each}")
        if args.write and not written:
            print("--write: no band to write, nothing written")
    return 0


def _write(found: list[tuple[Any, list[Recommendation]]]) -> list[Written]:
    from runner.results.history.write import write

    return write(found)


def _cells(reader: Any, name: str, expression: str | None) -> list[Any]:
    """The cells ``name`` selects: a spec or cell id as every command takes them, else a cell id the
    store knows, through the spec its newest run recorded."""
    from runner import pipeline
    from runner.results.history import checks, reads

    if name in reads.cells(reader):
        rows = reader.rows("runs", cell=name, last=1)
        spec = checks.Row(rows[0], reader.location.shown, "a run").text("spec")
        try:
            chosen = [cell for cell in pipeline.select([spec], expression) if cell.id == name]
        except UsageError:
            chosen = []
        if chosen:
            return chosen
    return pipeline.select([name], expression)


def _recommend(reader: Any, cell: Any, args: argparse.Namespace) -> list[Recommendation]:
    from runner.results.history import learn
    from runner.results.history.recommend import recommend

    expect = cell.spec.expect
    gated = [name for name, e in expect.items() if e.band is not None]
    metrics = [args.metric] if args.metric else gated
    if not metrics:
        raise UsageError(
            f"{printable(cell.id)} has no band in expect:; name the metric to recommend one for (--metric M)"
        )
    found = []
    for metric in metrics:
        expectation = expect.get(metric)
        selection = (expectation.selection if expectation is not None else None) or "last"
        trusted = learn.trusted(reader, cell.id, metric, selection, args.last)
        found.append(recommend(metric, trusted.values or {}, args.rate))
    return found


def _print(cell: str, recommended: list[Recommendation]) -> None:
    for r in recommended:
        head = f"{printable(cell)}: {printable(r.metric)}"
        if not r.band:
            print(f"{head}: no band: {r.problem}")
            continue
        band = ", ".join(f"{key}: {value:g}" for key, value in r.band.items())
        megatron = ", ".join(f"{key}: {value:.3g}" for key, value in r.megatron.items())
        print(f"{head}: band {{{band}}}")
        print(f"  {r.why()}")
        print(f"  Megatron's rule on the same runs: {{{megatron}}}")
        if not math.isfinite(r.spread) or r.spread == 0:
            print("  every run printed the same value: the band is as tight as the numbers' precision")
