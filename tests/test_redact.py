"""The one redactor: every secret-like name, every form a value is written in, import and run alike."""

from __future__ import annotations

import pytest

from runner.errors import EnvironmentProblem
from runner.redact import Redactor, caller_secrets, refuse_short, secret_name

CALLER = {
    "GITHUB_TOKEN": "ghp_0123456789abcdef",
    "DB_PASSWORD": "hunter2-pw",
    "AWS_CREDENTIALS": "cred-value-99",
    "GIT_CREDS_FILE": "cred-file-77",
    "SIGNING_KEY": "sign-key-42",
    "APP_SECRET": "s3cr3t-val",
    "WANDB_API_KEY": "wandb-abcdef",
    "NAMED": "named-value",
    "HF_HOME": "/data/hf",
    "USE_KEY": "true",
}


@pytest.mark.parametrize(
    "name", ["GITHUB_TOKEN", "DB_PASSWORD", "AWS_CREDENTIALS", "GIT_CREDS_FILE", "SIGNING_KEY", "APP_SECRET"]
)
def test_every_secret_like_name_is_a_secret(name):
    assert secret_name(name)


@pytest.mark.parametrize("name", ["HF_HOME", "KEYBOARD", "MONKEY", "TOKENIZER_PATH", "PATH"])
def test_ordinary_names_are_not(name):
    assert not secret_name(name)


def test_the_callers_secrets_are_the_named_and_the_secret_like_ones_worth_redacting():
    found = caller_secrets(CALLER, ["NAMED"])
    assert sorted(found) == [
        "APP_SECRET", "AWS_CREDENTIALS", "DB_PASSWORD", "GITHUB_TOKEN", "GIT_CREDS_FILE", "NAMED",
        "SIGNING_KEY", "WANDB_API_KEY",
    ]  # fmt: skip


def test_each_value_becomes_its_reference_as_written_in_json_and_in_shell():
    redact = Redactor.of({**CALLER, "QUOTED_TOKEN": 'a"b\\c d\'e'}, ["NAMED"])
    text = (
        "token ghp_0123456789abcdef pw hunter2-pw creds cred-value-99 named-value true\n"
        '{"v": "a\\"b\\\\c d\'e"} sh: \'a"b\\c d\'"\'"\'e\''
    )
    assert redact(text) == (
        "token ${GITHUB_TOKEN} pw ${DB_PASSWORD} creds ${AWS_CREDENTIALS} ${NAMED} true\n"
        '{"v": "${QUOTED_TOKEN}"} sh: ${QUOTED_TOKEN}'
    )
    assert redact.found("x sign-key-42 y")[1] == ["SIGNING_KEY"]
    assert redact.bytes(b"\xff hunter2-pw") == b"\xff ${DB_PASSWORD}"


def test_a_named_secret_too_short_to_redact_is_refused():
    with pytest.raises(EnvironmentProblem) as refused:
        refuse_short({"WANDB_API_KEY": "abcd1234", "HF_TOKEN": "abc"}, ["WANDB_API_KEY", "HF_TOKEN"])
    assert str(refused.value) == (
        "HF_TOKEN: set to fewer than 4 characters, which cannot be a real secret and cannot be redacted from"
        " logs; unset it or set the real value"
    )
