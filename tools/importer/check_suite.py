#!/usr/bin/env python3
"""Import every end-to-end test of a real miles checkout and count what imports and round-trips.

  python tools/importer/check_suite.py MILES_CHECKOUT [--only-with-root] [--jobs N] [--timeout S]
                                       [--only GLOB] [--expect FILE [--write-expect]]

The tests are every ``test_*.py`` under ``tests/e2e/`` and any other ``tests/**/test_*.py`` that
calls ``execute_train``. Each is imported with ``--miles-root MILES_CHECKOUT`` and with
``--without-checkout`` (the recorder's stand-ins alone; ``--only-with-root``: with the checkout
only) into a scratch folder; the import checks the round trip before
it writes anything, so exit 0 means render == what the script launches. The hardware is what the
test's CI suite names (import decides); a suite naming hardware run-matrix has no profile for
(``mi350``) gets the nearest one (``mi355x``), said in the line. Each line: the outcome, the test,
the first line of the reason. Then the figures: imported, refused because the test never launches
training (the import says so; or, for one it refused before it could tell, such as an SGLang server
test under pytest or a torchrun precision test, neither the script nor a checkout module it imports,
transitively, names ``execute_train``), refused by a rule (per rule id and key; L3 on
num-gpus-per-node, P3 on attention-backend and P4 are issue 15's false alarms on 4-GPU shares and
AMD), and refused for another reason
(grouped).

Both platforms: a test that registers for CUDA and ROCm imports as one spec with a cell per platform
(the AMD one recorded with the ROCm CI's environment). Per platform the figures count the tests that
register for it (enabled, disabled), those whose cells of that platform were written, and why the
others' were not (the import's note). ``--expect FILE`` compares each test's outcome per platform with
the JSON FILE and exits 1 on a regression (a platform's cells a test had and lost, a test that
imported and no longer does); ``--write-expect`` writes FILE from this run instead.
"""

from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures
import fnmatch
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CHECKOUT_LINE = "run-matrix: importing with the miles checkout "  # which checkout: said first, no reason
NO_PROFILE: dict[str, str] = {}  # suite hardware without a profile -> the profile used instead
# issue 15's false alarms: miles' --num-gpus-per-node default on 4-GPU shares, flash attention and
# SGLang's custom all-reduce on AMD (rule, the key it names)
ISSUE_15 = {("L3", "args.*.num-gpus-per-node"), ("P3", "args.misc.attention-backend")}
ISSUE_15 |= {("P4", "args.*.sglang-disable-custom-all-reduce")}
NEVER_LAUNCHES = "never calls execute_train"


PLATFORMS = ("cuda", "rocm")
SIDE_NOT_IMPORTED = re.compile(r"note: the (NVIDIA \(CUDA\)|AMD \(ROCm\)) side is not imported: (.*)$")
SIDE_NAMES = {"NVIDIA (CUDA)": "cuda", "AMD (ROCm)": "rocm"}


@dataclass(frozen=True)
class Outcome:
    test: str
    mode: str
    code: int
    kind: str  # imported | no-launch | rule | refused | environment
    reason: str
    rules: tuple[str, ...] = ()
    registered: dict[str, bool] = field(default_factory=dict)  # platform -> enabled (False: disabled=)
    written: tuple[str, ...] = ()  # the platforms the spec has cells of
    sides: dict[str, str] = field(default_factory=dict)  # platform -> why its cells were not written


def tests_of(checkout: Path, only: str | None) -> list[Path]:
    found = sorted((checkout / "tests" / "e2e").rglob("test_*.py"))
    for path in sorted((checkout / "tests").rglob("test_*.py")):
        if path not in found and "execute_train" in path.read_text(encoding="utf-8", errors="replace"):
            found.append(path)
    return [p for p in found if only is None or fnmatch.fnmatch(str(p.relative_to(checkout)), only)]


def reaches_execute_train(script: Path, checkout: Path) -> bool:
    """Whether the script, or a module of the checkout it imports (transitively), names execute_train."""
    seen: set[Path] = set()
    todo = [script]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        text = path.read_text(encoding="utf-8", errors="replace")
        if "execute_train" in text:
            return True
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return True  # cannot tell: count it as launching
        todo += [m for name in _imported(tree) for m in _module_files(name, checkout, script.parent)]
    return False


def _imported(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return names


def _module_files(name: str, *roots: Path) -> list[Path]:
    parts = name.split(".")
    candidates = [root.joinpath(*parts).with_suffix(".py") for root in roots]
    candidates += [root.joinpath(*parts, "__init__.py") for root in roots]
    return [c for c in candidates if c.is_file()]


def hardware_of(path: Path) -> str | None:
    """The profile to pass: for a suite naming hardware without a profile, the nearest one; for a
    test whose suite names no hardware (the PR era's ``stage-c-glm5-8-gpu``), h200 or, for a ROCm or
    AMD test by its name, mi355x; else none (import takes the suite's)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    match = re.search(r"suite=\"[^\"]*-\d+-gpu-([a-z]+\d+[a-z0-9]*)\"", text)
    if match is None:
        return "mi355x" if "rocm" in path.name or "amd" in path.name else "h200"
    return NO_PROFILE.get(match.group(1))


def registered(path: Path) -> dict[str, bool]:
    """The platforms a test's module-level ``register_<platform>_ci`` calls name: enabled or disabled."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return {}
    found: dict[str, bool] = {}
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            platform = call.func.id.removeprefix("register_").removesuffix("_ci")
            if platform in PLATFORMS:
                found[platform] = not any(k.arg == "disabled" for k in call.keywords)
    return found


def written_platforms(spec: Path) -> tuple[str, ...]:
    from runner import pipeline

    return tuple(sorted({str(cell.profile.platform) for cell in pipeline.cells(spec)}))


def import_one(path: Path, checkout: Path, root: bool, timeout: str) -> Outcome:
    hardware = hardware_of(path)
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / f"{path.stem}.yaml"
        command = ["run-matrix", "import", str(path), "-o", str(spec), "--timeout", timeout]
        command += (["--hardware", hardware] if hardware else []) + (
            ["--miles-root", str(checkout)] if root else ["--without-checkout"]
        )
        done = subprocess.run(command, capture_output=True, text=True)
        written = written_platforms(spec) if done.returncode == 0 else ()
    test = str(path.relative_to(checkout)) + (f" (as {hardware})" if hardware else "")
    mode = "--miles-root" if root else "shipped"
    sides = {
        SIDE_NAMES[m[1]]: m[2][:200]
        for line in done.stderr.splitlines()
        if (m := SIDE_NOT_IMPORTED.search(line))
    }
    platforms = {"registered": registered(path), "written": written, "sides": sides}
    said = [line for line in done.stderr.splitlines() if not line.startswith(CHECKOUT_LINE)]
    errors = [line for line in said if " error [" in line or line.startswith("run-matrix:")]
    reason = (errors or said[-1:] or [""])[0]
    reason = reason.split("cannot be imported: it ", 1)[-1][:200]
    rules = tuple(
        sorted(
            {f"{m[0]} {m[1]}" for line in errors for m in re.findall(r" error \[([A-Z]+\d+)\] (\S+):", line)}
        )
    )
    if done.returncode == 0:
        return Outcome(test, mode, 0, "imported", "ok", **platforms)  # type: ignore[arg-type]
    if NEVER_LAUNCHES in reason:
        return Outcome(test, mode, done.returncode, "no-launch", reason, **platforms)  # type: ignore[arg-type]
    if rules:
        return Outcome(test, mode, done.returncode, "rule", reason, rules, **platforms)  # type: ignore[arg-type]
    if not reaches_execute_train(path, checkout):
        reason = f"{NEVER_LAUNCHES} (nor does a module it imports), and it {reason}"
        return Outcome(test, mode, done.returncode, "no-launch", reason, **platforms)  # type: ignore[arg-type]
    kind = "environment" if done.returncode == 3 else "refused"
    return Outcome(test, mode, done.returncode, kind, reason, **platforms)  # type: ignore[arg-type]


def platform_figures(outcomes: list[Outcome], mode: str) -> list[str]:
    """Per platform: the tests that register for it, and those whose cells of it were written."""
    mine = [o for o in outcomes if o.mode == mode and o.kind != "no-launch"]
    lines = []
    for platform in PLATFORMS:
        having = [o for o in mine if platform in o.registered]
        enabled = [o for o in having if o.registered[platform]]
        wrote = [o for o in having if platform in o.written]
        wrote_enabled = [o for o in enabled if platform in o.written]
        lines.append(
            f"{mode} {platform}: {len(having)} launching tests register for it ({len(enabled)} enabled);"
            f" {len(wrote)} have its cells ({len(wrote_enabled)} of the enabled)"
        )
        reasons = collections.Counter(
            _gist(o.sides.get(platform) or o.reason) for o in having if platform not in o.written
        )
        lines += [f"    {count:3d}  no {platform} cells: {gist}" for gist, count in reasons.most_common()]
    return lines


def expectation(outcomes: list[Outcome]) -> dict[str, dict[str, list[str]]]:
    """Per mode and test: the platforms whose cells it imported."""
    found: dict[str, dict[str, list[str]]] = {}
    for o in outcomes:
        found.setdefault(o.mode, {})[o.test] = list(o.written)
    return found


def regressions(outcomes: list[Outcome], expected: dict[str, dict[str, list[str]]]) -> list[str]:
    lines = []
    for o in outcomes:
        wanted = set(expected.get(o.mode, {}).get(o.test, []))
        lost = sorted(wanted - set(o.written))
        if lost:
            lines.append(f"{o.mode} {o.test}: no longer imports its {', '.join(lost)} cells: {o.reason}")
    return lines


def figures(outcomes: list[Outcome], mode: str) -> list[str]:
    mine = [o for o in outcomes if o.mode == mode]
    kinds = collections.Counter(o.kind for o in mine)
    launching = len(mine) - kinds["no-launch"]
    lines = [
        f"{mode}: {len(mine)} tests; {kinds['no-launch']} never launch training (refused, nothing written);"
        f" of the {launching} that launch: {kinds['imported']} import and round-trip exactly",
    ]
    alarms = {f"{rule} {key}" for rule, key in ISSUE_15}
    only_15 = [o for o in mine if o.kind == "rule" and set(o.rules) <= alarms]
    if only_15:
        per_rule = collections.Counter(r for o in only_15 for r in o.rules)
        shown = ", ".join(f"{rule} {count}" for rule, count in sorted(per_rule.items()))
        lines.append(f"  {len(only_15)} refused only by issue 15's false alarms: {shown}")
    other_rules = [o for o in mine if o.kind == "rule" and o not in only_15]
    if other_rules:
        per_rule = collections.Counter(r for o in other_rules for r in o.rules if r not in alarms)
        shown = ", ".join(f"{rule} {count}" for rule, count in sorted(per_rule.items()))
        lines.append(f"  {len(other_rules)} refused by other rules (and maybe issue 15's too): {shown}")
    refused = [o for o in mine if o.kind in ("refused", "environment")]
    if refused:
        lines.append(f"  {len(refused)} refused for another reason:")
        groups = collections.Counter(_gist(o.reason) for o in refused)
        lines += [f"    {count:3d}  {gist}" for gist, count in groups.most_common()]
    return lines


def _gist(reason: str) -> str:
    """The reason less its paths and numbers, to group alike refusals."""
    return re.sub(r"(/[\w.\-]+)+|\d+", "…", reason)[:110]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--only-with-root", action="store_true", help="import with --miles-root only")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", default="60")
    parser.add_argument("--only", help="a glob over the tests' paths in the checkout")
    parser.add_argument("--expect", type=Path, help="a JSON file of what each test imported before")
    parser.add_argument("--write-expect", action="store_true", help="write --expect from this run")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    tests = tests_of(checkout, args.only)
    runs = [(path, root) for path in tests for root in ([True] if args.only_with_root else [True, False])]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(lambda run: import_one(run[0], checkout, run[1], args.timeout), runs))
    for o in outcomes:
        rules = f" [{','.join(o.rules)}]" if o.rules else ""
        print(f"{o.code} {o.mode:<12} {o.kind:<11} {o.test}{rules}: {o.reason}")
    print()
    for mode in dict.fromkeys(o.mode for o in outcomes):
        print("\n".join([*figures(outcomes, mode), *platform_figures(outcomes, mode)]))
    if args.expect and args.write_expect:
        args.expect.write_text(json.dumps(expectation(outcomes), indent=1, sort_keys=True) + "\n")
    elif args.expect:
        lost = regressions(outcomes, json.loads(args.expect.read_text()))
        print("\n".join(["", f"{len(lost)} regression(s) against {args.expect}", *lost]))
        return 1 if lost else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
