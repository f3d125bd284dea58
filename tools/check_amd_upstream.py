"""Validate every AMD test, AMD launcher and FSDP test of a real miles checkout: no false alarm on what
upstream runs.

    python tools/check_amd_upstream.py --miles-root /work/miles-main [--hardware mi350x mi355x] [--show-specs]

Each ``tests/e2e/**/test_amd_*.py`` and ``scripts/amd/run_*.py`` runs once in run-matrix's import
sandbox (``runner.importer.capture``: nothing it would do is done; its ``execute_train`` call is
recorded). A launcher is a typer CLI, so a small driver builds its ``ScriptArgs`` with the
defaults and calls its training function, as ``python scripts/amd/run_X.py --hardware MI350X``
would. The recorded launch becomes a spec (the flags as launched, a repeated flag's last value
as argparse keeps it; the GPUs ``ray start`` gets; the test's own env vars; the checkout's miles
version) and is validated on the hardware its CI suite names (a launcher: on MI350X and MI355X). The
FSDP tests (``tests/e2e/fsdp/**``, ``tests/e2e/short/*fsdp*``) run on 2 to 8 GPUs without
``--num-gpus-per-node``, each on every platform it registers for. Exit 0 when no enabled test and no
launcher has an error; disabled tests are reported, and each error they have must be one a
differential test pins (``KNOWN_FOR_DISABLED``).
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner import check, pipeline  # noqa: E402
from runner.errors import Problem, RunMatrixError  # noqa: E402
from runner.importer import capture, groups, traced  # noqa: E402
from runner.importer.launch import launched  # noqa: E402
from runner.knowledge import presets  # noqa: E402
from runner.spec import emit  # noqa: E402

SECRETS = ("WANDB_API_KEY",)
# the function each launcher trains with (its prepare() downloads and converts: not a launch)
LAUNCHERS = {
    "run_qwen3_4b.py": "execute",
    "run_qwen3_30b_a3b.py": "execute",
    "run_glm5_2_744b_a40b.py": "_execute_train",
    "run_inkling.py": "_train",
    "run_deepseek_v4.py": "_train",
}
DRIVER = """\
import runpy, sys
sys.path.insert(0, {root!r})
found = runpy.run_path({launcher!r}, run_name="launcher")
fields = found["ScriptArgs"].__dataclass_fields__
arguments = found["ScriptArgs"](**{{k: v for k, v in {kwargs!r}.items() if k in fields}})
found[{function!r}](arguments)
"""
# Rule ids a disabled upstream test may still hit, each pinned by a differential test that shows
# the real SGLang/Megatron refusing that exact configuration (none so far).
KNOWN_FOR_DISABLED: dict[str, set[str]] = {}


@dataclass(frozen=True)
class Target:
    script: Path
    hardware: str
    disabled: str | None  # upstream's reason, when its CI registration disables it
    kwargs: dict[str, object]
    only: str | None = None  # the one rule this check is about for the target (FSDP tests: L3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--miles-root", type=Path, required=True)
    parser.add_argument(
        "--hardware", nargs="+", default=["mi350x", "mi355x"], help="profiles the AMD launchers run on"
    )
    parser.add_argument("--show-specs", action="store_true", help="print each spec built")
    args = parser.parse_args()
    root = args.miles_root.resolve()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="run-matrix-amd-") as scratch:
        chosen = targets(root, args.hardware)
        for target in chosen:
            failed += report(target, root, Path(scratch), args.show_specs)
    print(f"{len(chosen)} script x hardware pairs of miles {miles_commit(root)} checked: ", end="")
    print(f"{failed} unexpected error(s)" if failed else "no unexpected error")
    return 1 if failed else 0


def targets(root: Path, hardware: list[str]) -> list[Target]:
    """The AMD tests on their suite's hardware; the launchers on each of ``hardware``; the FSDP tests
    on the hardware of each of their CI registrations (CUDA and ROCm)."""
    found = []
    for test in sorted(root.glob("tests/e2e/**/test_amd_*.py")):
        found += [
            Target(test, name, disabled, {}) for kind, name, disabled in registrations(test) if kind == "rocm"
        ]
    for launcher in sorted((root / "scripts" / "amd").glob("run_*.py")):
        if launcher.name in LAUNCHERS:
            found += [Target(launcher, name, None, {"hardware": name.upper()}) for name in hardware]
    for test in sorted(
        {*root.glob("tests/e2e/fsdp/**/test_*.py"), *root.glob("tests/e2e/short/test_*fsdp*.py")}
    ):
        found += [Target(test, name, disabled, {}, "L3") for _, name, disabled in registrations(test)]
    return found


def registrations(test: Path) -> list[tuple[str, str, str | None]]:
    """(cuda|rocm, hardware, disabled reason) of each register_{cuda,rocm}_ci call, read statically."""
    found = []
    for node in ast.walk(ast.parse(test.read_text(encoding="utf-8"))):
        name = getattr(node.func, "id", "") if isinstance(node, ast.Call) else ""
        if name in ("register_cuda_ci", "register_rocm_ci"):
            assert isinstance(node, ast.Call)
            words = {k.arg: k.value for k in node.keywords}
            suite, disabled = words.get("suite"), words.get("disabled")
            kind = name.split("_")[1]
            text = suite.value if isinstance(suite, ast.Constant) else ""
            found.append(
                (
                    kind,
                    suite_hardware(text, kind),
                    disabled.value if isinstance(disabled, ast.Constant) else None,
                )
            )
    return found


def suite_hardware(suite: str, kind: str) -> str:
    """``stage-c-4-gpu-mi350`` -> ``mi350x``: the runner class a suite names (CUDA default: h200)."""
    for token, name in (("mi355", "mi355x"), ("mi350", "mi350x"), ("mi325", "mi325x"), ("mi300", "mi300x")):
        if token in suite:
            return name
    for name in ("b200", "gb200", "h100", "h200"):
        if name in suite:
            return name
    return "mi350x" if kind == "rocm" else "h200"


def report(target: Target, root: Path, scratch: Path, show: bool) -> int:
    name = target.script.relative_to(root)
    try:
        run = record(target, root, scratch)
    except RunMatrixError as exc:
        print(f"{name}: cannot record: {exc}")
        return 1
    failed = 0
    for index, call in enumerate(run.calls):
        spec = scratch / f"{target.script.stem}-{index}.yaml"
        spec.write_text(spec_text(call, run.root, target.hardware, root), encoding="utf-8")
        if show:
            print(spec.read_text(encoding="utf-8"))
        try:
            problems = [p for cell in pipeline.cells(spec) for p in check.run(cell)]
        except RunMatrixError as exc:
            problems = list(getattr(exc, "problems", [])) or [Problem("spec", str(exc), "", ())]
        errors = [p for p in problems if p.severity == "error"]
        state = f"disabled upstream ({target.disabled})" if target.disabled else "enabled"
        print(
            f"{name} on {target.hardware} [{state}]:"
            f" {len(errors)} error(s), {len(problems) - len(errors)} warning(s)"
        )
        for problem in problems:
            print(f"  {problem.severity} [{problem.rule}] {problem.key}: {problem.message}")
        allowed = KNOWN_FOR_DISABLED.get(target.script.name, set()) if target.disabled else set()
        counted = [p for p in errors if p.rule not in allowed and target.only in (None, p.rule)]
        if len(counted) < len(errors):
            print(
                f"  ({len(errors) - len(counted)} error(s) outside this check,"
                f" which is about {target.only} here)"
            )
        failed += len(counted)
    return failed


def record(target: Target, root: Path, scratch: Path) -> traced.Run:
    if target.script.name.startswith("test_"):
        return capture.record(target.script, {}, SECRETS, miles_root=root)
    driver_folder = scratch / f"driver-{target.script.stem}"
    driver_folder.mkdir(exist_ok=True)
    driver = driver_folder / "driver.py"
    driver.write_text(
        DRIVER.format(
            root=str(root),
            launcher=str(target.script),
            kwargs=target.kwargs,
            function=LAUNCHERS[target.script.name],
        ),
        encoding="utf-8",
    )
    return capture.record(driver, {}, SECRETS, miles_root=root)


def spec_text(call: traced.Call, recorded_root: str, hardware: str, root: Path) -> str:
    launch = launched(call.commands, call.args["train_args"], recorded_root, SECRETS, call.at)
    flags: dict[str, object] = {}
    for flag, values in groups.flags(launch.train_args):
        flags.pop(flag, None)  # argparse keeps the last value of a repeated flag
        flags[flag] = emit.flag_value(values)
    spec: dict[str, object] = {
        "description": f"recorded from {call.at.file}",
        "miles_version": miles_commit(root),
        "hardware": hardware,
        "model": {"type": call.args["megatron_model_type"]} if call.args.get("megatron_model_type") else {},
        "cluster": {"nodes": 1, "gpus_per_node": launch.num_gpus_per_node},
        "launch": {"script": launch.train_script},
        "args": {"misc": flags},
        "env": {k: emit.Text(v) for k, v in (call.args.get("extra_env_vars") or {}).items()},
    }
    return emit.dump({k: v for k, v in spec.items() if v != {}})


def miles_commit(root: Path) -> str:
    commit = presets.commit_of(root)
    if commit is None:
        raise SystemExit(f"{root}: cannot read the commit of its HEAD")
    return commit[:8]


if __name__ == "__main__":
    raise SystemExit(main())
