"""preview: what ``run`` would do (``--dry-run``). Reads the disk and git; runs and starts nothing.

Probes and secrets stay ``${NAME}`` references here: they are decided when the job is
submitted.
"""

from __future__ import annotations

import json
from typing import Any

from runner.launch.command import Command, program_notes
from runner.launch.planned import Planned
from runner.launch.steps import program_text
from runner.run import environment, prepare, reads, requires, services
from runner.run.plan import Options, job_name, verify_job_id
from schemas.prepare import Call


def preview(planned: Planned, options: Options, would: str) -> dict[str, Any]:
    """What the run would do with the cell; ``would`` is its fate (``dry_run.decide``)."""
    cell = planned.cell
    checked = requires.check(cell, options.miles_root, options.caller_env)
    return {
        "id": cell.id,
        "spec": planned.spec,
        "content_hash": cell.content_hash,
        "would": would,
        "requirements": [
            {"name": r.name, "met": r.met, "optional": r.optional, "detail": r.detail} for r in checked
        ],
        "prepare": [_step(planned, name, options.skip_prepare) for name in cell.spec.prepare],
        "cluster": _cluster(planned, options),
        "services": [_service(command) for command in planned.services],
        "reads": [_read(read) for read in planned.launch.reads.values()],
        "prepared": _prepared(planned, options.skip_prepare),
        "run_id": list(planned.launch.run_id),  # the flags that name each attempt ($${run-id})
        "job": {
            "submission_id": f"{job_name(cell.id)}-<8 hex digits>",
            "entrypoint": environment.entrypoint(planned.entry_argv),
            "env": planned.launch.env,
            "probes": planned.launch.probes,
            "timeout": options.timeout,
            "retry": cell.spec.retry.model_dump(),
        },
        "verify": [
            {
                "name": c.name,
                "call": cell.spec.verify[c.name].call,
                "submission_id": verify_job_id(f"{job_name(cell.id)}-<8 hex digits>", number, c.name),
                "entrypoint": environment.entrypoint(planned.job_argv(c)),
                "hook_state": [
                    f"{r['hook']}.{r['attribute']}" for r in planned.launch.hook_reads.get(c.name, [])
                ],
                "launched_by": cell.spec.verify[c.name].launched_by,
            }
            for number, c in enumerate(planned.verifies, start=1)
        ],
        "expect": {name: bound.summary() for name, bound in cell.spec.expect.items()},
        "reproduce": planned.reproduce,
    }


def _read(read: dict[str, str]) -> dict[str, str]:
    """A value the job reads at launch, and what the file holds now (an earlier cell may write it first)."""
    try:
        now = "now " + reads.values({"": read})[0].value
    except reads.Unreadable as exc:
        now = "now it " + str(exc).split(", which ", 1)[-1]
    return {"flag": read["flag"], "path": read["path"], "as": read["as"], "now": now}


def _prepared(planned: Planned, skip_all: bool) -> list[dict[str, str]]:
    """Each flag that takes what a prepare call returned, and what it would get: nothing when
    ``--skip-prepare`` skips the call (the cell then fails before its job)."""
    found = []
    for entry in planned.launch.prepared.values():
        would = (
            f"what prepare step {entry['step']} ({entry['call']}) returns, in place of {entry['reference']}"
        )
        if skip_all:
            would += ", but --skip-prepare skips that step: the cell would fail before its job is submitted"
        else:
            would += ", when the job is submitted"
        said = {"step": entry["step"], "call": entry["call"], "would": would}
        found += [{"flag": flag, **said} for flag in entry["flags"]]
    return found


def _step(planned: Planned, name: str, skip_all: bool) -> dict[str, str]:
    step = planned.cell.spec.prepare[name]
    command = planned.command("prepare", name)
    reason = "--skip-prepare" if skip_all else prepare.skip_reason(step)
    would = f"skip: {reason}" if reason else "run"
    if isinstance(step, Call):
        would += f": {_called(command)}, in that folder" + ("" if reason else " (it runs every time)")
    if command.result:
        would += "; what it returns goes to " + ", ".join(planned.launch.prepared[command.result]["flags"])
    shown = command.shell_text(in_script=True)  # run-matrix's own program: once, at the end of the text
    return {"name": name, "kind": step.kind, "would": would, "command": shown, "program": command.program}


def _cluster(planned: Planned, options: Options) -> str:
    if options.ray_address:
        return f"submit to the Ray cluster at {options.ray_address}"
    gpus = planned.cell.spec.cluster.gpus_per_node
    return f"start a local Ray head with {gpus} GPUs, stop it afterwards: {planned.command('cluster').shell}"


def _service(command: Command) -> dict[str, str]:
    port = command.listens
    if not port:
        would = f"{_called(command)}, keep it and what it starts up for the job, then"
        would += f" {_stopped(command)}stop them"
    elif services.answers(port):
        would = f"left as it is: 127.0.0.1:{port} answers now"
    else:
        would = "start, then stop"
    return {
        "name": command.name,
        "kind": "service" if port else "hook",
        "would": would,
        "command": command.line,
    }


def _called(command: Command) -> str:
    """What a command calling a test's own function calls, with what, loaded from where: its argv
    is ``python3 -c PROGRAM CALL ARGS ROOT``, the program run-matrix's, the rest the spec's."""
    call, arguments, root = command.argv[3:6]
    return f"call {call} with {arguments} from the checkout at {root}"


def _stopped(command: Command) -> str:
    """How a hook that reports is asked to stop once the job has ended, and what it reports."""
    if not command.report:
        return ""
    stop = json.loads(command.argv[6])["stop"]
    called = f"call its {stop['call']}({json.dumps(stop['args'])}), " if stop else ""
    state = ", ".join(command.state) or "nothing (no verify argument reads its state)"
    return f"{called}report {state}, "


def text(previews: list[dict[str, Any]]) -> str:
    """The cells' plans, a blank line after each, then the programs their steps read, named."""
    lines: list[str] = []
    for cell in previews:
        lines += [f"{cell['id']}  ({cell['spec']}, content {cell['content_hash']}): would {cell['would']}"]
        lines += [f"  requires {r['name']}: {r['detail']}" for r in cell["requirements"]]
        lines += [  # a call's command is run-matrix's program around the call its words name
            f"  prepare {s['name']}: {s['would']}" + (f": {s['command']}" if s["kind"] != "call" else "")
            for s in cell["prepare"]
        ]
        job = cell["job"]
        lines += [f"  cluster: {cell['cluster']}"]
        lines += [  # a hook's command is run-matrix's program around the call its line names
            f"  {s['kind']} {s['name']}: {s['would']}"
            + (f": {s['command']}" if s["kind"] == "service" else "")
            for s in cell["services"]
        ]
        for r in cell["reads"]:
            lines += [f"  read {r['flag']}: {r['as']} of {r['path']} at launch ({r['now']})"]
        lines += [f"  prepared {p['flag']}: takes {p['would']}" for p in cell["prepared"]]
        named = ", ".join(cell["run_id"])
        said = f"  run-id {named}: a name per attempt (the clock and 3 random digits) at submission"
        lines += [said] if named else []
        lines += [f"  job {job['submission_id']}: {job['entrypoint']}"]
        lines += [f"  env {name}={value}" for name, value in job["env"].items()]
        lines += [f"  probe {name}: {command}" for name, command in job["probes"].items()]
        for v in cell["verify"]:
            reads = ", ".join(v["hook_state"])
            reads = f" (reads {reads}, reported once the job has ended)" if reads else ""
            if v["launched_by"]:  # the function that launched, again: what follows its launches checks
                left_out = ", ".join(f"{name}()" for name in v["launched_by"])
                reads += f" ({v['call']} again, {left_out} doing nothing: the cells before ran its launches)"
            lines += [f"  verify {v['name']}{reads}: job {v['submission_id']}: {v['entrypoint']}"]
        lines += [f"  expect {name}: {bound}" for name, bound in cell["expect"].items()]
        lines += [f"  reproduce: {cell['reproduce']}", ""]
    return "\n".join(lines) + "\n" + "".join(f"{line}\n" for line in _programs(previews))


def _programs(previews: list[dict[str, Any]]) -> list[str]:
    """Each of run-matrix's programs a step above reads on stdin, named once for the whole output."""
    shown = [s for cell in previews for s in cell["prepare"] if s["program"] and s["kind"] != "call"]
    commands = [
        Command("prepare", s["name"], (), stdin=program_text(s["program"]), program=s["program"])
        for s in shown
    ]
    return [f"program: {note}" for note in program_notes(commands)]
