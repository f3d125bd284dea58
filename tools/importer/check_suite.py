#!/usr/bin/env python3
"""Import every end-to-end test of a real miles checkout and count what imports and round-trips.

  python tools/importer/check_suite.py MILES_CHECKOUT [--only-with-root] [--jobs N] [--timeout S]
                                       [--only GLOB]

The tests are every ``test_*.py`` under ``tests/e2e/`` and any other ``tests/**/test_*.py`` that
calls ``execute_train``. Each is imported with ``--miles-root MILES_CHECKOUT`` and without it
(``--only-with-root``: with it only) into a scratch folder; the import checks the round trip before
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
"""

from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures
import fnmatch
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

NO_PROFILE = {"mi350": "mi355x"}  # suite hardware without a profile -> the profile used instead
# issue 15's false alarms: miles' --num-gpus-per-node default on 4-GPU shares, flash attention and
# SGLang's custom all-reduce on AMD (rule, the key it names)
ISSUE_15 = {("L3", "args.*.num-gpus-per-node"), ("P3", "args.misc.attention-backend")}
ISSUE_15 |= {("P4", "args.*.sglang-disable-custom-all-reduce")}
NEVER_LAUNCHES = "never calls execute_train"


@dataclass(frozen=True)
class Outcome:
    test: str
    mode: str
    code: int
    kind: str  # imported | no-launch | rule | refused | environment
    reason: str
    rules: tuple[str, ...] = ()


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


def import_one(path: Path, checkout: Path, root: bool, timeout: str) -> Outcome:
    hardware = hardware_of(path)
    with tempfile.TemporaryDirectory() as folder:
        command = [
            "run-matrix",
            "import",
            str(path),
            "-o",
            f"{folder}/{path.stem}.yaml",
            "--timeout",
            timeout,
        ]
        command += (["--hardware", hardware] if hardware else []) + (
            ["--miles-root", str(checkout)] if root else []
        )
        done = subprocess.run(command, capture_output=True, text=True)
    test = str(path.relative_to(checkout)) + (f" (as {hardware})" if hardware else "")
    mode = "--miles-root" if root else "shipped"
    errors = [
        line for line in done.stderr.splitlines() if " error [" in line or line.startswith("run-matrix:")
    ]
    reason = (errors or [done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""])[0]
    reason = reason.split("cannot be imported: it ", 1)[-1][:200]
    rules = tuple(
        sorted(
            {f"{m[0]} {m[1]}" for line in errors for m in re.findall(r" error \[([A-Z]+\d+)\] (\S+):", line)}
        )
    )
    if done.returncode == 0:
        return Outcome(test, mode, 0, "imported", "ok")
    if NEVER_LAUNCHES in reason:
        return Outcome(test, mode, done.returncode, "no-launch", reason)
    if rules:
        return Outcome(test, mode, done.returncode, "rule", reason, rules)
    if not reaches_execute_train(path, checkout):
        reason = f"{NEVER_LAUNCHES} (nor does a module it imports), and it {reason}"
        return Outcome(test, mode, done.returncode, "no-launch", reason)
    kind = "environment" if done.returncode == 3 else "refused"
    return Outcome(test, mode, done.returncode, kind, reason)


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
        print("\n".join(figures(outcomes, mode)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
