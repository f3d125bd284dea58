"""redact: the one redactor of everything run-matrix writes — logs, reports, specs.

A secret is any variable of the caller's whose name looks like one (``*_TOKEN``, ``*_KEY``,
``*_SECRET``, ``*_PASSWORD``, ``*_CRED*``, ...) or that the launch conventions name
(``WANDB_API_KEY``); its value becomes its ``${NAME}`` reference wherever it shows up, as
written or as JSON and shell quoting write it. import (the specs it writes, what the sandbox
prints) and run (job, hook, service and prepare logs, reports) share this one list.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from runner.errors import EnvironmentProblem

# a name ending in one of these, or holding _CRED anywhere (AWS_CREDENTIALS, GIT_CREDS_FILE...)
SECRET_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|KEY|SECRET|SECRETS|PASSWORD|PASSWD|PASS|APIKEY)$|(?:^|_)CRED", re.IGNORECASE
)
SHORTEST = 4  # a named secret shorter than this cannot be redacted without garbling every line
# values a variable named like a secret may hold that are no secret (SOME_KEY=true), and that
# replacing would garble every line they occur in
_NO_SECRET = frozenset({"true", "false", "none", "null", "yes", "no", "on", "off", "auto"})


def secret_name(name: str, named: Iterable[str] = ()) -> bool:
    """Whether a variable called ``name`` holds a secret: one of ``named``, or named like one."""
    return name in set(named) or SECRET_NAME.search(name) is not None


def caller_secrets(environ: Mapping[str, str], named: Iterable[str] = ()) -> dict[str, str]:
    """``{name: value}`` of every secret in ``environ``: the ``named`` ones and those named like one,
    set to something that could be a secret (a ``*_KEY=1`` switch cannot)."""
    named = set(named)
    return {
        name: value
        for name, value in environ.items()
        if secret_name(name, named) and len(value) >= SHORTEST and value.lower() not in _NO_SECRET
    }


def refuse_short(environ: Mapping[str, str], named: Iterable[str]) -> None:
    """A ``named`` secret set to 1 to 3 characters is refused: replacing it would mangle every log
    line it occurs in by chance, and leaving it would print it."""
    short = sorted(n for n in set(named) if 0 < len(environ.get(n, "")) < SHORTEST)
    if short:
        raise EnvironmentProblem(
            f"{', '.join(short)}: set to fewer than {SHORTEST} characters, which cannot be a real "
            "secret and cannot be redacted from logs; unset it or set the real value"
        )


@dataclass(frozen=True)
class Redactor:
    """Replaces each secret's value, and its JSON and shell-quoted forms, with ``${NAME}``."""

    secrets: tuple[tuple[str, str], ...] = ()  # (value, "${NAME}"), longest value first

    @classmethod
    def of(cls, environ: Mapping[str, str], named: Iterable[str] = ()) -> Redactor:
        """Every secret of ``environ``: the ``named`` ones and those named like one."""
        pairs: dict[str, str] = {}
        for name, value in sorted(caller_secrets(environ, named).items()):
            for form in _forms(value):
                pairs.setdefault(form, f"${{{name}}}")
        return cls(tuple(sorted(pairs.items(), key=lambda pair: (-len(pair[0]), pair[0]))))

    def __call__(self, text: str) -> str:
        return self.found(text)[0]

    def found(self, text: str) -> tuple[str, list[str]]:
        """``text`` redacted, and the names of the secrets it held."""
        names: dict[str, None] = {}
        for value, reference in self.secrets:
            if value in text:
                text = text.replace(value, reference)
                names[reference[2:-1]] = None
        return text, list(names)

    def bytes(self, data: bytes) -> bytes:
        """``data`` redacted; bytes that are not UTF-8 pass through as they are."""
        return self(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def _forms(value: str) -> list[str]:
    """How ``value`` may be written: as is, inside a JSON string, shell-quoted."""
    forms = [value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]]
    forms.append(shlex.quote(value))
    return [form for form in dict.fromkeys(forms) if len(form) >= SHORTEST]
