"""What a checkpoint's ``config.json`` holds, for a test that reads it before it launches.

A test's prepare may read the ``config.json`` of a Hub repo it downloads (native LoRA's preflight
reads ``model_type``). Import answers that read, in this order: the facts run-matrix ships
(``miles/import.yaml`` checkpoints), else the user's Hugging Face cache (``$HF_HOME/hub``, else
``~/.cache/huggingface/hub``: ``models--ORG--NAME/refs/main`` names the snapshot whose
``config.json`` is read), else a file the user names (``--hf-config REPO=FILE``). Nothing else.

The cache and the named file are the user's, and may be anything: a repo name must be one the Hub
could hold, a link may not lead out of its repo's folder in the cache, a file is read only when it
is a regular file of at most ``MAX_BYTES``, and it must be a JSON object. Nothing in them is run.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from runner.errors import EnvironmentProblem, UsageError, display_path
from runner.spec import documents

CONFIG = "config.json"
MAX_BYTES = 1 << 20  # a model's config.json is a few KiB; a larger one is not one
MAX_REF_BYTES = 256  # refs/main holds one commit hash
MAX_REPOS = 64  # repos one recording may ask for
REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
REVISION = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
OPTION = "--hf-config REPO=FILE"

Configs = dict[str, dict[str, Any]]  # repo -> file name -> its JSON content


def hub(environ: Mapping[str, str] = os.environ) -> Path:
    """The user's Hugging Face hub cache: ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``."""
    home = environ.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub"
    return Path(environ.get("HOME") or Path.home()) / ".cache" / "huggingface" / "hub"


def parse_given(text: str) -> tuple[str, Path]:
    """``REPO=FILE`` of ``--hf-config`` (FILE relative to the working folder)."""
    repo, sep, file = text.partition("=")
    if not sep or not file or not REPO.fullmatch(repo) or ".." in repo:
        raise UsageError(f"{text!r} is not REPO=FILE (REPO a Hub repo, ORG/NAME; FILE its config.json)")
    return repo, Path(file).absolute()


def answered(
    repos: Iterable[str],
    shipped: Mapping[str, Mapping[str, Any]],
    given: Mapping[str, Path],
    hub_folder: Path,
) -> Configs:
    """The ``config.json`` of each of ``repos`` that run-matrix does not ship: from the cache, else
    from ``given``; a repo found in neither is left out (the read is refused, naming the option)."""
    found: Configs = {}
    for repo in sorted(set(repos))[:MAX_REPOS]:
        if not isinstance(repo, str) or CONFIG in shipped.get(repo, {}) or not REPO.fullmatch(repo):
            continue
        config = cached(hub_folder, repo)
        if config is None and repo in given:
            config = read_config(given[repo], f"--hf-config {repo}=")
        if config is not None:
            found[repo] = {CONFIG: config}
    return found


def cached(hub_folder: Path, repo: str) -> dict[str, Any] | None:
    """``repo``'s ``config.json`` in the cache at ``hub_folder``, of the snapshot ``refs/main``
    names; None when the cache has no such snapshot or file."""
    if ".." in repo or not REPO.fullmatch(repo):
        return None
    folder = hub_folder / ("models--" + repo.replace("/", "--"))
    revision = _small_text(folder / "refs" / "main", MAX_REF_BYTES, folder)
    if revision is None:
        return None
    if not REVISION.fullmatch(revision.strip()):
        raise EnvironmentProblem(
            f"{display_path(folder / 'refs' / 'main')}: not a commit hash ({revision.strip()[:60]!r});"
            f" fetch {repo} again (hf download {repo} {CONFIG}) or pass {OPTION}"
        )
    config = folder / "snapshots" / revision.strip() / CONFIG
    if not os.path.lexists(config):
        return None
    return read_config(config, "the Hugging Face cache's ", folder)


def read_config(path: Path, what: str, within: Path | None = None) -> dict[str, Any]:
    """A ``config.json`` (``what`` says whose, for the error): a JSON object read bounded."""
    text = _small_text(path, MAX_BYTES, within, what)
    if text is None:
        raise EnvironmentProblem(f"{what}{display_path(path)}: no such file")
    try:
        data = documents.json_data(text, MAX_BYTES)
    except ValueError as error:  # documents.Unreadable too
        raise EnvironmentProblem(f"{what}{display_path(path)}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise EnvironmentProblem(
            f"{what}{display_path(path)}: a config.json is a JSON object, not {type(data).__name__}"
        )
    return data


def _small_text(path: Path, limit: int, within: Path | None, what: str = "") -> str | None:
    """The text of the regular file ``path`` (its links resolved inside ``within``), None when there
    is none; an error when it is larger than ``limit`` bytes, not a regular file or not text."""
    real = _inside(path, within)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # a FIFO does not block the open
    if within is not None:
        flags |= getattr(os, "O_NOFOLLOW", 0)  # resolved already: a link now is one swapped in since
    try:
        descriptor = os.open(real, flags) if real is not None else None
    except FileNotFoundError:
        return None
    except OSError as error:
        raise EnvironmentProblem(f"{what}{display_path(path)}: cannot be read ({error.strerror})") from None
    if descriptor is None:
        raise EnvironmentProblem(f"{what}{display_path(path)}: a link out of {display_path(within or path)}")
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise EnvironmentProblem(f"{what}{display_path(path)}: not a regular file")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise EnvironmentProblem(f"{what}{display_path(path)}: larger than {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise EnvironmentProblem(f"{what}{display_path(path)}: not UTF-8 text") from None


def _inside(path: Path, within: Path | None) -> Path | None:
    """``path`` with its links resolved when that stays inside ``within`` (None when it leads out);
    ``path`` itself when it is not there."""
    if within is None:
        return path
    try:
        real, root = path.resolve(strict=True), within.resolve(strict=True)
    except (OSError, RuntimeError):
        return path  # not there (or a loop): opening it says so
    return real if real == root or root in real.parents else None
