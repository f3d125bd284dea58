"""Where specs, hardware profiles, model presets and miles' conventions live.

A spec path is looked up relative to the current directory, then under
``matrices/`` (of the current directory, then of run-matrix itself). Hardware
profiles come from the ``hardware/`` folder of the spec's own matrices tree
first, so a team's new profile needs no change to run-matrix. A matrices tree's root holds
``hardware/``, or the marker an import writes into its output folder (``ROOT_MARKER``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from runner.errors import Location, SpecError, UsageError, did_you_mean
from runner.memos import asked, resolved
from runner.spec.paths import NAME

_SOURCE = Path(__file__).resolve().parents[2]
# A checkout (or editable install) has miles/ and matrices/ beside runner/;
# a wheel carries them in runner/_data.
PROJECT = (
    _SOURCE if (_SOURCE / "miles" / "models").is_dir() else Path(__file__).resolve().parents[1] / "_data"
)
BUNDLED_MATRICES = PROJECT / "matrices"
PRESETS = PROJECT / "miles" / "models"
CONVENTIONS = PROJECT / "miles" / "launch"  # one file per pinned miles version
ROOT_MARKER = ".run-matrix-root"  # a matrices root without hardware/: what `import -o DIR` wrote there


def find_spec(name: str) -> Path:
    """The file (or folder) a user means by ``name``."""
    # run-matrix's own matrices last, also as "matrices/..." when it is installed as a wheel
    candidates = [Path(name), Path("matrices") / name, BUNDLED_MATRICES / name]
    if Path(name).parts[:1] == ("matrices",):
        candidates.append(BUNDLED_MATRICES.parent / name)
    for candidate in candidates:
        for path in (candidate, Path(f"{candidate}.yaml")):
            if path.exists():
                return path
    looked = ", ".join(str(c) for c in dict.fromkeys(candidates))
    close = did_you_mean(name.removesuffix(".yaml"), _spec_names(name, candidates))
    raise UsageError(f"no spec {name!r}: looked in {looked}" + (f"; {close}" if close else ""))


MAX_NAMES = 2000  # spec names read for a did-you-mean; a huge folder is not walked whole


def _spec_names(name: str, candidates: list[Path]) -> list[str]:
    """The specs and folders a user could have meant, spelled as ``name`` is (``rocm/glm5-async``):
    those under each matrices folder, and those beside the file named."""
    found: list[str] = []
    for root in dict.fromkeys((Path("matrices"), BUNDLED_MATRICES)):
        paths = itertools.islice(root.rglob("*.yaml"), MAX_NAMES) if root.is_dir() else ()
        found += [p.relative_to(root).with_suffix("").as_posix() for p in paths]
    typed = Path(name).parent
    for folder in dict.fromkeys(c.parent for c in candidates):
        entries = itertools.islice(folder.iterdir(), MAX_NAMES) if folder.is_dir() else ()
        found += [(typed / p.name.removesuffix(".yaml")).as_posix() for p in entries]
    return found


def matrices_root(spec: Path) -> Path | None:
    """The nearest folder above ``spec`` that is a matrices tree's root: it holds a ``hardware/`` folder,
    or the ``ROOT_MARKER`` file that ``import -o DIR`` writes at DIR (once per read of a tree)."""
    absolute = spec if spec.is_absolute() else resolved(spec)
    return asked("matrices root", absolute, lambda: _matrices_root(absolute))


def _matrices_root(spec: Path) -> Path | None:
    for folder in spec.parents:
        if (folder / "hardware").is_dir() or (folder / ROOT_MARKER).is_file():
            return folder
    return None


def marked_root(folder: Path) -> bool:
    """Whether ``folder`` is a root by its marker file (an import's output), not by its ``hardware/``."""
    return (folder / ROOT_MARKER).is_file() and not (folder / "hardware").is_dir()


def cell_name(spec: Path) -> str:
    """``matrices/rocm/glm5-async.yaml`` -> ``rocm/glm5-async``."""
    root = matrices_root(spec)
    path = resolved(spec).with_suffix("")
    return path.relative_to(root).as_posix() if root else path.name


def hardware_profile(name: str, spec: Path, where: Location) -> Path:
    plain_name(name, "hardware profile", "hardware", where)
    folders = [root / "hardware" for root in (matrices_root(spec), BUNDLED_MATRICES) if root]
    found = asked("hardware profile", (name, *folders), lambda: _existing(name, folders))
    return found or _one_of(name, folders, "hardware", where)


def _existing(name: str, folders: list[Path]) -> Path | None:
    return next((f / f"{name}.yaml" for f in folders if (f / f"{name}.yaml").is_file()), None)


def plain_name(name: str, what: str, key: str, where: Location) -> None:
    """A profile or preset is named, never reached by a path (``../``, ``/etc/...``)."""
    if not NAME.fullmatch(name):
        raise SpecError.one(
            "unknown-name",
            f"{name!r} is not a {what} name: a name is letters, digits, '.', '_', '+' and '-'",
            key=key,
            at=[where],
            hint=f"a {what} is named by its file's name without .yaml",
        )


def _one_of(name: str, folders: list[Path], key: str, where: Location) -> Path:
    for folder in folders:
        if (folder / f"{name}.yaml").is_file():
            return folder / f"{name}.yaml"
    known = sorted({p.stem for folder in folders for p in folder.glob("*.yaml")})
    raise unknown_profile(name, known, key, where, folders[0])


def unknown_profile(
    name: str, known: list[str], key: str, where: Location, folder: Path = Path("matrices/hardware")
) -> SpecError:
    """The one error for a hardware profile name that names none (a spec's hardware:, --to, --hardware)."""
    return SpecError.one(
        "unknown-name",
        f"no hardware profile named {name!r} (known: {', '.join(known)})",
        key=key,
        at=[where],
        hint=did_you_mean(name, known) or f"add {folder / (name + '.yaml')}",
    )
