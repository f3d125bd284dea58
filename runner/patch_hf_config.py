"""Prepare step: patch a Hugging Face ``config.json`` in place (miles-facts §3).

A stand-alone program (standard library only): ``render`` puts this file's text into the
launch script (``python3 - CONFIG --set JSON [--unless JSON] [--copy-rope-theta]``,
the program on stdin), so the GPU node needs no run-matrix. ``--set`` is applied unless
the config already has every ``--unless`` value; ``--copy-rope-theta`` copies
``rope_parameters.rope_theta`` to a top-level ``rope_theta`` when there is none (older
mbridge reads it there; transformers v5 nests it). The file is rewritten, as miles' own
tests write it (indent 2, UTF-8 as is), only when something changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def patched(
    config: dict[str, Any], updates: dict[str, Any], unless: dict[str, Any], copy_rope_theta: bool
) -> dict[str, Any] | None:
    """The patched config, or None when there is nothing to do."""
    result = dict(config)
    dirty = False
    if not (unless and all(config.get(k) == v for k, v in unless.items())):
        result.update(updates)
        dirty = bool(updates)
    rope = config.get("rope_parameters")
    if copy_rope_theta and "rope_theta" not in result and isinstance(rope, dict) and "rope_theta" in rope:
        result["rope_theta"] = rope["rope_theta"]
        dirty = True
    return result if dirty else None


def text(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=2, ensure_ascii=False)


def planned(
    path: Path, updates: dict[str, Any], unless: dict[str, Any], copy_rope_theta: bool
) -> tuple[str, dict[str, Any] | None]:
    """Why patching ``path`` is skipped (absent, already patched) and None, or "" and the patched
    config. A config that cannot be read or is not JSON raises (OSError, ValueError)."""
    if not path.is_file():
        return f"{path} does not exist", None
    result = patched(json.loads(path.read_text(encoding="utf-8")), updates, unless, copy_rope_theta)
    return (f"{path} is already patched", None) if result is None else ("", result)


def apply(path: Path, updates: dict[str, Any], unless: dict[str, Any], copy_rope_theta: bool) -> str:
    """Patch ``path`` in place unless it is skipped; what happened, in a line."""
    skip, result = planned(path, updates, unless, copy_rope_theta)
    if result is None:
        return f"skip: {skip}"
    path.write_text(text(result), encoding="utf-8")
    return f"patched {path}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="patch-hf-config", description="Patch a Hugging Face config.json.")
    parser.add_argument("config", type=Path)
    parser.add_argument("--set", type=json.loads, required=True, help="JSON object of keys to set")
    parser.add_argument(
        "--unless", type=json.loads, default={}, help="skip --set when these values are present"
    )
    parser.add_argument("--copy-rope-theta", action="store_true")
    args = parser.parse_args(argv)
    print(apply(args.config, args.set, args.unless, args.copy_rope_theta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
