"""run-matrix bisect: the first miles commit between --good and --bad that breaks a cell.

Progress (one line an attempt) goes to stderr; the answer to stdout (``--format json``: as data).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.cli.output import add_format, add_miles_root, add_trust_checkout, print_json, seconds
from runner.errors import ExitCode, UsageError, counted, printable

if TYPE_CHECKING:
    from runner.bisect.attempt import Settings
    from runner.bisect.bisection import Answer, Begun
    from runner.bisect.search import Rule
    from runner.diff import Difference
    from runner.results.history.bisections import Started
    from runner.results.history.store import Store


def add_parser(subcommands: Any, name: str, summary: str) -> None:
    parser = subcommands.add_parser(
        name,
        help=summary,
        description="Bisect the first-parent history of the miles checkout between --good and --bad: at "
        "each commit, its tree is written to a temporary folder, the cell rendered for it (its flags, "
        "presets, conventions) and run as `run` runs it, judged by the same gates. A commit is good when "
        "all N attempts pass, bad when 2 fail; one failure earns N more attempts, and a mix then is flaky "
        "(skipped). A failure of the environment is retried once, then the commit is skipped. Every "
        "attempt is recorded in the history store under the bisection id printed first. Exit 0 a first "
        "bad commit is named, 1 none could be (skips, --max-runs, ends that do not behave as named), "
        "2 invalid command line or spec, 3 environment, 130 interrupted.",
    )
    parser.add_argument("cell", nargs="?", metavar="CELL", help="a cell id or a spec with one cell")
    parser.add_argument("--good", metavar="REV", help="a commit where the cell passes")
    parser.add_argument("--bad", metavar="REV", help="a later commit where it fails")
    parser.add_argument("--resume", metavar="ID", help="go on with an interrupted bisection of the store")
    add_miles_root(parser, "the git checkout whose history is bisected (it is only read)")
    parser.add_argument("--retries", type=int, metavar="N", help="attempts a commit gets (default 3)")
    parser.add_argument("--max-runs", type=int, metavar="N", help="stop after N runs in all")
    parser.add_argument(
        "--metric",
        default="",
        metavar="M",
        help="only metric M's checks and gates (and the job's exit) decide",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan: commits, runs, GPU-hours")
    parser.add_argument(
        "--ray-address",
        default=os.environ.get("RAY_ADDRESS") or None,
        help="an existing Ray cluster (default: $RAY_ADDRESS; else a local head for each attempt)",
    )
    parser.add_argument("--timeout", type=seconds, metavar="SECONDS", help="stop a job that runs longer")
    parser.add_argument("--skip-prepare", action="store_true", help="do not run the prepare steps")
    parser.add_argument("--no-preflight", dest="preflight", action="store_false", help="skip preflight")
    parser.add_argument(
        "--no-miles-check", dest="miles_check", action="store_false", help="skip miles' parser"
    )
    parser.add_argument("--log-dir", type=Path, help="where the logs go (default: run-matrix-logs/bisect-ID)")
    parser.add_argument("--history", metavar="PATH|URL", help="the history store (as `run`'s --history)")
    add_trust_checkout(parser)
    add_format(parser, "text", "json")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from runner.bisect import bisection

    rule = _checked(args)
    if args.dry_run:
        begun = bisection.begin(
            args.cell, args.miles_root, args.good, args.bad, rule, args.max_runs, args.metric
        )
        return _plan(begun, args)
    store = _store(args)
    try:
        answer = _bisect(store, args, rule)
    finally:
        store.close()
    if args.format == "json":
        print_json(to_json(answer))
    else:
        sys.stdout.write(text(answer))
    return int(answer.exit_code)


def _checked(args: argparse.Namespace) -> Rule:
    """The retry rule; a command line that names no bisection (or two) is refused first."""
    from runner.bisect import bisection
    from runner.bisect.search import DEFAULT_ATTEMPTS

    if args.miles_root is None:
        raise UsageError("bisect: name the miles checkout: --miles-root DIR (or $MILES_ROOT)")
    if not args.miles_root.is_dir():
        raise UsageError(f"--miles-root {args.miles_root}: no such directory")
    named = (args.cell, args.good, args.bad, args.retries, args.metric or None, args.dry_run or None)
    if args.resume is not None and any(n is not None for n in named):
        raise UsageError(
            "--resume ID goes on as the bisection began: give no CELL, --good, --bad, --retries, --metric"
            " or --dry-run"
        )
    if args.resume is None and any(n is None for n in named[:3]):
        raise UsageError("bisect: give CELL --good REV --bad REV, or --resume ID")
    return bisection.check_rule(DEFAULT_ATTEMPTS if args.retries is None else args.retries, args.max_runs)


def _bisect(store: Store, args: argparse.Namespace, rule: Rule) -> Answer:
    """A new bisection, or the one ``--resume`` names, run to its end (or its ``--max-runs``)."""
    from runner.bisect import bisection
    from runner.bisect.search import Search
    from runner.results.history import bisections
    from runner.results.history.recorder import Recorder
    from runner.run.outputs import make_log_dir

    if args.resume is not None:
        started = bisections.find(store, args.resume)
        begun = bisection.resumed(started, args.miles_root, args.max_runs)
        search = bisection.replayed(begun, bisections.outcomes(store, started.id))
    else:
        begun = bisection.begin(
            args.cell, args.miles_root, args.good, args.bad, rule, args.max_runs, args.metric
        )
        search = Search(tuple(c.id for c in begun.commits), rule)
    settings = _settings(args, begun.started)
    make_log_dir(settings.log_dir)  # a log folder that cannot be written is exit 3 before any run
    if args.resume is None:
        bisections.start(store, begun.started)
    _say(_first_line(begun, "resumed" if args.resume else "started"))
    return bisection.Loop(begun, settings, Recorder(store, bisection=begun.started.id), _say, search).run()


def _first_line(begun: Begun, verb: str) -> str:
    started, count = begun.started, len(begun.commits) - 1
    return (
        f"run-matrix: bisection {started.id} {verb}: {printable(started.cell)}, "
        f"{counted(count, 'commit')} after {started.good[:12]} up to {started.bad[:12]}, about "
        f"{counted(begun.expected_runs, 'run')} ({counted(started.attempts, 'attempt')} a commit); "
        f"`run-matrix bisect --resume {started.id}` goes on if it is interrupted"
    )


def _settings(args: argparse.Namespace, started: Started) -> Settings:
    from runner.bisect.attempt import Settings

    return Settings(
        args.ray_address,
        args.log_dir or Path("run-matrix-logs") / f"bisect-{started.id}",
        args.timeout,
        args.skip_prepare,
        args.preflight,
        args.miles_check,
        None,
        args.trust_checkout,
        started.metric,
    )


def _store(args: argparse.Namespace) -> Store:
    try:
        from runner.results.history.location import locate
        from runner.results.history.store import Store
    except ImportError as exc:
        from runner.errors import EnvironmentProblem

        raise EnvironmentProblem(
            f"the history store needs {exc.name}: pip install 'run-matrix[run]'"
        ) from None
    logs = args.log_dir.parent if args.log_dir else Path("run-matrix-logs")  # as `run`'s default store
    return Store.open(locate(args.history, os.environ, logs))


def _plan(begun: Begun, args: argparse.Namespace) -> int:
    from runner.bisect import bisection

    plan = bisection.plan(begun, args.trust_checkout)
    if args.format == "json":
        print_json(plan.to_json())
        return int(ExitCode.OK)
    started = begun.started
    lines = [f"bisect {printable(started.cell)}: {counted(len(begun.commits) - 1, 'commit')} to split"]
    lines += [f"  {c.id[:12]}  {printable(c.subject)}" for c in reversed(begun.commits[1:])]
    lines.append(f"  {started.good[:12]}  (good) {printable(begun.commits[0].subject)}")
    hours = plan.gpu_hours
    cost = (
        f"{hours:.2f} GPU-hours ({plan.gpus} GPUs, {plan.est_time} s a run)"
        if hours is not None
        else f"GPU-hours unknown: {printable(plan.no_estimate)}"
    )
    runs = counted(begun.expected_runs, "run")
    lines.append(f"expected: {runs} ({started.attempts} a commit; skips add to it), {cost}")
    sys.stdout.write("\n".join(lines) + "\n")
    return int(ExitCode.OK)


def text(answer: Answer) -> str:
    """The answer as a person reads it: the first bad commit, the attempts at it and at its parent,
    what changed in the launch between the two; else why there is none."""
    begun, search = answer.begun, answer.search
    runs = f"{counted(search.runs, 'run')} (bound {search.bound()})"
    lines = [f"bisection {begun.started.id} of {printable(begun.started.cell)}: {runs}"]
    first = answer.first_bad
    if first is not None:
        index = search.first_bad()
        assert index is not None
        parent = begun.commits[index - 1]
        pr = f" (PR #{first.pull_request})" if first.pull_request else ""
        lines.append(f"first bad commit: {first.id} {printable(first.subject)}{pr}")
        lines += [f"  {reason}" for reason in _reasons(answer, index)]
        lines.append(f"its parent: {parent.id} {printable(parent.subject)}")
        lines += [f"  {reason}" for reason in _reasons(answer, index - 1)]
        lines += _changes(answer.changed)
    elif answer.stopped:
        lo, hi = search.range()
        after, upto = begun.commits[lo].id[:12], begun.commits[hi].id[:12]
        lines.append(f"{answer.stopped}: the first bad commit is after {after}, up to {upto}")
    elif search.ends_wrong():
        lines.append(f"nothing to bisect: {search.ends_wrong()}")
        for index in (search.last, 0):
            lines += [
                f"  {begun.commits[index].id[:12]}: {printable(r)}" for r in answer.reasons.get(index, [])
            ]
    else:
        unsplit = search.unsplit()
        lines.append("the first bad commit is one of these (the ones before the last were skipped):")
        for index in unsplit:
            commit = begun.commits[index]
            lines.append(f"  {commit.id[:12]} {printable(commit.subject)}: {search.verdict(index)}")
    skipped = search.skipped()
    if skipped:
        lines.append("skipped: " + ", ".join(f"{begun.commits[i].id[:12]} ({v})" for i, v in skipped.items()))
    return "\n".join(lines) + "\n"


def _reasons(answer: Answer, index: int) -> list[str]:
    found = answer.reasons.get(index)
    if found:
        return [printable(reason) for reason in found]
    outcomes = answer.search.outcomes.get(index, ())
    return [f"attempts (recorded before resuming): {', '.join(outcomes) or 'none'}"]


def _changes(changed: tuple[Difference, ...]) -> list[str]:
    if not changed:
        return [
            "what changed in the launch: nothing (flags, env, preset, conventions alike): miles' code did"
        ]
    lines = ["what changed in the launch (parent -> first bad):"]
    for difference in changed:
        a = "—" if difference.a is None else printable(str(difference.a))
        b = "—" if difference.b is None else printable(str(difference.b))
        why = f" ({printable(difference.why)})" if difference.why else ""
        lines.append(f"  {printable(difference.key)}: {a} -> {b}{why}")
    return lines


def to_json(answer: Answer) -> dict[str, Any]:
    begun, search = answer.begun, answer.search
    first = answer.first_bad
    index = search.first_bad()
    return {
        "bisection": begun.started.id,
        "cell": begun.started.cell,
        "good": begun.started.good,
        "bad": begun.started.bad,
        "exit_code": int(answer.exit_code),
        "runs": search.runs,
        "bound": search.bound(),
        "first_bad": None
        if first is None
        else {"commit": first.id, "subject": first.subject, "pr": first.pull_request},
        "parent": None if first is None or index is None else begun.commits[index - 1].id,
        "commits": [
            {
                "commit": c.id,
                "subject": c.subject,
                "verdict": search.verdict(i),
                "outcomes": list(search.outcomes.get(i, ())),
                "reasons": answer.reasons.get(i, []),
            }
            for i, c in enumerate(begun.commits)
        ],
        "changed": [d.to_json() for d in answer.changed],
        "unsplit": [begun.commits[i].id for i in search.unsplit()],
        "stopped": answer.stopped or None,
        "ends_wrong": search.ends_wrong() or None,
    }


def _say(line: str) -> None:
    print(printable(line), file=sys.stderr, flush=True)
