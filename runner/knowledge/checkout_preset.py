"""checkout_preset: the MODEL_ARGS of a model type that only the ``--miles-root`` checkout has.

run-matrix ships presets per pinned miles version; a checkout may add a type none of them has (a
new model on an open PR). With ``--miles-root``, such a type is expanded from the checkout as
``presets list --miles-root`` expands it (``presets.expand``: through the one door, in the
sandbox, cached by content) and used, with a ``model-args`` warning saying so — never silently.
"""

from __future__ import annotations

from pathlib import Path

from runner.errors import Location, Problem, RunMatrixError, SpecError
from runner.knowledge import presets
from schemas import ModelPreset

RULE = "model-args"


def preset(model_type: str, miles_root: Path, where: Location) -> tuple[ModelPreset, Problem] | None:
    """The checkout's preset of ``model_type`` and the note that says where it came from; None when
    the checkout has no file of that type. A file that does not expand is an error with its reason."""
    from runner.knowledge.preset_sync import model_args_mapping

    try:
        found = presets.expand(miles_root).get(model_type)
    except RunMatrixError as exc:  # the checkout's loader itself fails: that is the reason
        raise _error(model_type, where, str(exc).splitlines()[0]) from None
    if found is None:
        return None
    source = found.source.relative_to(miles_root.resolve()).as_posix()
    if found.error:
        raise _error(model_type, where, f"the checkout's {source} {found.error}")
    try:
        args = model_args_mapping(found.tokens)
    except SpecError as exc:
        raise _error(model_type, where, f"the checkout's {source}: {exc.problems[0].message}") from None
    note = Problem(
        RULE,
        f"run-matrix ships no preset of {model_type!r}: MODEL_ARGS from the checkout's {source}",
        "model.type",
        (where,),
        "warning",
        hint="if the checkout is right, `run-matrix presets sync --miles-root DIR` ships its presets",
    )
    return ModelPreset(type=model_type, source=source, model_args=args), note


def _error(model_type: str, where: Location, reason: str) -> SpecError:
    return SpecError.one(
        "unknown-name",
        f"no model preset named {model_type!r} is shipped, and the checkout's does not expand: {reason}",
        key="model.type",
        at=[where],
        hint="fix the checkout's preset file, or name a shipped type (`run-matrix presets list`)",
    )
