"""Run upstream's GLM-5 config.json patch and ours on the same files; they must leave the same bytes.

    python tools/compare_config_patch.py --miles-root /work/miles-pr [CONFIG.json ...]

Upstream's patch is ``_process_glm_checkpoint()`` of miles' tests/e2e/megatron/
test_glm5_744b_a40b_4layer{,_rocm}.py. Only that function is taken from each file (by its
syntax tree; the module, with its imports and registrations, is never run) and it runs in
a separate ``python3 -I`` on a copy of the sample, in a scratch directory, with an empty
environment. Ours is the ``patch-config`` step that ``run-matrix render`` gives
nv/glm5-colocate and rocm/glm5-async, run as the rendered script runs it (the program on
stdin). The samples default to tests/data/hf-configs/*.json (with and without
``rope_parameters``, patched before and not). Exit 0 when every pair leaves equal bytes.
"""

from __future__ import annotations

import argparse
import ast
import functools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner import pipeline  # noqa: E402
from runner.launch.render import render  # noqa: E402

PAIRS = {
    "nv/glm5-colocate": "tests/e2e/megatron/test_glm5_744b_a40b_4layer.py",
    "rocm/glm5-async": "tests/e2e/megatron/test_glm5_744b_a40b_4layer_rocm.py",
}
CHECKPOINT = "/root/models/GLM-5_4layer/config.json"  # what the specs render


def upstream_function(test_file: Path) -> str:
    tree = ast.parse(test_file.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "_process_glm_checkpoint":
            return ast.get_source_segment(test_file.read_text(encoding="utf-8"), node) or ""
    raise SystemExit(f"{test_file}: no _process_glm_checkpoint()")


def run_upstream(function: str, folder: Path) -> str:
    """The function alone, with MODEL_DIR/MODEL_NAME pointing at ``folder/model/config.json``."""
    program = (
        "import json\nfrom pathlib import Path\n"
        f"MODEL_DIR = {str(folder)!r}\nMODEL_NAME = 'model'\n{function}\n_process_glm_checkpoint()\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", program], cwd=folder, env={}, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise SystemExit(f"upstream's patch failed: {done.stderr}")
    return (folder / "model" / "config.json").read_text(encoding="utf-8")


def run_ours(cell_id: str, folder: Path) -> str:
    cell = next(c for c in pipeline.select([cell_id], None) if c.id == cell_id)
    step = next(c for c in render(cell).commands if c.name == "patch-config")
    config = str(folder / "model" / "config.json")
    argv = [step.argv[0], "-I", *(config if a == CHECKPOINT else a for a in step.argv[1:])]
    done = subprocess.run(
        argv, input=step.stdin, cwd=folder, env={}, capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise SystemExit(f"our patch failed: {done.stderr}")
    return Path(config).read_text(encoding="utf-8")


def _in_scratch(sample: Path, run: Callable[[Path], str]) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "model").mkdir()
        shutil.copyfile(sample, folder / "model" / "config.json")
        return run(folder)


def compare(miles_root: Path, samples: list[Path]) -> int:
    differ = 0
    for cell_id, test in PAIRS.items():
        function = upstream_function(miles_root / test)
        for sample in samples:
            theirs = _in_scratch(sample, functools.partial(run_upstream, function))
            same = theirs == _in_scratch(sample, functools.partial(run_ours, cell_id))
            differ += not same
            print(f"{'same' if same else 'DIFFERENT'}  {cell_id:18} {sample.name}")
    print(f"{len(PAIRS) * len(samples) - differ} of {len(PAIRS) * len(samples)} equal")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--miles-root", type=Path, required=True)
    parser.add_argument("samples", nargs="*", type=Path)
    args = parser.parse_args()
    samples = args.samples or sorted((ROOT / "tests" / "data" / "hf-configs").glob("*.json"))
    return compare(args.miles_root, samples)


if __name__ == "__main__":
    sys.exit(main())
