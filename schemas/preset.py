"""A model preset: miles' MODEL_ARGS for one Megatron model type, as data."""

from pydantic import Field

from schemas.values import Flags, Model


class ModelPreset(Model):
    type: str
    miles_commit: str | None = Field(default=None, description="the miles commit these MODEL_ARGS are of")
    source: str = Field(default="", description="the file of that commit they were expanded from")
    description: str = ""
    sparse_attention: bool = Field(
        default=False,
        description="DeepSeek sparse attention (NSA indexer, as GLM-5 and DeepSeek V3.2): SGLang forces "
        "the nsa attention backend and the platform's page size",
    )
    model_args: Flags
