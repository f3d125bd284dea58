"""platforms: which platforms a test is imported for, and the environment each is recorded in.

miles main runs one test file on NVIDIA and on AMD: ``register_cuda_ci`` and ``register_rocm_ci`` in
the same file, and miles' ROCm CI sets ``MILES_HARDWARE_PLATFORM=rocm`` (its workflow's ``env:`` and
its image's ``ENV``), which some tests read to pick an AMD launcher (``scripts/amd/run_*.py``). So
each platform the test registers is a **side**: recorded once with what that platform's CI sets
(:mod:`runner.knowledge.ci_platforms`), on the hardware its suite runs on. Two sides become one spec
with a ``platform`` axis: the shared part once, the AMD side a component overlay holding what
differs, each difference with a ``why:`` naming its cause (:func:`reasons`).

``--hardware NAME`` (or ``--base``) imports one side: the platform of that hardware.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runner.cells import hardware
from runner.errors import Location
from runner.importer.capture import BUILD_QUESTIONS
from runner.importer.notes import Note
from runner.importer.registrations import BACKENDS, SUITE_HARDWARE, profile_of
from runner.importer.traced import Registration, Run
from runner.knowledge.checkout import CheckoutError, Tree
from runner.knowledge.ci_images import Setting
from runner.knowledge.ci_platforms import CIKnowledge
from runner.spec import locate

AXIS = "platform"
ORDER = ("cuda", "rocm")  # the first is the spec's default cell, the other an overlay
NAMES = {"cuda": "NVIDIA (CUDA)", "rocm": "AMD (ROCm)"}
REGISTER = {platform: name for name, platform in BACKENDS.items()}  # cuda -> register_cuda_ci


@dataclass(frozen=True)
class Side:
    platform: str  # cuda | rocm
    hardware: str | None  # the profile its cells run on (None: as import decides without a side)
    registration: Registration | None  # the test's register_<platform>_ci, if it has one
    env: Mapping[str, Setting] = field(default_factory=dict)  # what the platform's CI sets for the test

    @property
    def switches(self) -> dict[str, str]:
        return {name: str(setting.value) for name, setting in self.env.items()}


def sides(
    registrations: Sequence[Registration],
    ci: CIKnowledge,
    spec: Path,
    chosen: str | None,
    secrets: frozenset[str],
) -> tuple[list[Side], list[Note]]:
    """The sides to import: the platform of ``chosen`` hardware alone, else one per platform the test
    registers for (CUDA first), each on the hardware its suite runs on; none when it registers for
    neither (import then decides the hardware as before)."""
    registered = _registered(registrations)
    if chosen is not None:
        # a test no CI of the platform runs is recorded as it runs by hand, but on AMD hardware: there
        # the ROCm image's own environment (MILES_HARDWARE_PLATFORM=rocm) is what any run is in
        platform = _platform_of(chosen, spec)
        ran_by_ci = platform in registered or platform == "rocm"
        env = ci.environment(platform, secrets) if platform in ORDER and ran_by_ci else {}
        return [Side(platform, chosen, registered.get(platform), env)], []
    found: list[Side] = []
    notes: list[Note] = []
    for platform in ORDER:
        registration = registered.get(platform)
        if registration is None:
            continue
        named = suite_hardware(registration, ci, spec)
        if named is None and len(registered) > 1:
            notes.append(_no_hardware(registration, ci))
            continue
        found.append(Side(platform, named, registration, ci.environment(platform, secrets)))
    return found, notes


def _registered(registrations: Sequence[Registration]) -> dict[str, Registration]:
    found: dict[str, Registration] = {}
    for registration in registrations:
        platform = BACKENDS.get(registration.name)
        if registration.kind == "ci" and platform in ORDER:
            found.setdefault(str(platform), registration)
    return found


def _platform_of(name: str, spec: Path) -> str:
    return str(hardware.load(locate.hardware_profile(name, spec, Location(spec))).platform)


def suite_hardware(registration: Registration, ci: CIKnowledge, spec: Path) -> str | None:
    """The profile a registration's suite runs on: the GPU model miles' CI gives the suite (runner
    labels, else the suite's name), as a profile run-matrix has (``mi350`` -> ``mi350x``)."""
    suite = str(registration.args.get("suite") or "")
    known = ci.suite(suite)
    match = SUITE_HARDWARE.search(suite)
    model = known.hardware if known is not None and known.hardware else (match.group(1) if match else None)
    return profile_of(model, spec) if model is not None else None


def _no_hardware(registration: Registration, ci: CIKnowledge) -> Note:
    suite = registration.args.get("suite")
    known = ci.suite(str(suite))
    where = f" ({known.source}: {known.note or 'runner labels ' + ', '.join(known.runs_on)})" if known else ""
    return Note(
        f"the {NAMES[BACKENDS[registration.name]]} side is not imported: its suite {suite!r} runs on hardware"
        f" run-matrix has no profile for{where}; add one (docs/hardware.md, Add new hardware)"
        " or pass --hardware NAME",
        registration.at,
    )


def reasons(side: Side, run: Run, other: Run | None, keys: Sequence[str], ci: CIKnowledge) -> dict[str, str]:
    """The ``why:`` of an AMD component: its hardware and ci keys from the registration, every other
    key it sets from what the platform's CI environment changed in the test (the variable the test
    read, and the launcher it selected), else from the environment as a whole."""
    why: dict[str, str] = {}
    registration = side.registration
    if registration is not None:
        suite = str(registration.args.get("suite"))
        known = ci.suite(suite)
        runs = ""
        if known is not None:
            runs = (
                f" on runners labelled [{', '.join(known.runs_on)}]" if known.runs_on else f" ({known.note})"
            )
            runs += f" ({known.source})"
        where = f"{registration.at.file.name}:{registration.at.line}"
        ran = f"miles' {NAMES[side.platform]} CI runs the test in suite {suite}{runs}"
        ran += f" ({registration.name} at {where})"
        why |= {key: ran for key in keys if key == "hardware" or key.startswith("ci.") or key == "ci"}
    cause = _cause(side, run, other)
    why |= {key: cause for key in keys if key not in why}
    return why


def _cause(side: Side, run: Run, other: Run | None) -> str:
    read = [(name, at) for name, at in run.env_reads.items() if name in side.env]
    asked = [(name, at) for name, at in run.env_reads.items() if name in BUILD_QUESTIONS]
    if not read and asked:
        name, at = asked[0]
        where = f"{at.file.name}:{at.line}"
        return f"the test asks {name} (at {where}), answered as an {NAMES[side.platform]} build of torch does"
    if not read:
        return f"what the test launches under miles' {NAMES[side.platform]} CI environment"
    name, at = read[0]
    setting = side.env[name]
    module = selected_module(at, name, str(setting.value), Path(run.root))
    chose = f" selects {module}" if module else " changes what the test launches"
    return f"{name}={setting.value}{chose} (read at {at.file.name}:{at.line}; set by {setting.source})"


MAX_SOURCE_BYTES = 1 << 20


def selected_module(at: Location, name: str, value: str, root: Path) -> str | None:
    """The checkout file a test imports in the branch ``if os.getenv(NAME) == VALUE:`` at ``at`` takes
    (``scripts/amd/run_deepseek_v4.py``), read by ``ast`` through the door (a line of the trace outside
    the checkout is never read); None for any other shape."""
    try:
        tree = Tree.at(root)
        relative = at.file.resolve().relative_to(tree.root).as_posix()
        source = ast.parse(tree.read_bytes(relative, MAX_SOURCE_BYTES))
    except (ValueError, CheckoutError, SyntaxError, RecursionError, MemoryError):
        return None
    branch = next(
        (
            _taken(node, value)
            for node in ast.walk(source)
            if isinstance(node, ast.If) and node.lineno == at.line
        ),
        None,
    )
    modules = [
        n.module
        for n in ast.walk(ast.Module(body=branch or [], type_ignores=[]))
        if isinstance(n, ast.ImportFrom) and n.module
    ]
    files = [Path(*m.split(".")).with_suffix(".py") for m in modules]
    found = [str(f) for f in files if tree.is_file(f.as_posix())]
    return found[0] if len(found) == 1 else None


def _taken(node: ast.If, value: str) -> list[ast.stmt] | None:
    test = node.test
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant)
    ):
        return None
    equal = test.comparators[0].value == value
    if isinstance(test.ops[0], ast.Eq):
        return node.body if equal else node.orelse
    if isinstance(test.ops[0], ast.NotEq):
        return node.orelse if equal else node.body
    return None
