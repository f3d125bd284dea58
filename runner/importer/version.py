"""version: the pinned miles version an imported script's launch is read against.

It decides which launch conventions say what ``execute_train`` adds by itself (those env vars are
miles', not the test's) and is written as the spec's ``miles_version``:

* without ``--miles-root``: the version whose command helpers ``recorder.py`` stands in for;
* with a checkout at a shipped commit: that version;
* with any other checkout: the shipped conventions its own ``execute_train`` follows, observed —
  the version whose defaults the recorded launch sets most of.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from runner.importer.capture import RECORDER_MILES_VERSION
from runner.importer.launch import launched
from runner.importer.traced import Run
from runner.knowledge import bundled, checkout, preset_data, versions
from schemas import LaunchConventions


def miles_version(miles_root: Path | None, record: Callable[[dict[str, str]], Run]) -> str | None:
    if miles_root is None:
        return RECORDER_MILES_VERSION
    commit = checkout.head_commit(miles_root)
    shipped = preset_data.shipped()
    named = versions.matching(commit, shipped) if commit else []
    if len(named) == 1:
        return named[0].commit
    run = record({})
    if not run.calls:
        return None  # the import refuses it anyway, with the reason
    scores = {v.commit: _score(run, bundled.conventions(v.commit)) for v in shipped}
    return max(reversed(list(scores)), key=lambda commit: scores[commit])  # a tie: the newest


def _score(run: Run, conventions: LaunchConventions) -> int:
    """How many of the conventions' fixed env values the recorded launch sets as they say."""
    call = run.calls[0]
    env = launched(call.commands, call.args["train_args"], run.root, conventions.secrets, call.at).env
    fill = {
        "master_addr": env.get("MASTER_ADDR", "127.0.0.1"),
        "megatron_path": conventions.megatron_path,
        "miles_root": run.root,
    }
    fixed = [d for d in conventions.runtime_env if d.value is not None and not d.from_caller]
    return sum(env.get(d.name) == d.value.format(**fill) for d in fixed if d.value is not None)
