"""A model preset: miles' MODEL_ARGS for one Megatron model type, as data."""

from __future__ import annotations

from schemas.values import Flags, Model


class ModelPreset(Model):
    type: str
    description: str = ""
    model_args: Flags
