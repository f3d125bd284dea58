"""prepare: the commands and helper calls a script makes before launching -> prepare steps.

Each recorded command or helper call maps to one step kind of the spec (``mkdir``, ``remove``,
``hf-download``, ``convert-torch-dist``, the conversions by miles' ``tools/*.py``), and each text
file the test's own code writes to ``write-file``, with the arguments miles' helpers would have
used. miles' clean-up between launches (``ray stop --force; pkill -9 sglang; sleep 10``) maps to no
step and is a note: each cell runs on a Ray head of its own that ``run`` starts and stops. Any
other command stops the import: a spec cannot run it, and leaving it out would write a test that
fails on a fresh node. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

from pydantic import TypeAdapter, ValidationError

from runner.errors import Location, SpecError
from runner.importer import shell
from runner.importer.events import Event, refused
from runner.importer.groups import flags
from runner.importer.notes import Note, SystemStep, reset_note, resets_node
from runner.launch import system_steps
from runner.spec.emit import flag_value
from schemas import calls
from schemas.spec import TOOL_STEPS, Conversion, PrepareStep

Step = dict[str, Any]
NAMES = {
    "write-file": "file",
    "mkdir": "dirs",
    "remove": "clean",
    "convert-torch-dist": "convert",
    "convert-fp8": "fp8",
    "convert-int4": "int4",
    "convert-nvfp4": "nvfp4",
    "convert-mxfp8": "mxfp8",
    "cast-fp8-bf16": "bf16",
    "dequantize-kimi-int4": "bf16",
}
# each conversion step, by its tool as a script names it: under the checkout, or relative to it
# (upstream runs prepare from the checkout root)
CONVERSIONS: dict[str, type[Conversion]] = {f"tools/{step.tool}": step for step in TOOL_STEPS}
# what a shell would expand, split or chain: a command holding any of it is no step (kept literally, it
# would run something else than the script did)
SHELL_SYNTAX = re.compile(r"[;&|<>`$*?\[\]{}()~!\\\n]")
PYTHON = re.compile(r"python(\d+(\.\d+)?)?")  # the interpreter a conversion runs under
# what miles runs between two launches to clear the node of the first: ``run`` gives every cell a
# Ray head of its own and stops it, and never kills by name


def steps(
    events: Sequence[Event], root: str, model_type: str | None, megatron_path: str
) -> tuple[dict[str, Step], list[Note]]:
    """Named steps in the order the script runs them (``dirs``, ``model``, ``dataset``, ``convert``,
    ...), and a note for each clean-up between launches left to ``run``."""
    named: dict[str, Step] = {}
    where: dict[str, Location] = {}
    notes: list[Note] = []
    for event in events:
        if event.kind == "command" and resets_node(event.command):
            notes.append(reset_note(event.command, event.at))
            continue
        if event.kind == "write":
            step: Step = {"kind": "write-file", "path": event.command, "text": event.args["text"]}
        elif event.kind == "helper":
            step = _helper(event, model_type, megatron_path)
        elif event.kind == "call":
            step = {"kind": "call", "call": event.command, **({"args": event.args} if event.args else {})}
        else:
            step = _command(event, root)
        _check(step, event)
        if step in named.values():
            continue  # run again before a later launch: one step, skipped once done
        name = _name(step)
        unique, count = name, 1
        while unique in named:
            count += 1
            unique = f"{name}-{count}"
        named[unique], where[unique] = step, event.at
    return named, notes + system_notes(named, where)


def system_notes(named: dict[str, Step], where: dict[str, Location]) -> list[Note]:
    """A ``SystemStep`` note for each step that touches the system (``import`` refuses them unless
    told to allow them)."""
    names = list(named)
    found = system_steps.findings(list(named.values()))
    return [
        SystemStep(f"{what} (prepare step {names[index]})", where[names[index]], removed)
        for index, what, removed in found
    ]


STEP: TypeAdapter[Any] = TypeAdapter(PrepareStep)  # a prepare step as the spec models it


def _check(step: Step, event: Event) -> None:
    """A step the spec would refuse is refused here, at the script's line (``rm -rf /root``)."""
    try:
        STEP.validate_python(step)
    except ValidationError as error:
        what = {"command": f"runs `{event.command}`", "write": f"writes {event.command}"}
        reason = error.errors()[0]["msg"].removeprefix("Value error, ")
        raise refused(
            event.at,
            f"{what.get(event.kind, f'runs {event.name}()')} before launching, which as a {step['kind']} step"
            f" is refused: {reason}",
        ) from None


def _name(step: Step) -> str:
    if step["kind"] == "call":
        return calls.function_of(step["call"])
    if step["kind"] == "hf-download":
        return "dataset" if step.get("repo_type") == "dataset" else "model"
    return NAMES[step["kind"]]


def _command(event: Event, root: str) -> Step:
    if syntax := SHELL_SYNTAX.search(event.command):  # a step runs one program on plain words, never a shell
        raise _unknown(f"`{event.command}` (shell syntax: {syntax[0]!r})", event.at)
    words = shell.split(event.command)
    if words[:1] == ["mkdir"]:
        paths = [w for w in words[1:] if w != "-p"]
        if paths and not any(p.startswith("-") for p in paths):
            return {"kind": "mkdir", "paths": paths}
    if words[:2] in (["hf", "download"], ["huggingface-cli", "download"]):
        return _download(words[2:], event)
    if words[:1] == ["rm"]:
        return _remove(words[1:], event)
    tool = words[1].removeprefix(f"{root}/") if len(words) > 1 else ""
    if tool in CONVERSIONS and PYTHON.fullmatch(words[0].rsplit("/", 1)[-1]):
        return _conversion(CONVERSIONS[tool], words, event)
    raise _unknown(f"`{event.command}`", event.at)


def runs_a_step(command: str, root: str) -> bool:
    """Whether a prepare step runs ``command``; the import stops at any other, unless a function of the
    test's own runs it, which a step then calls (``preparation.py``)."""
    try:
        _command(Event("command", "", command, {}, Location(Path(command))), root)
    except SpecError:
        return False
    return True


def _remove(words: list[str], event: Event) -> Step:
    """``rm -rf PATH...`` (``-fr``, ``-r -f``, ``--``): any other option is no step."""
    options = [w for w in words if w.startswith("-") and w != "--"]
    paths = [w for w in words if not w.startswith("-")]
    if not paths or sorted("".join(o.lstrip("-") for o in options)) != ["f", "r"]:
        raise _unknown(f"`{event.command}` (a remove step is `rm -rf PATH...`)", event.at)
    return {"kind": "remove", "paths": paths}


def _download(words: list[str], event: Event) -> Step:
    kind = "model"
    if words[:1] == ["--repo-type"] and len(words) > 1:
        kind, words = words[1], words[2:]
    if len(words) == 3 and words[1] == "--local-dir" and kind in ("model", "dataset"):
        step: Step = {"kind": "hf-download", "repo": words[0], "local_dir": words[2]}
        return {**step, "repo_type": kind} if kind == "dataset" else step
    raise _unknown(f"`{event.command}` (hf download takes the repo and --local-dir only)", event.at)


def _conversion(kind: type[Conversion], words: list[str], event: Event) -> Step:
    options = dict(flags(words[2:]))
    source, output = kind.source_flag, kind.output_flag
    model_dir, save_dir = options.pop(source[2:], ()), options.pop(output[2:], ())
    if len(model_dir) != 1 or len(save_dir) != 1:
        raise _unknown(f"`{event.command}` (no {source} or {output})", event.at)
    step: Step = {"kind": _kind(kind), "model_dir": model_dir[0], "save_dir": save_dir[0]}
    if options:
        step["extra"] = {name: flag_value(values) for name, values in options.items()}
    return {**step, "python": words[0]} if words[0] != "python" else step


def _helper(event: Event, model_type: str | None, megatron_path: str) -> Step:
    args = event.args
    if event.name == "hf_download_dataset":
        local = f"{args['data_dir']}/{args['full_name'].split('/')[-1]}"
        return {"kind": "hf-download", "repo": args["full_name"], "local_dir": local, "repo_type": "dataset"}
    if event.name == "fp8_cast_bf16":
        return {"kind": "cast-fp8-bf16", "model_dir": args["path_src"], "save_dir": args["path_dst"]}
    if event.name != "convert_checkpoint":
        raise _unknown(f"{event.name}()", event.at)
    if args["multinode"]:
        raise refused(
            event.at, "converts the checkpoint on several nodes; a convert-torch-dist step runs on one"
        )
    name = args["model_name"]
    step: Step = {
        "kind": "convert-torch-dist",
        "hf_checkpoint": args["hf_checkpoint"] or f"/root/models/{name}",
        "save": f"{args['dir_dst']}/{name}_torch_dist",
        "nproc_per_node": args["num_gpus_per_node"],
    }
    if args["megatron_model_type"] != model_type:  # e.g. an FSDP launch beside the Megatron one it checks
        step["model_type"] = args["megatron_model_type"]
    if args["megatron_path"] != megatron_path:  # e.g. Transformer Engine's sources before Megatron's
        step["megatron_path"] = args["megatron_path"]
    parallel = flags(shell.split(args["extra_args"] or ""))
    return {**step, "parallel": {n: flag_value(v) for n, v in parallel}} if parallel else step


def _kind(step: type[Conversion]) -> str:
    return str(get_args(step.model_fields["kind"].annotation)[0])


KINDS = ("mkdir", "remove", "hf-download", "convert-torch-dist", *map(_kind, TOOL_STEPS))


def _unknown(what: str, at: Location) -> SpecError:
    return refused(
        at, f"runs {what} before launching, which is no prepare step run-matrix has ({', '.join(KINDS)})"
    )
