#!/usr/bin/env python3
"""Import a miles test whose launch takes what a prepare call returns, run that call as ``run`` runs
it, and check the launch it fills: by default the FT soak test whose
``materialize_cyclic_debug_rollout_data(30)`` links the rollout files of a download into a fresh
folder that ``--load-debug-rollout-data`` reads.

  python tools/importer/check_prepared_call.py MILES_CHECKOUT [--python PY] [--files N] [TEST]

The call is the checkout's own code, run outside import's sandbox, so PY (default: ``python3`` on
PATH) must have what the test's modules import (miles' node has: torch, typer, ray, httpx, pydantic).
It runs with ``MILES_SCRIPT_DATA_DIR`` set to a scratch folder holding N empty ``.pt`` files where the
download would have put them, as miles' test reads that variable. Exit 1 when the import is refused,
the call fails, or the folder it returned does not hold one link per step, cycling over the files.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import shutil
import sys
import tempfile
from pathlib import Path

from runner import pipeline
from runner.errors import RunMatrixError
from runner.importer import Request, import_test
from runner.launch.render import Context, render
from runner.run.prepare import run_step
from runner.spec.runtime import prepared

FT_TEST = "tests/e2e/ft/test_trainer_ft_random_dp2_cp2_tp2_ep2.py"
ROLLOUT_DATA = "miles-test-rollout-Qwen3-30B-A3B-5layer"  # the download's folder under the data dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("test", nargs="?", default=FT_TEST)
    parser.add_argument("--python", default=shutil.which("python3") or "python3")
    parser.add_argument("--files", type=int, default=3, help="rollout files the download holds")
    args = parser.parse_args()
    root = args.checkout.resolve()
    with tempfile.TemporaryDirectory(prefix="check-prepared-") as scratch:
        spec = Path(scratch) / "spec.yaml"
        try:
            import_test(Request(root / args.test, spec, miles_root=root, today=datetime.date.today()))
        except RunMatrixError as error:
            print(f"REFUSED {args.test}: {error}")
            return 1
        data = Path(scratch) / "datasets"
        (data / ROLLOUT_DATA).mkdir(parents=True)
        for i in range(args.files):
            (data / ROLLOUT_DATA / f"{i}.pt").touch()
        env = {
            **os.environ,
            "PATH": f"{Path(args.python).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "MILES_SCRIPT_DATA_DIR": str(data),
            "TMPDIR": scratch,
        }
        return _check(spec, root, env, data / ROLLOUT_DATA)


def _check(spec: Path, root: Path, env: dict[str, str], files: Path) -> int:
    """Run each prepare call a flag takes, fill the launch, and check the folders it names."""
    cell = pipeline.cell(spec)
    rendered = render(cell, Context(miles_root=str(root)))
    results: dict[str, str] = {}
    for name, function in prepared.call_steps(cell.spec):
        command = next(c for c in rendered.commands if c.name == name)
        if not command.result:
            continue
        record = run_step(name, cell.spec.prepare[name], command, env, print)
        print(f"{record.status} {name}: {record.detail}")
        if record.result is None:
            return 1
        results[function] = record.result
    argv = prepared.filled(rendered.train_args, results)
    taken = [
        (flag, value) for flag, value in itertools.pairwise(argv) if any(r in value for r in results.values())
    ]
    wrong = 0
    for flag, value in taken:
        folder = Path(value).parent
        links = sorted(folder.iterdir(), key=lambda p: int(p.stem))
        targets = [os.readlink(p) for p in links]
        cycling = all(
            Path(t) == files / f"{i % len(list(files.iterdir()))}.pt" for i, t in enumerate(targets)
        )
        wrong += not cycling
        print(
            f"{'ok  ' if cycling else 'DIFF'} {flag} {value}: {len(links)} links, to {sorted(set(targets))}"
        )
    print(f"{len(results)} prepare call(s) filled {len(taken)} flag(s); {wrong} wrong")
    return 1 if wrong or not taken else 0


if __name__ == "__main__":
    sys.exit(main())
