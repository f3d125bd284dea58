"""Inside the sandbox: the commands a checkout's own ``execute_train`` would run, run by none.

``python -I -B conventions_driver.py CHECKOUT [MODEL_TYPE]`` imports the checkout's
``miles.utils.external_utils.command_utils`` (a package the interpreter lacks, imported by the
checkout's code, is a stand-in: ``runner/sandbox/missing.py``), replaces each of its
``exec_command*`` helpers with one that keeps the command and runs nothing, and calls
``execute_train`` once for the backend MODEL_TYPE names (none: FSDP). The NVLink probe's output is
"0" (a machine without NVLink), as the import's recorder answers it; any other command whose output
is read is a failure, since nothing here knows it. Writes ``{"commands": [...], "home": HOME}`` or
``{"error": "..."}`` to ``$RUN_MATRIX_OUT/conventions.json``. Standard library only: this file runs
outside run-matrix.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HELPERS_MODULE = "miles.utils.external_utils.command_utils"
MISSING = Path(__file__).resolve().parents[1] / "sandbox" / "missing.py"
NVLINK_PROBE = "nvidia-smi topo -m"  # the one command whose output execute_train reads


class Unknown(Exception):
    """execute_train read the output of a command, which nothing here can know."""


def main(argv: list[str]) -> int:
    root, model_type = Path(argv[0]), (argv[1] if len(argv) > 1 and argv[1] else None)
    result = Path(os.environ["RUN_MATRIX_OUT"]) / "conventions.json"
    with result.open("w", encoding="utf-8") as out:  # opened before any code of the checkout runs
        json.dump(_observe(root, model_type), out)
    return 0


def _observe(root: Path, model_type: str | None) -> dict[str, Any]:
    commands: list[str] = []
    try:
        helpers = _helpers(root, commands)
    except BaseException as error:  # the checkout's own failure, said in one line
        return {"error": f"cannot load miles' helpers from {root}: {type(error).__name__}: {error}"}
    train_args = "" if model_type else "--train-backend fsdp"
    try:
        helpers.execute_train(train_args=train_args, num_gpus_per_node=1, megatron_model_type=model_type)
    except Unknown as error:
        return {"error": f"execute_train reads the output of `{error}`, which run-matrix cannot know"}
    except BaseException as error:
        return {"error": f"execute_train raises {type(error).__name__}: {error}"}
    return {"commands": commands, "home": os.environ.get("HOME", "")}


def _helpers(root: Path, commands: list[str]) -> Any:
    """The checkout's helper module, its command-running helpers keeping commands in ``commands``."""
    spec = importlib.util.spec_from_file_location("_run_matrix_missing", MISSING)
    assert spec is not None and spec.loader is not None
    missing = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = missing
    spec.loader.exec_module(missing)
    sys.meta_path.append(missing.Missing((str(root) + os.sep,), lambda name: None))
    sys.path.insert(0, str(root))
    helpers = importlib.import_module(HELPERS_MODULE)
    for name in dir(helpers):
        if name.startswith("exec_command") and callable(getattr(helpers, name)):
            setattr(helpers, name, _kept(commands))
    return helpers


def _kept(commands: list[str]) -> Callable[..., str | None]:
    def exec_command(command: str, *args: Any, capture_output: bool = False, **kwargs: Any) -> str | None:
        commands.append(str(command))
        if not capture_output:
            return None
        if NVLINK_PROBE in str(command):
            return "0"
        raise Unknown(str(command)[:200])

    return exec_command


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
