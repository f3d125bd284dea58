"""bisection: the first miles commit that breaks a cell — the loop around ``search`` and ``attempt``.

``begin`` resolves the two revisions through the checkout's door and lists the first-parent history
between them; ``run`` asks ``search`` for the next commit, writes that commit's tree out, renders the
cell for it (a spec that does not validate there skips it), and runs attempts until the rule gives a
verdict; every attempt goes to the history store under the bisection's id. ``resume`` rebuilds the
search from the store and goes on. The answer names the first bad commit, the attempts at it and at
its parent, and what changed in the launch between the two.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from runner.bisect import attempt, changes
from runner.bisect.search import Rule, Search, expected_runs
from runner.diff import Difference
from runner.errors import ExitCode, SpecError, UsageError, counted
from runner.knowledge.checkout import Tree, revisions
from runner.knowledge.checkout.revisions import Commit
from runner.launch.planned import Planned
from runner.results.history import bisections
from runner.results.history.bisections import Started
from runner.results.history.recorder import Recorder

Say = Callable[[str], None]


@dataclass(frozen=True)
class Begun:
    """A bisection ready to run: its record, the checkout, and the commits from good to bad."""

    started: Started
    checkout: Tree
    commits: tuple[Commit, ...]

    @property
    def rule(self) -> Rule:
        return Rule(self.started.attempts)

    @property
    def expected_runs(self) -> int:
        return expected_runs(self.rule, len(self.commits) - 1)


def begin(
    cell: str, miles_root: Path, good: str, bad: str, rule: Rule, max_runs: int | None, metric: str
) -> Begun:
    """The commits from ``good`` to ``bad`` (revisions as typed), checked; a new bisection id."""
    checkout = revisions.repository(miles_root)
    good_id = revisions.commit(checkout, good, "--good")
    bad_id = revisions.commit(checkout, bad, "--bad")
    ids = revisions.between(checkout, good_id, bad_id)
    started = Started(bisections.new_id(), cell, good_id, bad_id, rule.attempts, max_runs, metric)
    return Begun(started, checkout, tuple(revisions.described(checkout, i) for i in ids))


def resumed(started: Started, miles_root: Path, max_runs: int | None) -> Begun:
    """A bisection the store holds, over the same checkout's history; ``max_runs`` bounds this session."""
    checkout = revisions.repository(miles_root)
    ids = revisions.between(checkout, started.good, started.bad)
    started = replace(started, max_runs=max_runs)
    return Begun(started, checkout, tuple(revisions.described(checkout, i) for i in ids))


def replayed(begun: Begun, recorded: list[tuple[str, str]]) -> Search:
    """The search as the recorded attempts leave it (an attempt at a commit outside the range is not
    the bisection's: passed over)."""
    search = Search(tuple(c.id for c in begun.commits), begun.rule)
    index = {c.id: i for i, c in enumerate(begun.commits)}
    for commit, outcome in recorded:
        if commit in index and outcome in ("pass", "fail", "env"):
            search = search.with_outcome(index[commit], outcome)  # type: ignore[arg-type]
    return search


@dataclass(frozen=True)
class Answer:
    """How a bisection ended."""

    begun: Begun
    search: Search
    reasons: dict[int, list[str]]  # per commit, each attempt's outcome and reason (or why it was skipped)
    changed: tuple[Difference, ...] = ()  # the launch, from the first bad commit's parent to it
    stopped: str = ""  # why it stopped before its end (--max-runs)

    @property
    def first_bad(self) -> Commit | None:
        index = self.search.first_bad()
        return self.begun.commits[index] if index is not None and not self.stopped else None

    @property
    def exit_code(self) -> ExitCode:
        if self.first_bad is not None:
            return ExitCode.OK
        wrong = self.search.wrong_end()
        verdict = wrong[1] if wrong else None
        if verdict == "env":
            return ExitCode.ENVIRONMENT  # this machine cannot run an end: nothing was learned
        return ExitCode.INVALID_SPEC if verdict == "invalid" else ExitCode.RUN_FAILED


# mutable: the loop's state while it runs (the search so far, the launches rendered at each commit)
@dataclass
class Loop:
    begun: Begun
    settings: attempt.Settings
    recorder: Recorder
    say: Say
    search: Search
    reasons: dict[int, list[str]] = field(default_factory=dict)
    launches: dict[int, Planned] = field(default_factory=dict)

    def run(self) -> Answer:
        """Commit after commit until the search ends, or this session has had its ``--max-runs``."""
        limit = self.begun.started.max_runs
        most = None if limit is None else self.search.runs + limit  # runs before a resume do not count
        while (index := self.search.next()) is not None:
            if most is not None and self.search.runs >= most:
                return self.answer(f"stopped after {counted(limit or 0, 'run')} (--max-runs {limit})")
            self.commit(index, most)
        return self.answer("")

    def commit(self, index: int, most: int | None) -> None:
        """Attempts at one commit until it has its verdict (or the bisection its last run)."""
        commit = self.begun.commits[index]
        with attempt.tree_of(self.begun.checkout, commit.id) as root:
            try:
                each = self.render(index, root)
            except SpecError as exc:
                self.search = self.search.with_invalid(index)
                why = exc.problems[0].message if exc.problems else str(exc)
                self.reasons.setdefault(index, []).append(f"the spec does not validate here: {why}")
                self.say(f"{commit.id[:12]}: skipped, the spec does not validate here: {why}")
                return
            recorder = attempt.recorder_for(self.recorder, commit.id, self.settings.metric)
            while self.search.verdict(index) is None and (most is None or self.search.runs < most):
                number = len(self.search.outcomes.get(index, ())) + 1
                tried = attempt.attempt(each, root, self.settings, recorder, f"{commit.id[:12]}-{number}")
                self.search = self.search.with_outcome(index, tried.outcome)
                line = f"attempt {number}: {tried.outcome}" + (f" ({tried.reason})" if tried.reason else "")
                self.reasons.setdefault(index, []).append(line)
                self.say(f"{commit.id[:12]} {line} [{counted(self.search.runs, 'run')} so far]")
        verdict = self.search.verdict(index)
        if verdict is not None:
            self.say(f"{commit.id[:12]}: {verdict}")

    def render(self, index: int, root: Path) -> Planned:
        found = attempt.planned(self.begun.started.cell, root, self.settings.trust_checkout)
        self.launches[index] = found
        return found

    def launch_at(self, index: int) -> Planned | None:
        """The cell's launch at a commit: rendered during the bisection, or now (a resumed one)."""
        if index not in self.launches:
            with attempt.tree_of(self.begun.checkout, self.begun.commits[index].id) as root:
                try:
                    self.render(index, root)
                except SpecError:
                    return None
        return self.launches[index]

    def answer(self, stopped: str) -> Answer:
        index = self.search.first_bad()
        changed: tuple[Difference, ...] = ()
        if index is not None and not stopped:
            before, after = self.launch_at(index - 1), self.launch_at(index)
            changed = changes.changes(before, after) if before and after else ()
        return Answer(self.begun, self.search, self.reasons, changed, stopped)


@dataclass(frozen=True)
class Plan:
    """What ``--dry-run`` prints: the commits to split, the runs expected, and their GPU-hours."""

    begun: Begun
    gpus: int
    est_time: int | None  # seconds a run takes (``ci.est_time``)
    no_estimate: str  # why there are no GPU-hours ("" when there are)

    @property
    def gpu_hours(self) -> float | None:
        if not self.est_time:
            return None
        return round(self.begun.expected_runs * self.gpus * self.est_time / 3600, 2)

    def to_json(self) -> dict[str, object]:
        started = self.begun.started
        candidates = [
            {"commit": c.id, "subject": c.subject, "pr": c.pull_request} for c in self.begun.commits[1:]
        ]
        return {
            "cell": started.cell,
            "good": started.good,
            "bad": started.bad,
            "candidates": candidates,
            "attempts": started.attempts,
            "expected_runs": self.begun.expected_runs,
            "max_runs": started.max_runs,
            "gpus": self.gpus,
            "est_time": self.est_time,
            "gpu_hours": self.gpu_hours,
            "no_estimate": self.no_estimate,
        }


def plan(begun: Begun, trust: bool) -> Plan:
    """The plan, from the cell rendered at the bad commit: the GPUs a run takes and its ``ci.est_time``."""
    with attempt.tree_of(begun.checkout, begun.started.bad) as root:
        try:
            cell = attempt.planned(begun.started.cell, root, trust).cell
        except SpecError as exc:
            why = exc.problems[0].message if exc.problems else str(exc)
            return Plan(begun, 0, None, f"the spec does not validate at the bad commit: {why}")
    gpus = cell.spec.cluster.nodes * cell.spec.cluster.gpus_per_node
    seconds = cell.spec.ci.est_time
    return Plan(begun, gpus, seconds, "" if seconds else "the cell has no ci.est_time")


def check_rule(attempts: int, max_runs: int | None) -> Rule:
    if not 1 <= attempts <= 20:
        raise UsageError(f"--retries {attempts}: the attempts a commit gets, 1 to 20 (default 3)")
    if max_runs is not None and max_runs < 1:
        raise UsageError(f"--max-runs {max_runs}: a number of runs, at least 1")
    return Rule(attempts)
