"""Value types shared by the spec, the model presets and the hardware profiles."""

import re
from typing import Annotated, Any

from annotated_types import Ge
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    PlainValidator,
    Strict,
    StringConstraints,
    WithJsonSchema,
)

FLAG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
# POSIX's portable names: what a shell, `env` and Ray's runtime_env all take as one variable
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SCALAR_SCHEMA: dict[str, Any] = {"type": ["boolean", "integer", "number", "string"]}


class Model(BaseModel):
    """Frozen, closed: an unknown key is an error, never silently ignored.

    Built when first used, not when defined: a model only ever validated inside another (a prepare
    step inside a spec) is checked by that one's validator and never needs its own.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def _flag_value(value: Any) -> Any:
    if value is None:
        raise ValueError("has no value: write true for a switch, or false / !delete to leave it out")
    return _value(value)


def _model_arg_value(value: Any) -> Any:
    if value is None:  # !delete of a model.args key gives the preset's value back; it never removes it
        raise ValueError(
            "has no value: write the value the preset's flag should have (false leaves a switch out;"
            " !delete goes back to the preset's value)"
        )
    return _value(value)


def _value(value: Any) -> Any:
    # Keep the object as it is: floats remember how they were written.
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list) and all(
        isinstance(item, (int, float, str)) and not isinstance(item, bool) for item in value
    ):
        return value
    raise ValueError(f"expected true/false, a number, a string or a list of them, got {type(value).__name__}")


def _flag_name(name: Any) -> str:
    if not isinstance(name, str) or not FLAG_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a flag name: write it without the leading --, e.g. 'tensor-model-parallel-size'"
        )
    return name


def _env_name(name: Any) -> str:
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} is not an environment variable name: letters, digits and _, not starting with a"
            " digit (e.g. MILES_LOG_LEVEL)"
        )
    return name


def _env_value(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"environment values are text; {value!r} reads as {type(value).__name__}: quote it")
    return str(value)


_FLAG_VALUE_SCHEMA = WithJsonSchema({"anyOf": [_SCALAR_SCHEMA, {"type": "array", "items": _SCALAR_SCHEMA}]})
FlagValue = Annotated[Any, PlainValidator(_flag_value), _FLAG_VALUE_SCHEMA]
FlagName = Annotated[
    str, PlainValidator(_flag_name), WithJsonSchema({"type": "string", "pattern": FLAG_NAME.pattern})
]
EnvName = Annotated[
    str, PlainValidator(_env_name), WithJsonSchema({"type": "string", "pattern": ENV_NAME.pattern})
]
EnvValue = Annotated[
    str, PlainValidator(_env_value), WithJsonSchema({"type": ["string", "integer", "number"]})
]
Flags = dict[FlagName, FlagValue]
# a count of GPUs, nodes, runners: an integer, never ``true`` (which a lax int would take as 1)
Count = Annotated[int, Strict(), Ge(1)]


_GITHUB_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def github_label(value: str) -> str:
    """A label as GitHub's ``runs-on`` and a workflow matrix take it: no space, newline or ``${{``."""
    if not _GITHUB_LABEL.fullmatch(value):
        raise ValueError(
            "a CI label is letters, digits, '.', '_' and '-', starting with a letter or digit (it goes into "
            "GitHub's runs-on and the workflow's matrix as it is)"
        )
    return value


GitHubLabel = Annotated[
    str,
    StringConstraints(min_length=1, max_length=100),
    AfterValidator(github_label),
    WithJsonSchema({"type": "string", "pattern": f"^{_GITHUB_LABEL.pattern}$", "maxLength": 100}),
]
# model.args: values of the preset's own flags, in their places
ModelArgs = dict[FlagName, Annotated[Any, PlainValidator(_model_arg_value), _FLAG_VALUE_SCHEMA]]


def flag_tokens(name: str, value: Any) -> list[str]:
    """The argv tokens of one flag: ``true`` -> ``--name``; ``false`` -> nothing."""
    if value is False:
        return []
    if value is True:
        return [f"--{name}"]
    if isinstance(value, list):
        return [f"--{name}", *(str(item) for item in value)]
    return [f"--{name}", str(value)]


def pythonpath(value: str) -> str:
    """PYTHONPATH entries: each an absolute path or a ${...} reference, none empty."""
    for entry in value.split(":"):
        if not entry.startswith(("/", "${")):
            raise ValueError(
                f"{value!r}: each PYTHONPATH entry is an absolute path (or a ${{...}} reference),"
                f" got {entry!r}"
            )
    return value
