#!/usr/bin/env python3
"""Every preset of a real miles checkout, expanded by run-matrix (in the sandbox) and compared:

* with the checkout's own oracle, ``tests/snapshots/model_args/<type>.txt`` (one JSON-quoted
  token per line), where the checkout has it (miles main);
* for ``scripts/models/*.sh``, with what plain bash gives when it sources the file on this
  machine, outside any sandbox (as ``execute_train`` of the PR #1124 era does).

  python tools/presets/check_checkout.py MILES_CHECKOUT

Prints one line per disagreement and the figures; exit 1 on any disagreement. Runs the
checkout's code unsandboxed for the bash comparison: use it on a checkout you trust.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from runner.knowledge import presets


def bash_tokens(path: Path) -> tuple[str, ...]:
    script = 'source "$1" >&2 && printf "%s\\0" "${MODEL_ARGS[@]}"'
    done = subprocess.run(["bash", "-c", script, "bash", str(path)], capture_output=True, check=True)
    return tuple(done.stdout.decode().split("\0")[:-1])


def snapshot_tokens(path: Path) -> tuple[str, ...]:
    return tuple(json.loads(line) for line in path.read_text().splitlines() if line.strip())


def main(checkout: Path) -> int:
    expanded = presets.expand(checkout)
    wrong = [f"{name}: {e.error}" for name, e in expanded.items() if e.error]
    snapshots = checkout / "tests/snapshots/model_args"
    same_snapshot = same_bash = compared_snapshot = compared_bash = 0
    for name, e in sorted(expanded.items()):
        if (snapshots / f"{name}.txt").is_file():
            compared_snapshot += 1
            if e.tokens == snapshot_tokens(snapshots / f"{name}.txt"):
                same_snapshot += 1
            else:
                wrong.append(f"{name}: differs from tests/snapshots/model_args/{name}.txt")
        if e.source.suffix == ".sh":
            compared_bash += 1
            if e.tokens == bash_tokens(e.source):
                same_bash += 1
            else:
                wrong.append(f"{name}: differs from what bash gives for {e.source.name}")
    for line in wrong:
        print(line)
    print(
        f"{checkout} at {presets.commit_of(checkout)}: {len(expanded)} presets expanded, "
        f"{same_snapshot}/{compared_snapshot} equal to tests/snapshots/model_args, "
        f"{same_bash}/{compared_bash} .sh equal to plain bash"
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()))
