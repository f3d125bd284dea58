"""Prepare step: patch a Hugging Face ``config.json`` in place (miles-facts §3).

Run on the node as ``python3 -m runner.patch_hf_config CONFIG --set JSON
[--unless JSON] [--copy-rope-theta]``. Skipped when the file is absent or
already has every ``--unless`` value; the file is rewritten as JSON, indent 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def patch(config: dict[str, Any], updates: dict[str, Any], copy_rope_theta: bool) -> dict[str, Any]:
    patched = {**config, **updates}
    rope_theta = (config.get("rope_parameters") or {}).get("rope_theta")
    if copy_rope_theta and "rope_theta" not in patched and rope_theta is not None:
        patched["rope_theta"] = rope_theta  # older mbridge reads it at the top level
    return patched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m runner.patch_hf_config", description=__doc__)
    parser.add_argument("config", type=Path)
    parser.add_argument("--set", type=json.loads, required=True, help="JSON object of keys to set")
    parser.add_argument("--unless", type=json.loads, default={}, help="skip when these values are present")
    parser.add_argument("--copy-rope-theta", action="store_true")
    args = parser.parse_args(argv)
    if not args.config.is_file():
        print(f"skip: {args.config} does not exist")
        return 0
    config = json.loads(args.config.read_text(encoding="utf-8"))
    if args.unless and all(config.get(k) == v for k, v in args.unless.items()):
        print(f"skip: {args.config} already has {args.unless}")
        return 0
    args.config.write_text(json.dumps(patch(config, args.set, args.copy_rope_theta), indent=2) + "\n")
    print(f"patched {args.config}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
