"""Fake miles tools/convert_hf_to_torch_dist.py: writes the marker a finished conversion leaves."""

import os
import sys
from pathlib import Path

argv = sys.argv[1:]
save = Path(argv[argv.index("--save") + 1])
save.mkdir(parents=True, exist_ok=True)
print(f"converting {argv[argv.index('--hf-checkpoint') + 1]} -> {save}", flush=True)
print(f"PYTHONPATH={os.environ.get('PYTHONPATH', '')}", flush=True)
(save / "latest_checkpointed_iteration.txt").write_text("release")
