"""Fake miles tools/convert_hf_to_fp8.py: creates the FP8 checkpoint's folder."""

import sys
from pathlib import Path

argv = sys.argv[1:]
Path(argv[argv.index("--save-dir") + 1]).mkdir(parents=True, exist_ok=True)
