"""Checks the downloaded checkpoint's config.json before launching, as miles main's GLM-5 launcher
does; with READ_OTHER set, reads a file of the download import knows nothing of."""

import json
import os
from pathlib import Path

import _glm5
import miles.utils.external_utils.command_utils as U


def prepare() -> None:
    U.exec_command("hf download Pinaster/GLM-5_4layer --local-dir /root/models/GLM-5_4layer")
    config = Path("/root/models/GLM-5_4layer/config.json")
    assert config.exists(), f"{config} not found"
    with open(config) as file:
        assert json.load(file)["num_hidden_layers"] == 4
    if os.environ.get("READ_OTHER"):
        Path("/root/models/GLM-5_4layer/tokenizer.json").read_text()


if __name__ == "__main__":
    prepare()
    _glm5.launch()
