"""hardware: the profiles of matrices/hardware/, which of a profile's software stacks a cell targets,
and the share of a node the runner gives run-matrix.

A profile names the stacks it knows (``stacks:``), each by the miles version whose container pins
it. A cell targets its spec's ``miles_version`` (none: the newest shipped, as for flags and
presets); it gets the stack of that version, else the newest stack older than it, else — for a
version no shipped knowledge dates — the newest stack. Facts of ``supports:`` hold on every stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from runner import errors
from runner.errors import Location, Problem, SpecError
from runner.knowledge import versions
from runner.memos import Table, remember
from runner.spec import locate
from runner.spec.compose import Composed, compose, stamps
from runner.spec.model import build
from runner.spec.resolve import resolve
from schemas.hardware import HardwareProfile, HardwareProfileFile


def load(path: Path) -> HardwareProfileFile:
    """One profile file (its ``extends:`` followed), checked: named like its file, complete on every stack."""
    profile, composed = _modelled(path)
    if profile.name != path.stem:
        raise SpecError.one(
            "unknown-name",
            f"profile file {path.name} names itself {profile.name!r}",
            key="name",
            at=[Location(path)],
            hint=f"rename the file or set name: {path.stem}",
        )
    problems = [*_gaps(profile, composed), *_arch(profile, composed)]
    if problems:
        raise SpecError(problems)
    return profile


def _gaps(profile: HardwareProfileFile, composed: Composed) -> list[Problem]:
    """A missing fact where the key lacking it was written; a missing source where the fact was
    stated, or — the machine's own — in the profile file, never in the family it extends."""
    found = []
    for key, text, blamed in profile.gaps():
        where = composed.location(blamed) if blamed else _own_place(composed)
        found.append(Problem("missing-key", text, ".".join(key), (where,)))
    return found


def _own_place(composed: Composed) -> Location:
    """The profile file's own ``sources:``, else its ``name:``: where its machine's source belongs."""
    for key in (("sources",), ("name",)):
        steps = composed.provenance.get(key, ())
        written = [step.location for step in steps if step.location.file == composed.path]
        if written:
            return written[-1]
    return Location(composed.path)


def _arch(profile: HardwareProfileFile, composed: Composed) -> list[Problem]:
    """``arch`` and ``compute_capability`` must name the same GPU generation; headlined where the
    one written last stands (a profile's capability over its family's arch)."""
    mismatch = profile.arch_mismatch()
    if mismatch is None:
        return []
    fields, text, fix = mismatch
    places = [replace(composed.location((name,)), key=name) for name in fields]
    ordered = errors.newest_first(places, composed.files)
    return [Problem("arch", text, ordered[0].key, (replace(ordered[0], key=""), *ordered[1:]), hint=fix)]


_MODELLED: Table[Path, tuple[HardwareProfileFile, Composed, tuple[tuple[int, int], ...]]] = Table(
    "runner.cells.hardware._MODELLED",
    "stamped",
    "a profile file modelled, used only while every file of its chain has the modification time and"
    " size it had",
    256,
)
_TARGETS: Table[tuple[Path, str | None], tuple[HardwareProfileFile, HardwareProfile]] = Table(
    "runner.cells.hardware._TARGETS",
    "stamped",
    "a profile on a miles version's stack, used only while its file's modelled profile is the same one",
    1024,
)


def _modelled(path: Path) -> tuple[HardwareProfileFile, Composed]:
    kept = _MODELLED.get(path)
    if kept is not None and kept[2] == stamps(kept[1].files):
        return kept[0], kept[1]
    composed = compose(path)
    profile = build(HardwareProfileFile, resolve(composed, {}).data, composed)
    _MODELLED.put(path, (profile, composed, stamps(composed.files)))
    return profile, composed


def profiles() -> dict[str, HardwareProfileFile]:
    """Every profile by name; the current directory's matrices/hardware/ wins over run-matrix's."""
    found: dict[str, HardwareProfileFile] = {}
    for folder in (Path("matrices") / "hardware", locate.BUNDLED_MATRICES / "hardware"):
        for path in sorted(folder.glob("*.yaml")):
            found.setdefault(path.stem, load(path.resolve()))
    return dict(sorted(found.items()))


def named(name: str, key: str) -> HardwareProfileFile:
    """The profile ``name`` means (``key``: the option or spec key that named it)."""
    known = profiles()
    if name not in known:
        raise locate.unknown_profile(name, list(known), key, Location(Path("matrices/hardware")))
    return known[name]


def target(path: Path, miles_version: str | None) -> HardwareProfile:
    """The profile file at ``path`` on the stack of ``miles_version``: one object per pair while the
    file is unchanged, so a thousand cells share it (and its ``${profile.*}`` data)."""
    kept = _TARGETS.get((path, miles_version))
    if kept is not None and _modelled(path)[0] is kept[0]:
        return kept[1]
    profile = load(path)
    return _TARGETS.put((path, miles_version), (profile, on_stack(profile, miles_version)))[1]


def on_stack(profile: HardwareProfileFile, miles_version: str | None) -> HardwareProfile:
    """``profile`` as a cell targeting ``miles_version`` sees it."""
    return profile.on(stack_for(profile, miles_version))


def stack_for(profile: HardwareProfileFile, miles_version: str | None) -> str | None:
    if not profile.stacks:
        return None
    dates = _dates()
    target = miles_version or (dates[-1][1] if dates else "")
    for name, stack in profile.stacks.items():
        if _same(stack.miles_version, target):
            return name
    when = _date_of(target, dates)
    ordered = sorted(profile.stacks, key=lambda name: _date_of(profile.stacks[name].miles_version, dates))
    older = [name for name in ordered if when and _date_of(profile.stacks[name].miles_version, dates) <= when]
    return (older or ordered)[-1]


def stack_reason(profile: HardwareProfile, miles_version: str | None) -> str:
    """Why a cell of ``miles_version`` sees ``profile``'s facts of the stack it got (for ``explain``)."""
    stack, software = profile.stack, profile.software
    if stack is None or software is None:
        return f"{profile.name}'s facts hold on every stack (it names none)"
    chosen = f"{profile.name} on its {stack} stack (the container of miles {software.miles_version})"
    if miles_version is None:
        return f"{chosen}: the newest shipped miles version, as the spec names none"
    if _same(software.miles_version, miles_version):
        return f"{chosen}, as the spec's miles_version says"
    return f"{chosen}: the newest stack it knows not newer than the spec's miles_version {miles_version}"


def _same(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return bool(a and b) and (a.startswith(b) or b.startswith(a))


def _date_of(commit: str, dates: list[tuple[str, str]]) -> str:
    return next((date for date, known in dates if _same(known, commit)), "")


@remember("shipped", "the dates of the miles versions whose conventions run-matrix ships")
def _dates() -> list[tuple[str, str]]:
    """(date, commit) of every miles version run-matrix ships knowledge of, oldest first."""
    shipped = versions.shipped(locate.CONVENTIONS.glob("*.yaml"))
    return [(v.date, v.commit) for v in shipped]


@dataclass(frozen=True)
class Share:
    """The GPUs of one node this runner gives run-matrix.

    CI splits an 8-GPU host into runners of 4 with a visible-devices mask set before run-matrix
    starts (miles' ``stage-c-4-gpu-mi350``); the mask is the runner's share, and it wins over a
    rendered ``0,...,N-1``, which would hand the job the other runner's GPUs. Without a mask the
    share is the whole node of the profile.
    """

    gpus: int
    variable: str | None = None  # the variable that set the mask
    devices: tuple[str, ...] | None = None  # the mask's entries, in order

    def describe(self) -> str:
        return f"{self.variable}={','.join(self.devices)}" if self.variable and self.devices else "no mask"


def mask_variables(profile: HardwareProfile) -> tuple[str, ...]:
    """The variables a mask may be set by: the profile's own; on ROCm also CUDA_VISIBLE_DEVICES,
    which HIP honours too (miles' AMD launchers mirror one into the other)."""
    other = ("CUDA_VISIBLE_DEVICES",) if profile.visible_devices_env != "CUDA_VISIBLE_DEVICES" else ()
    return (profile.visible_devices_env, *other)


def share(profile: HardwareProfile, environ: Mapping[str, str]) -> Share:
    """The runner's share of a ``profile`` node, from the mask in ``environ`` (run-matrix's own)."""
    for name in mask_variables(profile):
        devices = tuple(part.strip() for part in environ.get(name, "").split(",") if part.strip())
        if devices:
            return Share(len(devices), name, devices)
    return Share(profile.gpus_per_node)
