"""A checkout's launch conventions, as its own execute_train applies them in the sandbox
(``runner/knowledge/conventions.py``): what render, validate and list learn of a checkout's launch
without asking the import."""

from __future__ import annotations

import pytest

from runner import pipeline
from runner.knowledge.conventions import ConventionsError, checkout_conventions
from tests.test_checkout import ROCM, edited_checkout

pytestmark = pytest.mark.allow_subprocess
SUBMIT = "    exec_command(\n        f'source"


def observed(checkout):
    cell = pipeline.cell(ROCM)
    return checkout_conventions(checkout, cell.conventions, cell.spec.model.type)


def test_a_secret_the_checkout_submits_is_written_as_its_reference_never_its_value(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "the-callers-real-key")
    checkout = edited_checkout(
        tmp_path,
        'env = {"PYTHONPATH": megatron_path,',
        'env = {"PYTHONPATH": megatron_path, "WANDB_API_KEY": os.environ.get("WANDB_API_KEY", ""),',
    )
    conventions, differences = observed(checkout)
    assert differences == ["WANDB_API_KEY=${WANDB_API_KEY} (not in the shipped conventions)"]
    assert "the-callers-real-key" not in conventions.model_dump_json()


def test_what_a_hostile_execute_train_attempts_changes_nothing_here(tmp_path):
    """Writing a file, running a program (os.system, subprocess): the sandbox keeps each from this
    machine, and the conventions it submits are still read."""
    marks = [tmp_path / f"ran-{n}" for n in range(3)]
    attempts = (
        f"    for attempt in (lambda: open({str(marks[0])!r}, 'w').write('x'),"
        f" lambda: os.system('id > {marks[1]}'),"
        f" lambda: __import__('subprocess').run(['sh', '-c', 'id > {marks[2]}'])):\n"
        "        try:\n            attempt()\n        except Exception:\n            pass\n"
    )
    checkout = edited_checkout(tmp_path, "    master = os.environ", attempts + "    master = os.environ")
    _, differences = observed(checkout)
    assert differences == []
    assert [m for m in marks if m.exists()] == []


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            SUBMIT,
            '    exec_command("hostname", capture_output=True)\n' + SUBMIT,
            "execute_train reads the output of `hostname`, which run-matrix cannot know",
        ),
        (
            SUBMIT,
            '    exec_command("ray job submit -- true")\n' + SUBMIT,
            "execute_train runs 2 `ray job submit` commands; expected one",
        ),
        (
            "--runtime-env-json='",
            "--runtime-env-json='[1]",
            "execute_train submits no runtime env run-matrix can read",
        ),
        (
            "    master = os.environ",
            "    raise SystemExit(3)\n    master = os.environ",
            "execute_train raises SystemExit: 3",
        ),
    ],
)
def test_an_execute_train_whose_env_cannot_be_read_says_why(tmp_path, old, new, reason):
    with pytest.raises(ConventionsError) as raised:
        observed(edited_checkout(tmp_path, old, new))
    assert str(raised.value) == reason
