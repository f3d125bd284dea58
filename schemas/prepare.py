"""The prepare steps of a spec: what runs on this machine, in order, before the cell's Ray head.

Each step is a model told apart by its ``kind``; render turns it into a command (runner/launch/steps.py)
and run either does it itself or runs that command (runner/run/prepare.py).
"""

import posixpath
import re
from pathlib import PurePosixPath
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, PositiveInt, field_validator

from schemas.calls import OwnCalled
from schemas.values import Flags, Model, pythonpath

SAFE_PATH = re.compile(r"/[\w.+,=@%:/-]*")  # nothing a shell expands or splits, no control characters


class WriteFile(Model):
    kind: Literal["write-file"]
    path: str = Field(min_length=1, description="the file to write (a test's config or prompt data)")
    text: str = Field(description="its whole text, written again on every run")


class Mkdir(Model):
    kind: Literal["mkdir"]
    paths: list[str]


class HfDownload(Model):
    kind: Literal["hf-download"]
    repo: str
    local_dir: str
    repo_type: Literal["model", "dataset"] = "model"


class PatchHfConfig(Model):
    kind: Literal["patch-hf-config"]
    config: str = Field(description="path of the HF config.json to patch")
    set: dict[str, Any]
    unless: dict[str, Any] = Field(default={}, description="skip when the config already has these values")
    copy_rope_theta: bool = Field(default=False, description="copy rope_parameters.rope_theta to rope_theta")


class ConvertTorchDist(Model):
    kind: Literal["convert-torch-dist"]
    hf_checkpoint: str
    save: str
    nproc_per_node: PositiveInt = 4
    parallel: Flags = {}
    model_type: str | None = Field(
        default=None,
        description="the Megatron model type whose MODEL_ARGS the conversion takes; default: model.type"
        " (an FSDP cell that compares with a Megatron one converts for it)",
    )
    megatron_path: str | None = Field(
        default=None,
        description="the Megatron (and what else) the converter imports, as PYTHONPATH entries;"
        " default: the launch conventions' (a test may put Transformer Engine's sources first)",
    )

    @field_validator("megatron_path")
    @classmethod
    def _absolute_entries(cls, value: str | None) -> str | None:
        return value if value is None else pythonpath(value)


class Remove(Model):
    """``rm -rf`` of a test's own outputs, so the conversions after it run again (it runs every time)."""

    kind: Literal["remove"]
    paths: list[str] = Field(min_length=1, description="absolute paths, each at least two levels deep")

    @field_validator("paths")
    @classmethod
    def _deep_enough(cls, paths: list[str]) -> list[str]:
        """What ``rm -rf`` gets is what was checked: a plain path, as written, that no shell changes."""
        for path in paths:
            parts = PurePosixPath(path).parts
            plain = path == posixpath.normpath(path) and not path.startswith("//")
            if not plain or len(parts) < 3 or not SAFE_PATH.fullmatch(path):
                raise ValueError(
                    f"{path!r}: a path to remove is absolute and plain (no '..', '.', '//' or trailing '/';"
                    " no '$', quotes, globs or control characters), at least two levels below /"
                    " (/root/models/X, not /root)"
                )
        return paths


class Call(OwnCalled):
    """A function the test defines itself, called with ``args`` by keyword on this machine from the
    checkout's root: the test's own preparation where no other step says it (miles' verifiers test
    sets up a venv, clones a repo and installs an environment in its ``prepare()``). Nothing tells
    whether it is done, so it runs every time, as ``remove`` does. A flag of ``args`` may take what it
    returns (a str or os.PathLike, one line of text): ``$${prepared:FUNCTION}`` in the flag's value is
    replaced by it when the job is submitted (miles' FT soak test: ``--load-debug-rollout-data``)."""

    what = "a prepare step of kind call"
    kind: Literal["call"]


class Conversion(Model):
    """An HF checkpoint -> another HF checkpoint, by one of miles' ``tools/*.py``; skipped once done."""

    tool: ClassVar[str]
    source_flag: ClassVar[str] = "--model-dir"
    output_flag: ClassVar[str] = "--save-dir"
    done_file: ClassVar[str] = ""  # a file of save_dir that says the output is complete; "": it exists
    model_dir: str
    save_dir: str
    extra: Flags = {}
    python: str = Field(default="python", description="the interpreter upstream's prepare runs it with")

    @property
    def done_marker(self) -> str:
        """The path whose presence skips the step."""
        return f"{self.save_dir}/{self.done_file}" if self.done_file else self.save_dir


class ConvertFp8(Conversion):
    tool = "convert_hf_to_fp8.py"
    kind: Literal["convert-fp8"]


class ConvertInt4(Conversion):
    tool = "convert_hf_to_int4_direct.py"
    kind: Literal["convert-int4"]


class ConvertNvfp4(Conversion):
    tool = "convert_hf_to_nvfp4.py"
    kind: Literal["convert-nvfp4"]


class ConvertMxfp8(Conversion):
    tool = "convert_hf_to_mxfp8.py"
    kind: Literal["convert-mxfp8"]


class CastFp8Bf16(Conversion):
    """miles' ``fp8_cast_bf16(src, dst)``: an FP8 checkpoint back to BF16 (a reference for training)."""

    tool = "fp8_cast_bf16.py"
    source_flag = "--input-fp8-hf-path"
    output_flag = "--output-bf16-hf-path"
    done_file = "model.safetensors.index.json"  # the helper's own skip test
    kind: Literal["cast-fp8-bf16"]


class DequantizeKimiInt4(Conversion):
    """Kimi's INT4 checkpoint -> BF16, the reference the Megatron bridge loads."""

    tool = "convert_kimi_int4_to_bf16.py"
    output_flag = "--output-dir"
    kind: Literal["dequantize-kimi-int4"]


TOOL_STEPS: tuple[type[Conversion], ...] = (
    ConvertFp8,
    ConvertInt4,
    ConvertNvfp4,
    ConvertMxfp8,
    CastFp8Bf16,
    DequantizeKimiInt4,
)
ToolStep = ConvertFp8 | ConvertInt4 | ConvertNvfp4 | ConvertMxfp8 | CastFp8Bf16 | DequantizeKimiInt4

PrepareStep = Annotated[
    WriteFile | Mkdir | Remove | HfDownload | PatchHfConfig | ConvertTorchDist | ToolStep | Call,
    Field(discriminator="kind"),
]
