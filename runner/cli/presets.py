"""run-matrix presets: the model presets (MODEL_ARGS) run-matrix ships, or a miles checkout's own."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from runner import locate, pipeline
from runner.cli.output import add_format, add_trust_checkout, print_json
from runner.errors import Location, SpecError, UsageError, did_you_mean


def add_parser(subcommands: Any, name: str) -> None:
    parser = subcommands.add_parser(
        name,
        help="list the model presets, or show one's MODEL_ARGS",
        description="The model presets: those run-matrix ships (miles/models/), or with --miles-root those "
        "of a miles checkout, expanded as miles expands them — scripts/models/<type>.py through the "
        "checkout's own model_args_utils, scripts/models/<type>.sh by bash — in the sandbox (no network, "
        "nothing of yours visible), cached by the content of the files they read. Both actions take "
        "--format json.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every model type, its source and whether it expands")
    show = actions.add_parser("show", help="one type's MODEL_ARGS")
    show.add_argument("type", metavar="TYPE")
    for sub in (listing, show):
        sub.add_argument(
            "--miles-root",
            type=Path,
            metavar="DIR",
            default=os.environ.get("MILES_ROOT") or None,
            help="a miles checkout (default: $MILES_ROOT); without one, run-matrix's shipped presets",
        )
        add_trust_checkout(sub)
        add_format(sub, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    found = _from_checkout(args) if args.miles_root is not None else _shipped()
    if args.action == "list":
        rows = [{"type": name, **entry} for name, entry in found.items()]
        if args.format == "json":
            print_json({"presets": rows})
        for row in rows if args.format == "text" else ():
            state = row["error"] or f"{len(row['model_args'])} tokens"
            print(f"{row['type']:<40} {row['source']:<50} {state}")
        return 0
    if args.type not in found:
        where = args.miles_root / "scripts/models" if args.miles_root else locate.PRESETS
        raise SpecError.one(
            "unknown-name",
            f"no model preset {args.type!r} in {where}",
            key="model.type",
            at=[Location(where)],
            hint=did_you_mean(args.type, found) or f"known: {', '.join(found)}",
        )
    entry = {"type": args.type, **found[args.type]}
    if entry["error"]:
        raise SpecError.one(
            "model-args",
            f"{args.type}: {entry['error']}",
            key="model.type",
            at=[Location(Path(entry["path"]))],
        )
    if args.format == "json":
        print_json({k: entry[k] for k in ("type", "model_args", "source", "miles_commit")})
    else:
        print(f"# {entry['type']}: {entry['source']} (miles {entry['miles_commit'] or 'commit unknown'})")
        print(" ".join(entry["model_args"]))
    return 0


def _from_checkout(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    from runner.knowledge import presets

    root: Path = args.miles_root
    if not root.is_dir():
        raise UsageError(f"--miles-root {root}: no such directory")
    commit = presets.commit_of(root)
    return {
        name: {
            "model_args": list(e.tokens),
            "source": str(e.source.relative_to(root.resolve())),
            "path": str(e.source),
            "miles_commit": commit,
            "error": e.error,
        }
        for name, e in presets.expand(root, trust=args.trust_checkout).items()
    }


def _shipped() -> dict[str, dict[str, Any]]:
    from schemas.values import flag_tokens

    found: dict[str, dict[str, Any]] = {}
    for path in sorted(locate.PRESETS.glob("*.yaml")):
        preset, _ = pipeline.load_preset(path.stem, Location(path), path)
        tokens = [t for flag, value in preset.model_args.items() for t in flag_tokens(flag, value)]
        found[path.stem] = {
            "model_args": tokens,
            "source": f"miles/models/{path.name}",
            "path": str(path),
            "miles_commit": None,
            "error": "",
        }
    return found
