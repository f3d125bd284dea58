"""run-matrix presets: the model presets (MODEL_ARGS) run-matrix ships, or a miles checkout's own."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from runner.cli.output import add_format, add_miles_root, add_trust_checkout, print_json
from runner.errors import Location, SpecError, UsageError, counted, did_you_mean, display_path
from runner.knowledge import bundled, checkout, preset_data, versions
from runner.spec import locate


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="The model presets: those run-matrix ships (miles/models/), or with --miles-root those "
        "of a miles checkout, expanded as miles expands them — scripts/models/<type>.py through the "
        "checkout's own model_args_utils, scripts/models/<type>.sh by bash — in the sandbox (no network, "
        "nothing of yours visible), cached by the content of the files they read. Both actions take "
        "--format json.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="every model type, its source and whether it expands")
    show = actions.add_parser("show", help="one type's MODEL_ARGS")
    show.add_argument("type", metavar="TYPE", help="a model type (qwen3-30B-A3B): `presets list` names them")
    show.add_argument(
        "--miles-version",
        metavar="COMMIT",
        help="the shipped miles version to show (default: the newest that has the type)",
    )
    sync = actions.add_parser(
        "sync",
        help="rewrite run-matrix's shipped presets from a miles checkout (every model type of it)",
        description="Expand every scripts/models/ preset of the checkout in the sandbox and write "
        "miles/models/<date>-<commit8>/<type>.yaml (description and sparse_attention carried over). "
        "--check writes nothing: exit 1 on any drift, a preset that does not expand, or one that differs "
        "from the checkout's tests/snapshots/model_args/<type>.txt. Takes --format json.",
    )
    sync.add_argument("--check", action="store_true", help="report drift, write nothing")
    for sub in (listing, show, sync):
        add_miles_root(sub, "its own presets (without one, run-matrix's shipped presets)")
        add_trust_checkout(sub)
        add_format(sub, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "sync":
        return _sync(args)
    if args.action == "list":
        found = _from_checkout(args) if args.miles_root is not None else _shipped()
        rows = [{"type": name, **entry} for name, entry in found.items()]
        if args.format == "json":
            print_json({"presets": rows})
        for row in rows if args.format == "text" else ():
            state = row["error"] or f"{len(row['model_args'])} tokens"
            print(f"{row['type']:<36} {(row['miles_commit'] or '')[:8]:<9} {row['source']:<44} {state}")
        return 0
    entry = {"type": args.type, **_one(args)}
    if args.format == "json":
        print_json({k: entry[k] for k in ("type", "model_args", "source", "miles_commit")})
    else:
        print(f"# {entry['type']}: {entry['source']} (miles {entry['miles_commit'] or 'commit unknown'})")
        print(" ".join(entry["model_args"]))
    return 0


def _one(args: argparse.Namespace) -> dict[str, Any]:
    """The preset ``presets show`` shows: the checkout's, else the shipped one the version names."""
    if args.miles_root is None:
        shipped = preset_data.shipped()
        if args.miles_version and len(versions.matching(args.miles_version, shipped)) != 1:
            known = ", ".join(v.commit for v in shipped)
            raise UsageError(
                f"--miles-version {args.miles_version} names no single shipped version ({known})"
            )
        chosen = preset_data.choose(args.type, args.miles_version, Location(Path("--miles-version")))
        return _shipped_entry(chosen)
    found = _from_checkout(args)
    if args.type not in found:
        where = args.miles_root / "scripts/models"
        raise SpecError.one(
            "unknown-name",
            f"no model preset {args.type!r} in {where}",
            key="model.type",
            at=[Location(where)],
            hint=did_you_mean(args.type, found) or f"known: {', '.join(found)}",
        )
    if found[args.type]["error"]:
        at = [Location(Path(found[args.type]["path"]))]
        raise SpecError.one(
            "model-args", f"{args.type}: {found[args.type]['error']}", key="model.type", at=at
        )
    return found[args.type]


def _from_checkout(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    from runner.knowledge import presets

    root: Path = args.miles_root
    if not root.is_dir():
        raise UsageError(f"--miles-root {root}: no such directory")
    commit = checkout.head_commit(root)
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
    """Every shipped preset, the newest version of each type."""
    names = sorted({p.stem for v in preset_data.shipped() for p in v.path.glob("*.yaml")})
    return {name: _shipped_entry(preset_data.choose(name, None, Location(locate.PRESETS))) for name in names}


def _shipped_entry(chosen: preset_data.Chosen) -> dict[str, Any]:
    from schemas.values import flag_tokens

    preset, _ = bundled.load_preset(
        chosen.path.stem, Location(chosen.path), chosen.path, chosen.version.commit
    )
    return {
        "model_args": [t for flag, value in preset.model_args.items() for t in flag_tokens(flag, value)],
        "source": preset.source,
        "path": str(chosen.path),
        "miles_commit": preset.miles_commit,
        "error": "",
    }


def _sync(args: argparse.Namespace) -> int:
    from runner.knowledge import preset_sync

    if args.miles_root is None:
        raise UsageError("presets sync needs a miles checkout: --miles-root DIR (or $MILES_ROOT)")
    if not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    planned = preset_sync.plan(args.miles_root.resolve(), trust=args.trust_checkout, check=args.check)
    if not args.check:
        preset_sync.write(planned)
    folder = display_path(planned.folder)
    report = {
        "folder": folder,
        "presets": len(planned.texts),
        "changed": planned.changed,
        "removed": [p.stem for p in planned.stale],
        "failed": planned.failed,
        "snapshots": planned.snapshots,
    }
    if args.format == "json":
        print_json(report)
    else:
        _print_sync(planned, folder, args.check)
    return 1 if args.check and not planned.in_sync else 0


def _print_sync(planned: Any, folder: str, check: bool) -> None:
    verb = "differs from" if check else "written to"
    for name in planned.changed:
        there = (planned.folder / f"{name}.yaml").is_file()
        print(
            f"{name}: {verb} {folder}/{name}.yaml" if there or not check else f"{name}: new (not in {folder})"
        )
    for path in planned.stale:
        print(
            f"{path.stem}: {'left in' if check else 'removed from'} {folder} (the checkout has no such type)"
        )
    for name, error in planned.failed.items():
        print(f"{name}: not expanded: {error}")
    for name, same in planned.snapshots.items():
        if not same:
            print(f"{name}: differs from the checkout's tests/snapshots/model_args/{name}.txt")
    counts = f"{len(planned.changed)} changed, {len(planned.stale)} stale, {len(planned.failed)} not expanded"
    equal = f"{sum(planned.snapshots.values())}/{len(planned.snapshots)}"
    print(
        f"{counted(len(planned.texts), 'preset')} in {folder}; {counts};"
        f" {equal} equal to the checkout's snapshots"
    )
