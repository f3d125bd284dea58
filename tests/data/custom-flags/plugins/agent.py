"""A generate function that adds the flags of the one it wraps, then its own."""

from enum import StrEnum

from plugins.base import generate as _base_generate


class Mode(StrEnum):
    FAST = "fast"
    CAREFUL = "careful"


async def generate(args, sample, sampling_params):
    return await _base_generate(args, sample, sampling_params)


def _add_arguments(parser):
    _base_generate.add_arguments(parser)
    parser.add_argument("--agent-mode", type=str, default=Mode.FAST.value, choices=[m.value for m in Mode])


generate.add_arguments = _add_arguments
