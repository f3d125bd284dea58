"""run-matrix flags: the flag catalogs — show what a miles version accepts, or sync one from sources."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from runner import atomic
from runner.cli.output import add_format, add_miles_root, print_json
from runner.errors import EnvironmentProblem, Location, UsageError, counted
from runner.knowledge import flags
from runner.knowledge.flags.catalog import COLUMNS, Catalog, Flag

MAX_SHOWN = 50


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Every flag a miles version's launch accepts (miles', Megatron's, SGLang's under "
        "--sglang-), with aliases, type, choices and arity. `show` searches a catalog; `sync` rebuilds one "
        "from a miles checkout and the Megatron-LM, SGLang and sglang-router source trees its container "
        "installs, read statically (nothing is imported or run). `show --format json` prints them as data.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="a flag (any spelling) or the flags whose names contain TEXT")
    show.add_argument(
        "text",
        nargs="?",
        metavar="NAME|TEXT",
        help="a flag under any spelling, or text its name contains (without it: every flag)",
    )
    show.add_argument(
        "--miles-version",
        metavar="COMMIT",
        help="the miles commit whose shipped catalog to show (default: the newest shipped)",
    )
    add_miles_root(show, "its own miles flags are shown, with Megatron's and SGLang's of the shipped catalog")
    add_format(show, "text", "json")
    show.set_defaults(handler=run_show)
    sync = actions.add_parser("sync", help="rebuild a catalog from source trees")
    sync.add_argument("--miles-root", type=Path, required=True, help="the miles checkout (a git clone)")
    sync.add_argument(
        "--megatron", type=Path, required=True, help="the Megatron-LM tree its container installs"
    )
    sync.add_argument(
        "--sglang", type=Path, required=True, help="the SGLang tree (a checkout or an unpacked wheel)"
    )
    sync.add_argument(
        "--router", type=Path, help="the sglang-router tree (unpacked wheel) for miles' --router-*"
    )
    sync.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="PROGRAM=TEXT",
        help="describe a source in the catalog (e.g. sglang='sglang 0.5.10 wheel'); repeatable",
    )
    sync.add_argument(
        "-o", "--output", type=Path, default=flags.SHIPPED, help="folder (default: miles/flags/)"
    )
    sync.set_defaults(handler=run_sync)


def run_show(args: argparse.Namespace) -> int:
    if args.miles_root is not None and not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    choice = flags.choose(
        args.miles_version, args.miles_root, Location(Path("--miles-version")), "--miles-version"
    )
    catalog = choice.catalog
    found = _matching(catalog, args.text) if args.text else []
    if args.format == "json":
        print_json(
            {
                "catalog": catalog.origin,
                "why": choice.reason,
                "sources": catalog.sources,
                "flags": [_json(f) for f in found],
            }
        )
        return 0
    why = choice.reason if choice.stated else "the newest shipped catalog (--miles-version picks another)"
    print(f"{catalog.origin}: {why}")
    for program, source in catalog.sources.items():
        print(f"  {program}: {source}")
    if args.text and not found:
        raise UsageError(f"no flag of {catalog.origin} contains {args.text!r}")
    for flag in found[:MAX_SHOWN]:
        print(flag.describe())
    if len(found) > MAX_SHOWN:
        print(f"... and {len(found) - MAX_SHOWN} more")
    return 0


def _matching(catalog: Catalog, text: str) -> list[Flag]:
    exact = catalog.lookup(text.lstrip("-"))
    if exact is not None:
        return [exact]
    return [f for f in catalog.flags if any(text in n for n in (f.name, *f.aliases))]


def _json(flag: Flag) -> dict[str, Any]:
    return dict(zip(COLUMNS, flag.to_row(), strict=True))


def run_sync(args: argparse.Namespace) -> int:
    from runner.knowledge.flags.sync import build

    for option in ("miles_root", "megatron", "sglang", "router"):
        path = getattr(args, option)
        if path is not None and not path.is_dir():
            raise UsageError(f"--{option.replace('_', '-')} {path}: no such directory")
    notes = dict(_note(text) for text in args.source)
    catalog, report = build(args.miles_root, args.megatron, args.sglang, args.router)
    catalog = Catalog(catalog.miles, catalog.date, {**catalog.sources, **notes}, catalog.flags)
    path = args.output / f"{catalog.date}-{catalog.miles}.json"
    try:
        args.output.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, catalog.to_json())
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror or exc}") from None
    counts = {
        p: sum(f.program == p for f in catalog.flags) for p in dict.fromkeys(f.program for f in catalog.flags)
    }
    print(
        f"wrote {path}: {counted(len(catalog.flags), 'flag')} ("
        + ", ".join(f"{p} {n}" for p, n in counts.items())
        + ")"
    )
    for line in report.unreadable:
        print(f"  not readable statically: {line}")
    return 0


def _note(text: str) -> tuple[str, str]:
    program, equals, note = text.partition("=")
    if not equals or program not in ("miles", "megatron", "sglang", "router"):
        raise UsageError(
            f"--source {text!r}: write PROGRAM=TEXT, PROGRAM one of miles, megatron, sglang, router"
        )
    return program, note
