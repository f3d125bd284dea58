"""Reads a checkpoint's config at import time, which only a prepared node has."""

import json
from pathlib import Path

import _glm5

CONFIG = json.loads(Path("/nonexistent/models/GLM-5_4layer/config.json").read_text())

if __name__ == "__main__":
    _glm5.launch()
