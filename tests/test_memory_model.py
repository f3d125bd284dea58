"""runner.memory.model: what the flags do not describe is said, not guessed."""

from __future__ import annotations

import pytest

from runner.memory.model import Unknown, shape
from tests.test_memory_adapters import MOE


def test_a_custom_model_provider_is_not_counted_as_a_gpt():
    # Inkling's provider (miles_plugins.models.inkling) reads its sliding-window heads and dense layers
    # from config.json; with position-embedding-type none it is no hybrid Mamba model either
    flags = {**MOE, "position-embedding-type": "none", "custom-model-provider-path": "plugins.model.provider"}
    with pytest.raises(Unknown) as caught:
        shape(flags.get)
    assert str(caught.value) == (
        "a custom model provider (plugins.model.provider) builds the model: its modules are that code's,"
        " not MODEL_ARGS'"
    )
