"""interpreter: what of the caller's files an interpreter named by path needs to start in the sandbox.

``--miles-python PY`` (or the node's ``python3`` on PATH) may be a link: ``~/bin/python3`` to
``/usr/bin/python3``. Nothing is derived from the path as given (``PY/../..`` of that link is the
whole home); each link met while resolving it is made again in the sandbox, at its own path and with
its own target, so that PY starts by the path given and finds what Python looks for from there:

* the real binary, bound by its resolved path;
* a venv's ``pyvenv.cfg`` (beside PY or one folder up, where Python looks for it) and the venv's
  ``lib*/python3*/site-packages``, never the rest of the venv's folder;
* the real prefix of the binary and of the venv's ``home``: the folder above the resolved binary's
  ``bin/``, when it holds a standard library (``lib/python3*/os.py``). A prefix that is ``/`` or a
  home folder (or holds one) is shown only as its ``lib*/python3*`` folders and ``libpython3*``;
* the folders that a ``.pth`` file of those site-packages adds to ``sys.path`` (an editable install),
  read as Python's ``site`` reads them, its ``import`` lines never run here.

PY itself is never run outside the sandbox to ask it (it may be a file of the checkout).
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_LINKS = 40  # links followed resolving one path (the kernel's own limit)
MAX_CONFIG = 64 << 10  # bytes of a pyvenv.cfg or a .pth file read
MAX_FOUND = 64  # site-packages, .pth files and the folders they name, each at the most
LANDMARK = "lib/python3*/os.py"
STDLIB = ("lib/python3*", "lib64/python3*", "lib/libpython3*", "lib64/libpython3*")
VENV_PACKAGES = ("lib/python3*/site-packages", "lib64/python3*/site-packages")


@dataclass(frozen=True)
class Installation:
    """What the sandbox shows of an interpreter: paths bound read-only, links made again."""

    reads: tuple[Path, ...]
    links: tuple[tuple[Path, str], ...]  # (where the link is, what it names), in the order met


def installation(python: Path) -> Installation:
    """What ``python`` (absolute, as the caller named it) needs to start."""
    links, binary = resolve(python)
    reads = {binary, *_prefix(binary)} if _regular(binary) else set()
    config = _venv_config(python)
    if config is not None:
        reads.add(config)
        venv = config.parent
        packages = _found(venv, VENV_PACKAGES)
        reads.update(packages)
        home = _home(config)
        if home is not None:
            reads.update(_prefix(home / "python3"))
        reads.update(_added_by_pth(packages))
    return Installation(tuple(sorted(reads)), tuple(links))


def resolve(path: Path) -> tuple[list[tuple[Path, str]], Path]:
    """The links met resolving absolute ``path``, component by component as the kernel does, and the
    real path it ends at."""
    links: list[tuple[Path, str]] = []
    pending = list(path.parts[1:])
    real = Path("/")
    while pending:
        name = pending.pop(0)
        if name == "..":
            real = real.parent
            continue
        candidate = real / name
        if name in ("", ".") or not candidate.is_symlink():
            real = real if name in ("", ".") else candidate
            continue
        if len(links) == MAX_LINKS:  # a loop of links: PY starts neither here nor in the sandbox
            return links, candidate.joinpath(*pending)
        target = os.readlink(candidate)
        links.append((candidate, target))
        if os.path.isabs(target):
            real = Path("/")
        pending = [*Path(target).parts[1 if os.path.isabs(target) else 0 :], *pending]
    return links, real


def _venv_config(python: Path) -> Path | None:
    """The ``pyvenv.cfg`` Python reads for ``python`` as given (beside it, else one folder up), resolved."""
    for folder in (python.parent, python.parent.parent):
        config = Path(os.path.realpath(folder / "pyvenv.cfg"))
        if _regular(config):
            return config
    return None


def _home(config: Path) -> Path | None:
    """The resolved ``home`` folder a venv's ``pyvenv.cfg`` names (its base interpreter's ``bin/``)."""
    for line in _text(config).splitlines():
        name, equals, value = line.partition("=")
        if equals and name.strip().lower() == "home":
            home = Path(os.path.realpath(value.strip()))
            return home if value.strip() and home.is_dir() else None
    return None


def _prefix(binary: Path) -> list[Path]:
    """The real prefix above ``binary``'s ``bin/`` when it holds a standard library (else none: Python
    then uses the prefix it was built with); only its Python folders where it is ``/`` or a home."""
    prefix = Path(os.path.realpath(binary.parent)).parent
    if not any(prefix.glob(LANDMARK)):
        return []
    if prefix == Path("/") or any(home == prefix or prefix in home.parents for home in _homes()):
        return _found(prefix, STDLIB)
    return [prefix]


def _homes() -> set[Path]:
    """Home folders of the caller: ``$HOME`` and the password database's, resolved."""
    named = {os.environ.get("HOME", ""), pwd.getpwuid(os.getuid()).pw_dir}
    return {Path(os.path.realpath(home)) for home in named if home}


def _added_by_pth(packages: list[Path]) -> list[Path]:
    """The folders the ``.pth`` files of ``packages`` add to ``sys.path``: each line that is not a
    comment nor an ``import``, relative to its site-packages, resolved, where it is a folder."""
    added: list[Path] = []
    pth = [path for folder in packages for path in sorted(folder.glob("*.pth"))[:MAX_FOUND]]
    for path in pth[:MAX_FOUND]:
        for line in _text(path).splitlines():
            line = line.rstrip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            folder = Path(os.path.realpath(path.parent / line))
            if folder.is_dir() and len(added) < MAX_FOUND:
                added.append(folder)
    return added


def _found(folder: Path, patterns: tuple[str, ...]) -> list[Path]:
    """The paths below ``folder`` that match ``patterns``, resolved, at most MAX_FOUND."""
    found = [Path(os.path.realpath(path)) for pattern in patterns for path in sorted(folder.glob(pattern))]
    return sorted(set(found))[:MAX_FOUND]


def _text(path: Path) -> str:
    """A regular file's first MAX_CONFIG bytes as text (empty where it is no regular file: a FIFO
    must not hang the read)."""
    if not _regular(path):
        return ""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as file:
        return file.read(MAX_CONFIG).decode("utf-8", "replace")


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
