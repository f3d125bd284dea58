"""Inside the sandbox: the MODEL_ARGS of ``scripts/models/<type>.py`` presets, as miles loads them.

``python -I model_args_driver.py CHECKOUT TYPE...`` loads the checkout's own
``miles/utils/external_utils/model_args_utils.py`` by path (standard library only, as miles
keeps it) and calls its ``load_model_args(TYPE)`` for each type, with the environment the sandbox
gives (no ``MODEL_ARGS_*`` override). Writes ``{type: {"tokens": [...]} | {"error": "..."}}`` to
``$RUN_MATRIX_OUT/presets.json``. Standard library only: this file runs outside run-matrix.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

UTILS = Path("miles/utils/external_utils/model_args_utils.py")


def main(argv: list[str]) -> int:
    root, types = Path(argv[0]), argv[1:]
    spec = importlib.util.spec_from_file_location("model_args_utils", root / UTILS)
    assert spec is not None and spec.loader is not None
    utils = importlib.util.module_from_spec(spec)
    sys.modules["model_args_utils"] = utils
    spec.loader.exec_module(utils)
    found: dict[str, Any] = {}
    for name in types:
        try:
            found[name] = {"tokens": utils.load_model_args(name).split()}
        except BaseException as error:  # the preset's own failure, reported for that type alone
            found[name] = {"error": f"{type(error).__name__}: {error}"}
    with open(Path(os.environ["RUN_MATRIX_OUT"]) / "presets.json", "w", encoding="utf-8") as out:
        json.dump(found, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
