"""system_steps: prepare steps that touch the system, found before anything runs. Pure.

A test's preparation makes folders, downloads and converts checkpoints, writes its configs. A
step that writes under ``/etc``, ``/proc``, ``/sys``, ``/boot``, ``/dev`` (``/dev/shm`` aside) or
an ``.ssh`` folder, or removes a folder that no step of the spec creates or downloads into and
that lies under none of its data folders, changes the machine rather than the test's data: `run`
would do it (often as root). ``import`` refuses such a step at the test's line, and ``run`` refuses
it in any spec, unless ``--allow-system-steps``.

A spec's data folders: what its steps create, download or convert into, the folders holding
what they download or convert, and each absolute path its ``vars`` name (``models: /root/models``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runner.errors import Problem, SpecError, merged

if TYPE_CHECKING:
    from runner.cells.cell import Cell

SYSTEM = ("/etc", "/proc", "/sys", "/boot", "/dev", "/root/.ssh")
NOT_SYSTEM = ("/dev/shm",)
HOMES = ("~", "${HOME}", "$HOME")  # how a recorded or written path names the home of whoever runs it
ALLOW_HINT = "--allow-system-steps runs it anyway"


def system_folder(path: str, home: str = "") -> str:
    """The system folder ``path`` lies in (``/etc``, ``~/.ssh``), or ""."""
    clean = _normal(path)
    if _under(clean, NOT_SYSTEM):
        return ""
    ssh = [f"{h}/.ssh" for h in (*HOMES, home) if h]
    for folder in (*SYSTEM, *ssh):
        if _under(clean, (_normal(folder),)):
            return folder
    return ""


def writes(step: Mapping[str, Any]) -> list[str]:
    """The paths a step writes (creates, downloads or converts into, patches)."""
    kind = step.get("kind")
    if kind == "write-file":
        return [step["path"]]
    if kind == "mkdir":
        return list(step["paths"])
    if kind == "hf-download":
        return [step["local_dir"]]
    if kind == "patch-hf-config":
        return [step["config"]]
    if kind == "convert-torch-dist":
        return [step["save"]]
    if "save_dir" in step:  # the conversions by miles' tools/*.py
        return [step["save_dir"]]
    return []  # a call: the test's own function, which no step can look into


def findings(
    steps: Sequence[Mapping[str, Any]], data_folders: Iterable[str] = (), home: str = ""
) -> list[tuple[int, str, str]]:
    """``(index, what it does, the path it removes or "")`` of each step that touches the system."""
    folders = _data_folders(steps, data_folders)
    found = []
    for index, step in enumerate(steps):
        for path in writes(step):
            if where := system_folder(path, home):
                found.append((index, f"writes {path}, under {where}", ""))
        for path in step.get("paths", []) if step.get("kind") == "remove" else []:
            if where := system_folder(path, home):
                found.append((index, f"removes {path}, under {where}", ""))
            elif not _under(_normal(path), folders):
                unmade = "which no step creates or downloads into and no data folder holds"
                found.append((index, f"removes {path}, {unmade}", path))
    return found


def holds(folders: Iterable[str], path: str) -> bool:
    """Whether ``path`` is one of ``folders`` or lies under one."""
    return _under(_normal(path), tuple(_normal(folder) for folder in folders))


def _outputs(cell: Cell) -> list[str]:
    """The folders the cell's launch writes (``--save``): the test's own data, removed before a run."""
    output_flags = cell.conventions.output_flags
    return [str(value) for name, value in cell.spec.args.flags().items() if name in output_flags]


def _data_folders(steps: Sequence[Mapping[str, Any]], declared: Iterable[str]) -> tuple[str, ...]:
    folders = [path for path in declared if posixpath.isabs(path) and not system_folder(path)]
    for step in steps:
        made = writes(step)
        folders += made
        if step.get("kind") not in ("mkdir", "write-file", "patch-hf-config"):  # what holds a download
            folders += [posixpath.dirname(_normal(path)) for path in made]
    return tuple(_normal(folder) for folder in folders if _normal(folder).count("/") >= 2)


def _normal(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _under(path: str, folders: Iterable[str]) -> bool:
    return any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in folders)


def refuse(cells: Sequence[Cell], allowed: bool) -> None:
    """``run``'s check: each prepare step of the cells that touches the system is a SpecError (exit 2)
    naming the step's line, unless ``allowed``."""
    found: list[tuple[str, Problem]] = []
    for cell in [] if allowed else cells:
        names = list(cell.spec.prepare)
        steps = [step.model_dump(mode="json") for step in cell.spec.prepare.values()]
        declared = [value for value in cell.spec.vars.values() if isinstance(value, str)]
        for index, what, _ in findings(steps, declared + _outputs(cell)):
            problem = Problem(
                "system-step",
                f"it {what}, which changes the machine rather than the test's data",
                f"prepare.{names[index]}",
                (cell.location("prepare", names[index]),),
                hint=ALLOW_HINT,
            )
            found.append((cell.id, problem))
    if found:
        raise SpecError(merged(found))
