"""Stand-in for miles' model_args_utils: loads scripts/models/<type>.py and calls its model_args()."""

import importlib.util
import sys
from pathlib import Path

MODELS = Path(__file__).resolve().parents[3] / "scripts" / "models"


def load_model_args(model_type, folder=None, **kwargs):
    path = Path(folder or MODELS) / f"{model_type}.py"
    sys.modules.setdefault("model_args_utils", sys.modules[__name__])
    spec = importlib.util.spec_from_file_location(f"fake_model_{path.stem.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return " ".join(module.model_args(**kwargs).split())


def load_sibling_model_args(this_file, model_type, **kwargs):
    return load_model_args(model_type, Path(this_file).resolve().parent, **kwargs)
