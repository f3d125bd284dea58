"""A real git history of the fake miles, for the bisect tests: each commit's files written, then
committed with real `git` commands. What each commit does to the cell is known:

  0 good   base: the fake miles
  1 good   tidy the README (#11)
  2 good   docs: the train loop (#12)
  3 flaky  rollout: a race in the buffer (#13)     fails the 1st and 5th attempt it is given
  4 env    packaging: move train_async.py (#14)    no train script: preflight fails (exit 3)
  5 invalid  arguments: a parser of our own (#15)  its own flags: the spec's are unknown there
  6 good   restore the packaging (#16)
  7 bad    rollout: a new logprob path (#17)       the logprob difference is 0.5 (max 0.1)
  8 bad    tidy the scripts (#18)
  9 bad    bump the version (#19)
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import DATA

FAKE_MILES = DATA / "fake-miles"
FIRST_BAD = 7
FLAKY, ENV, INVALID = 3, 4, 5
COUNTER_ENV = "FAKE_MILES_FLAKY_COUNTER"  # a file outside the trees: attempts at the flaky commit

FLAKY_CODE = f'''

def _flaky() -> None:
    """A race: the 1st and 5th attempts at this commit fail."""
    import os
    from pathlib import Path

    counter = Path(os.environ["{COUNTER_ENV}"])
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    if count in (1, 5):
        print("fake miles: a race in the rollout buffer", flush=True)
        raise SystemExit(1)


_flaky()
'''
ARGUMENTS = '''"""A parser of its own: none of the flags the spec sets."""


def add_arguments(parser):
    parser.add_argument("--only-this-flag", type=int, default=0)
    return parser
'''
SUBJECTS = (
    "base: the fake miles",
    "tidy the README (#11)",
    "docs: the train loop (#12)",
    "rollout: a race in the buffer (#13)",
    "packaging: move train_async.py (#14)",
    "arguments: a parser of our own (#15)",
    "restore the packaging (#16)",
    "rollout: a new logprob path (#17)",
    "tidy the scripts (#18)",
    "bump the version (#19)",
)


def git(root: Path, *args: str) -> str:
    env = {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "HOME": str(root),
        "PATH": "/usr/bin:/bin",
    }
    identity = ("-c", "user.name=Fake", "-c", "user.email=fake@example.com", "-c", "commit.gpgsign=false")
    done = subprocess.run(
        ["git", *identity, *args], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def build(root: Path) -> tuple[str, ...]:
    """The history at ``root`` (a new folder); the commits' ids, oldest first."""
    shutil.copytree(FAKE_MILES, root, ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "init", "--quiet", "--initial-branch=main")
    source = (FAKE_MILES / "_fake_miles.py").read_text()
    train_async = (FAKE_MILES / "train_async.py").read_text()
    ids = []
    for number, subject in enumerate(SUBJECTS):
        _write(root, number, source, train_async)
        git(root, "add", "--all")
        git(root, "commit", "--quiet", "--allow-empty", "-m", subject)
        ids.append(git(root, "rev-parse", "HEAD"))
    return tuple(ids)


def _write(root: Path, number: int, source: str, train_async: str) -> None:
    code = source
    if number == FLAKY:
        code = source + FLAKY_CODE
    if number >= FIRST_BAD:
        code = code.replace('"FAKE_MILES_LOGPROB_DIFF", "0.077"', '"FAKE_MILES_LOGPROB_DIFF", "0.5"')
    (root / "_fake_miles.py").write_text(code)
    script = root / "train_async.py"
    if number == ENV:
        script.unlink(missing_ok=True)
    else:
        script.write_text(train_async)
    arguments = root / "miles" / "utils" / "arguments.py"
    if number == INVALID:
        arguments.write_text(ARGUMENTS)
    else:
        arguments.unlink(missing_ok=True)
    (root / "README.md").write_text(f"the fake miles, commit {number}\n")
