"""Run a flag catalog over every flag the upstream tests and launchers of a miles checkout pass.

    python tools/flags/check_upstream.py MILES_CHECKOUT [--catalog miles/flags/<date>-<commit>.json]
        [--write-fixture FILE]

Statically (nothing of the checkout runs): every string literal of the Python files under tests/
and scripts/ that launch training (they mention execute_train or a launcher of miles/launchers.yaml), and
every MODEL_ARGS of scripts/models/, is split into tokens; a `--flag` and the literal tokens after
it are one use. Strings that are another program's command line (hf, ray, torchrun, the
conversion tools, pytest, ...) are left out. Each use is judged as the F1/F3/F4 rules judge a
spec's flag. Prints the figures and every flag the catalog rejects; exit 1 if any.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shlex
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runner.knowledge import launchers
from runner.knowledge.flags import load, shipped
from runner.knowledge.flags.values import judge
from runner.launch.checkout import model_args

HOLE = "\x00"  # where an f-string has a {placeholder}
FLAG = re.compile(r"^--[a-z0-9][a-z0-9-]*$")
LAUNCHES = ("execute_train", *launchers.shipped().scripts, "MODEL_ARGS", "model_args")
OTHER_PROGRAMS = re.compile(
    r"^\s*'?(hf |huggingface-cli|ray |torchrun|python3?'? |pip |uv |cd |bash |git |pytest|mkdir|cp |rm |"
    r"sglang|PYTHONPATH|CUDA_|.*tools/convert|.*convert_hf_to|.*/tools/|nvidia-smi|ps |pkill|kill)"
)
NOT_TRAIN_FLAGS = {"--nproc-per-node", "--local-dir", "--repo-type", "--address", "--runtime-env-json"}
# flags the scan finds that no training launch passes, each with the program that takes it
EXPLAINED = {
    "block-size": "tools/convert_hf_to_fp8.py (a prepare step)",
    "save-dir": "tools/convert_hf_to_fp8.py (a prepare step)",
    "strategy": "tools/convert_hf_to_fp8.py (a prepare step)",
    "allow-skipped-pattern": "the dumper comparison tool test_dumper.py runs",
    "diff-threshold": "the dumper comparison tool test_dumper.py runs",
    "force": "`ray stop --force` in a launcher's docstring",
    "head": "`ray start --head` in a launcher's docstring",
    "max-workers": "a launcher script's own command line (scripts/run_*.py)",
    "hardware": "a launcher script's own command line (scripts/run_deepseek_v4.py's error message)",
    "num-nodes": "a launcher script's own command line (scripts/run_*.py)",
    "use-ref": "a launcher script's own command line (scripts/run_mcore_fsdp.py)",
    "no-use-ref": "a launcher script's own command line (scripts/run_mcore_fsdp.py)",
    "no-colocate": "a launcher script's own command line (scripts/run_mcore_fsdp.py)",
}
CUSTOM_REASON = "added by the test's custom function (its add_arguments)"
CUSTOM = ("--custom-generate-function-path", "--rollout-function-path")  # their add_arguments add flags


def strings(path: Path) -> list[str]:
    """The string literals of a file, docstrings left out (usage prose, not launches); an argv
    list of literals (``["python", "-m", "sglang.launch_server", "--tp", ...]``) is one string."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return []
    skip: set[int] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Constant, ast.JoinedStr)):
            skip.update(id(n) for n in ast.walk(node))
        elif isinstance(node, ast.List) and node.elts and _another_program(node.elts[0]):
            skip.update(id(n) for n in ast.walk(node))  # another program's argv
        elif isinstance(node, ast.List) and all(isinstance(e, ast.Constant) for e in node.elts) and node.elts:
            skip.update(id(e) for e in node.elts)
            found.append(" ".join(shlex.quote(str(e.value)) for e in node.elts))  # type: ignore[attr-defined]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
            found.append("".join(v.value if isinstance(v, ast.Constant) else HOLE for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
    return found


def _another_program(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and bool(OTHER_PROGRAMS.match(node.value + " "))
    )


def uses(text: str) -> list[tuple[str, list[str] | None]]:
    """(--flag, the literal tokens after it) for each flag of one string; None where the string
    ends at the flag (its value, if any, is another expression)."""
    if OTHER_PROGRAMS.match(text):
        return []
    try:
        tokens = shlex.split(text, comments=True)
    except ValueError:
        tokens = text.split()
    out: list[tuple[str, list[str] | None]] = []
    for i, token in enumerate(tokens):
        if FLAG.match(token) and token not in NOT_TRAIN_FLAGS:
            values: list[str] = []
            for following in tokens[i + 1 :]:
                if following.startswith("--"):
                    break
                values.append(following)
            ends = i + 1 + len(values) == len(tokens) and not text.rstrip().endswith(token)
            out.append((token[2:], None if i == len(tokens) - 1 or (ends and not values) else values))
    return out


def launch_files(root: Path) -> list[Path]:
    files = []
    for folder in ("tests/e2e", "scripts"):  # tests/fast are unit tests of helpers, with made-up flags
        for path in sorted(p for p in (root / folder).rglob("*.py") if p.is_file()):
            text = path.read_text(encoding="utf-8", errors="replace")
            if any(word in text for word in LAUNCHES) or path.parent.name == "models":
                files.append(path)
    return files


def shell_model_args(root: Path) -> list[str]:
    """MODEL_ARGS of each scripts/models/*.sh, read as render reads them (runner.launch.checkout)."""
    found = []
    for path in sorted((root / "scripts/models").glob("*.sh")):
        read = model_args(root, path.stem)
        if read is not None and read.tokens is not None:
            found.append(" ".join(shlex.quote(t) for t in read.tokens))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("miles", type=Path)
    parser.add_argument("--catalog", type=Path, help="default: the shipped catalog of the checkout's commit")
    parser.add_argument("--write-fixture", type=Path, help="write every accepted (flag, value) use as JSON")
    args = parser.parse_args()
    catalog = load(args.catalog or _catalog_of(args.miles))
    files = launch_files(args.miles)
    texts = [(p, s) for p in files for s in strings(p)]
    texts += [(Path("scripts/models/*.sh"), s) for s in shell_model_args(args.miles)]
    text_of = {p: p.read_text(encoding="utf-8", errors="replace") for p in files}
    fsdp = {p for p in files if "train-backend fsdp" in text_of[p]}
    custom = {p for p in files if any(c in text_of[p] for c in CUSTOM)}
    seen: Counter[str] = Counter()
    unknown: dict[str, list[str]] = {}
    explained: dict[str, list[str]] = {}
    wrong: dict[tuple[str, str], str] = {}
    accepted: set[tuple[str, tuple[str, ...]]] = set()
    for path, text in texts:
        for name, values in uses(text):
            seen[name] += 1
            # a file that launches both backends: either parser's flag is accepted
            flag = catalog.lookup(name) or (catalog.lookup(name, "fsdp") if path in fsdp else None)
            where = str(path.relative_to(args.miles)) if path.is_absolute() else str(path)
            if flag is None:
                reason = EXPLAINED.get(name) or (
                    "added by the test's custom function" if path in custom else ""
                )
                if not reason and name.startswith("sglang-") and not catalog.lookup(name, "fsdp"):
                    reason = (
                        f"not in the SGLang release the catalog read ({catalog.sources.get('sglang', '?')})"
                    )
                (explained if reason else unknown).setdefault(name, []).append(reason or where)
                continue
            if values is None or any(HOLE in v or "$" in v or "{" in v for v in values):
                continue  # the value is another expression
            if flag.kind == "value" and flag.nargs in (None, "?") and values:
                values = values[:1]  # what follows is the text after the launch (a comment, a pipe)
            value: object = True if not values else values[0] if len(values) == 1 else values
            verdict = judge(flag, value) if flag.kind != "switch" or not values else None
            if verdict:
                wrong[(name, " ".join(values))] = f"{verdict[1]} ({where})"
            else:
                accepted.add((name, tuple(values)))
    print(f"catalog {catalog.origin}; checkout {args.miles}")
    uses_count, accepted_count = sum(seen.values()), len(seen) - len(unknown) - len(explained)
    print(f"{len(files)} launching files, {len(texts)} strings:", end=" ")
    print(f"{uses_count} flag uses, {len(seen)} distinct flags")
    print(f"accepted: {accepted_count} distinct flags; not train flags: {len(explained)};", end=" ")
    print(f"unknown: {len(unknown)}; values rejected: {len(wrong)}")
    for name, reasons in sorted(explained.items()):
        print(f"  not a train flag --{name}: {reasons[0]}")
    for name, places in sorted(unknown.items()):
        print(f"  unknown --{name}: {len(places)} uses, e.g. {places[0]}")
    for _, message in sorted(wrong.items()):
        print(f"  value: {message}")
    if args.write_fixture:
        rows = sorted([name, list(values)] for name, values in accepted)
        lines = ",\n".join(json.dumps(row) for row in rows)
        args.write_fixture.write_text(f'{{"catalog": "{catalog.origin}", "uses": [\n{lines}\n]}}\n')
    return 1 if unknown or wrong else 0


def _catalog_of(root: Path) -> Path:
    import subprocess

    commit = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%h"], capture_output=True, text=True
    ).stdout
    for path in shipped():
        if path.stem.endswith(commit.strip()[:8]):
            return path
    raise SystemExit(f"no shipped catalog for {root} at {commit.strip()}; pass --catalog")


if __name__ == "__main__":
    sys.exit(main())
