"""request: one cell as the worker gets it — the exact argv, the job's env, scratch files, the device.

Paths the cell names live on the GPU node, not here: every absolute path of the argv and env is
moved under ``SCRATCH`` (the sandbox's private ``/tmp``), and the few that miles looks at while it
parses are made there: a ``--hf-checkpoint`` folder with a ``config.json``, ``--ref-load`` and
``--opd-teacher-load`` folders with ``latest_checkpointed_iteration.txt``, a ``--chat-template-path``
file. ``--load`` is left absent, as on a fresh run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.cells.cell import Cell
from runner.launch.render import Context, render

SCRATCH = "/tmp/fs"
CHECKPOINT_FILE = "latest_checkpointed_iteration.txt"
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
DROPPED_ENV = ("PYTHONPATH",)  # the sandbox decides the path: the checkout, then PY's own packages
# config.json key <- the flag miles' hf_validate_args compares it with (a config made up from flags)
HF_KEYS = {
    "hidden_size": "hidden-size",
    "num_attention_heads": "num-attention-heads",
    "num_hidden_layers": "num-layers",
    "intermediate_size": "ffn-hidden-size",
    "moe_intermediate_size": "moe-ffn-hidden-size",
    "rms_norm_eps": "norm-epsilon",
    "rope_theta": "rotary-base",
    "vocab_size": "vocab-size",
}
# where the flag is absent: Megatron's default, which miles then compares (Llama's own differ)
HF_DEFAULTS: dict[str, Any] = {"rms_norm_eps": 1e-5}


def request(cell: Cell, miles_root: Path) -> dict[str, Any]:
    """What the worker needs for ``cell``: JSON-able, every path inside the sandbox."""
    launch = render(cell, Context(miles_root=str(miles_root)))
    argv = [_moved(token, miles_root) for token in (*launch.model_args, *launch.train_args)]
    env = {name: _moved(value, miles_root) for name, value in launch.env.items() if name not in DROPPED_ENV}
    env = {name: value for name, value in env.items() if not REFERENCE.search(value)}
    return {
        "id": cell.id,
        "script": launch.train_script,
        "argv": argv,
        "env": {**env, "OMP_NUM_THREADS": "1"},
        "files": _files(argv, cell.hf_config),
        "device": device(cell),
    }


def device(cell: Cell) -> dict[str, Any]:
    profile = cell.profile
    return {
        "platform": profile.platform,
        "name": profile.description or profile.name,
        "capability": list(profile.compute_capability),
        "memory_gb": profile.memory_gb,
        "count": profile.gpus_per_node,
    }


def unresolved(item: dict[str, Any]) -> str | None:
    """The first argv token still holding a value decided at launch (``${...}``), if any."""
    return next((token for token in item["argv"] if REFERENCE.search(token)), None)


def _moved(token: str, miles_root: Path) -> str:
    """``token`` with a path of the node moved under the scratch folder (the checkout stays)."""
    if token.startswith("/") and not token.startswith(str(miles_root)):
        return SCRATCH + token
    return token


def _files(argv: Sequence[str], hf_config: dict[str, Any] | None) -> dict[str, str | None]:
    """The scratch files miles reads while parsing: path -> content (None: a folder)."""
    files: dict[str, str | None] = {}
    for flag in ("ref-load", "opd-teacher-load"):
        folder = _value(argv, flag)
        if folder and folder.startswith(SCRATCH):
            files[f"{folder}/{CHECKPOINT_FILE}"] = "release"
    template = _value(argv, "chat-template-path")
    if template and template.startswith(SCRATCH):
        files[template] = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    checkpoint = _value(argv, "hf-checkpoint")
    if checkpoint and checkpoint.startswith(SCRATCH):
        config = hf_config if hf_config is not None else _made_up_config(argv)
        files[f"{checkpoint}/config.json"] = json.dumps(config)
    return files


def _made_up_config(argv: Sequence[str]) -> dict[str, Any]:
    """A config.json that agrees with the flags (the real one is not on this machine)."""
    config: dict[str, Any] = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], **HF_DEFAULTS}
    for key, flag in HF_KEYS.items():
        value = _value(argv, flag)
        if value is not None:
            config[key] = _number(value)
    config["tie_word_embeddings"] = "--untie-embeddings-and-output-weights" not in argv
    return config


def _value(argv: Sequence[str], flag: str) -> str | None:
    """The last value given to ``--flag`` in ``argv``."""
    found = None
    for index, token in enumerate(argv[:-1]):
        if token == f"--{flag}":
            found = argv[index + 1]
    return found


def _number(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
