"""The hostile corpus: inputs written carelessly or maliciously, every command, no traceback.

Each case writes a few files into a fresh folder, runs run-matrix in a child process under
resource limits, and asserts the exit code, that no traceback was printed, that the file at
fault is named, and that the case cost under 2 s of CPU and under 500 MB of memory (measured:
``wait4``'s rusage of the child).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.hostile.harness import run_cli

REPO = Path(__file__).resolve().parents[1]
ROCM = f"{REPO}/matrices/rocm/glm5-async.yaml"
NV = f"{REPO}/matrices/nv/glm5-colocate.yaml"
CPU_BUDGET_S = 2.0
MEMORY_BUDGET_MB = 500


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)
    code: int = 2
    names: str = "spec.yaml"  # text the output must contain: the file at fault, usually
    says: str = ""  # and this, when given
    special: str = ""  # a file the test makes itself: fifo, symlink loop, ...


def overlay(body: str, base: str = ROCM) -> dict[str, str]:
    return {"spec.yaml": f"extends: {base}\n{body}"}


def alias_bomb(depth: int, width: int) -> str:
    lines = ["a0: &a0 [x]"]
    for level in range(1, depth + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def diamond(count: int) -> dict[str, str]:
    files = {"f0.yaml": f"extends: {ROCM}\n"}
    for i in range(1, count):
        bases = [f"f{j}.yaml" for j in range(max(0, i - 2), i)]
        files[f"f{i}.yaml"] = f"extends: [{', '.join(bases)}]\n"
    files["spec.yaml"] = f"extends: f{count - 1}.yaml\n"
    return files


def many(lines: str, count: int = 20_000) -> str:
    return "".join(lines.format(i=i) for i in range(count))


CASES = [
    # load: YAML budgets and bytes
    Case("alias-bomb", ("validate", "spec.yaml"), {"spec.yaml": alias_bomb(8, 9)}, says="alias"),
    Case("alias-bomb-wide", ("validate", "spec.yaml"), {"spec.yaml": alias_bomb(4, 200)}, says="alias"),
    Case("alias-self", ("validate", "spec.yaml"), {"spec.yaml": "a: &a [*a]\n"}),
    Case("alias-self-map", ("validate", "spec.yaml"), {"spec.yaml": "a: &a {b: *a}\n"}),
    Case("nest-seq-2000", ("validate", "spec.yaml"), {"spec.yaml": "a: " + "[" * 2000 + "]" * 2000 + "\n"}),
    Case("nest-map-2000", ("validate", "spec.yaml"), {"spec.yaml": "a: " + "{b: " * 2000 + "1" + "}" * 2000}),
    Case("nul-char", ("validate", "spec.yaml"), {"spec.yaml": "hardware: mi355x\x00\n"}),
    Case("bel-char", ("render", "spec.yaml"), {"spec.yaml": "hardware: mi\x07355x\n"}),
    Case("big-file", ("validate", "spec.yaml"), {"spec.yaml": "# padding\n" * 600_000}, says="bytes"),
    Case("not-utf8", ("list", "spec.yaml"), {"spec.yaml": "hardware: \xff\n"}, special="latin1"),
    Case("python-tag", ("validate", "spec.yaml"), {"spec.yaml": "a: !!python/object/apply:os.system [id]\n"}),
    Case("unknown-tag", ("validate", "spec.yaml"), {"spec.yaml": "a: !include other.yaml\n"}),
    Case("top-level-list", ("validate", "spec.yaml"), {"spec.yaml": "- a\n- b\n"}),
    Case("non-string-key", ("validate", "spec.yaml"), {"spec.yaml": "1: a\n"}),
    Case("duplicate-key", ("validate", "spec.yaml"), {"spec.yaml": "a: 1\na: 2\n"}),
    Case("empty-file", ("validate", "spec.yaml"), {"spec.yaml": ""}),
    Case("bad-date", ("validate", "spec.yaml"), overlay("expires: 2026-02-30\n"), says="2026-02-30"),
    Case(
        "bad-date-skip",
        ("list", "spec.yaml"),
        overlay(
            "matrix:\n  adjust:\n    x:\n      match: {}\n      skip: {reason: r, expires: 2026-02-30}\n"
        ),
    ),
    Case("unclosed-flow", ("validate", "spec.yaml"), {"spec.yaml": "a: [1, 2\n"}),
    # compose: extends
    Case("extends-proc", ("validate", "spec.yaml"), {"spec.yaml": "extends: /proc/self/environ\n"}),
    Case("extends-dir", ("validate", "spec.yaml"), {"spec.yaml": "extends: .\n"}, says="not a file"),
    Case(
        "extends-dev-zero",
        ("validate", "spec.yaml"),
        {"spec.yaml": "extends: /dev/zero\n"},
        says="lies outside the spec's root",  # refused before it is opened (G14)
    ),
    Case("extends-fifo", ("validate", "spec.yaml"), {"spec.yaml": "extends: pipe.yaml\n"}, special="fifo"),
    Case(
        "extends-symlink-loop",
        ("validate", "spec.yaml"),
        {"spec.yaml": "extends: loop1.yaml\n"},
        special="loop",
    ),
    Case("extends-self", ("validate", "spec.yaml"), {"spec.yaml": "extends: spec.yaml\n"}, says="cycle"),
    Case(
        "extends-cycle",
        ("render", "spec.yaml"),
        {"spec.yaml": "extends: a.yaml\n", "a.yaml": "extends: b.yaml\n", "b.yaml": "extends: a.yaml\n"},
        says="cycle",
    ),
    Case("extends-missing", ("validate", "spec.yaml"), {"spec.yaml": "extends: nothere.yaml\n"}),
    Case("extends-number", ("validate", "spec.yaml"), {"spec.yaml": "extends: 3\n"}),
    Case(
        "extends-list-file",
        ("validate", "spec.yaml"),
        {"spec.yaml": "extends: list.yaml\n", "list.yaml": "- a\n"},
        names="spec.yaml:1",
    ),
    Case("extends-diamond-40", ("validate", "spec.yaml"), diamond(40), code=0, names=""),
    Case(
        "extends-same-file-500",
        ("validate", "spec.yaml"),
        {"spec.yaml": "extends: [" + ", ".join(["b.yaml"] * 500) + "]\n", "b.yaml": f"extends: {ROCM}\n"},
        says="listed twice",
    ),
    Case(
        "extends-list-of-40",
        ("validate", "spec.yaml"),
        {"spec.yaml": "extends: [" + ", ".join(f"b{i}.yaml" for i in range(40)) + "]\n"},
        says="40 files, more than 32",
    ),
    Case(
        "extends-chain-300",
        ("validate", "spec.yaml"),
        {
            "spec.yaml": "extends: c1.yaml\n",
            **{f"c{i}.yaml": f"extends: c{i + 1}.yaml\n" for i in range(1, 300)},
        },
        names="c",
        says="extends",
    ),
    Case(
        "overlay-extends-bad-matrix",
        ("validate", "spec.yaml"),
        overlay("matrix:\n  axes: {fp8_rollout: []}\n"),
        says="no values",
    ),
    # resolve: ${...}
    Case(
        "huge-power", ("validate", "spec.yaml"), overlay("vars: {x: '${4000000**4000000}'}\n"), says="vars.x"
    ),
    Case("power-tower", ("validate", "spec.yaml"), overlay("vars: {x: '${9**9**9}'}\n"), says="vars.x"),
    Case("ljust", ("validate", "spec.yaml"), overlay("vars: {x: \"${'a'.ljust(10**9)}\"}\n"), says="vars.x"),
    Case("str-mult", ("validate", "spec.yaml"), overlay("vars: {x: \"${'a' * 10**8}\"}\n"), says="vars.x"),
    Case("shift", ("validate", "spec.yaml"), overlay("vars: {x: '${1 << 10**9}'}\n"), says="vars.x"),
    Case("big-mult", ("validate", "spec.yaml"), overlay("vars: {x: '${10**60 * 10**60 * 10**60}'}\n")),
    Case(
        "huge-int-flag",
        ("render", "spec.yaml"),
        overlay("args:\n  ckpt:\n    save-interval: '${10**5000}'\n"),
        says="save-interval",
    ),
    Case(
        "dict-braces",
        ("validate", "spec.yaml"),
        overlay("vars: {x: \"${ {'a': 2}['a'] }\"}\n"),
        says="vars.x",
    ),
    Case("set-braces", ("validate", "spec.yaml"), overlay("vars: {x: 'a${ {1} }b'}\n"), says="vars.x"),
    Case(
        "unclosed-ref", ("validate", "spec.yaml"), overlay("vars: {x: 'a ${cluster.nodes'}\n"), says="vars.x"
    ),
    Case("dunder", ("validate", "spec.yaml"), overlay("vars: {x: '${cluster.__class__}'}\n"), says="vars.x"),
    Case(
        "ref-cycle",
        ("validate", "spec.yaml"),
        overlay("vars: {a: '${vars.b}', b: '${vars.a}'}\n"),
        says="cycle",
    ),
    Case(
        "ref-unknown", ("validate", "spec.yaml"), overlay("vars: {a: '${clusterr.nodes}'}\n"), says="cluster"
    ),
    Case("div-zero", ("validate", "spec.yaml"), overlay("vars: {a: '${1 // 0}'}\n"), says="vars.a"),
    Case("int-of-long-text", ("validate", "spec.yaml"), overlay("vars: {a: \"${int('9' * 90000)}\"}\n")),
    Case("lambda", ("validate", "spec.yaml"), overlay("vars: {a: '${(lambda: 1)()}'}\n"), says="vars.a"),
    Case("comprehension", ("validate", "spec.yaml"), overlay("vars: {a: '${[x for x in range(10**9)]}'}\n")),
    Case("range-len", ("validate", "spec.yaml"), overlay("vars: {a: '${len(str(10**4000))}'}\n")),
    # matrix and selection
    Case(
        "empty-axis",
        ("validate", "spec.yaml"),
        overlay("matrix:\n  axes: {fp8_rollout: []}\n"),
        says="no values",
    ),
    Case("empty-axis-list", ("list", "spec.yaml"), overlay("matrix:\n  axes: {fp8_rollout: []}\n")),
    Case(
        "empty-axis-run", ("run", "spec.yaml", "--dry-run"), overlay("matrix:\n  axes: {fp8_rollout: []}\n")
    ),
    Case(
        "duplicate-axis-values",
        ("validate", "spec.yaml"),
        overlay("matrix:\n  axes: {fp8_rollout: [false, true, true]}\n"),
        says="twice",
    ),
    Case(
        "huge-matrix",
        ("list", "spec.yaml"),
        overlay(
            "matrix:\n  axes:\n"
            + "".join(f"    x{i}: [{', '.join(map(str, range(50)))}]\n" for i in range(8))
        ),
        says="max_cells",
    ),
    Case("k-empty", ("validate", "spec.yaml", "-k", ""), overlay(""), names="-k"),
    Case("k-blank", ("list", "spec.yaml", "-k", "   "), overlay(""), names="-k"),
    Case("k-type-error", ("validate", "spec.yaml", "-k", "fp8_rollout + 'a'"), overlay(""), names="-k"),
    Case("k-modulo-zero", ("list", "spec.yaml", "-k", "fp8_rollout % 0"), overlay(""), names="-k"),
    Case("k-power", ("render", "spec.yaml", "-k", "9**9**9**9"), overlay(""), names="-k"),
    Case("k-unknown", ("list", "spec.yaml", "-k", "fp8_rolout"), overlay(""), names="-k", says="fp8_rollout"),
    Case("k-attribute", ("list", "spec.yaml", "-k", "rocm.__class__"), overlay(""), names="-k"),
    Case("k-syntax", ("list", "spec.yaml", "-k", "fp8_rollout and"), overlay(""), names="-k"),
    Case("k-no-match", ("list", "spec.yaml", "-k", "nvidia"), overlay(""), names="-k"),
    Case(
        "cell-bogus-value-validate",
        ("validate", "rocm/glm5-async[fp8_rollout=bogus]"),
        names="fp8_rollout=true",
    ),
    Case(
        "cell-bogus-value-port",
        ("port", "nv/glm5-colocate[fp8_rollout=bogus]", "--to", "mi355x", "-o", "out.yaml"),
        names="fp8_rollout=true",
    ),
    Case("cell-bogus-axis-list", ("list", "rocm/glm5-async[fp8=true]"), names="fp8_rollout"),
    Case("cell-bogus-render", ("render", "rocm/glm5-async[fp8_rollout=1]"), names="fp8_rollout=true"),
    Case("cell-bogus-explain", ("explain", "rocm/glm5-async[fp8_rollout=yes]"), names="fp8_rollout=true"),
    Case("cell-bogus-diff", ("diff", "rocm/glm5-async", "nv/glm5-colocate[x=1]"), names="fp8_rollout"),
    Case("cell-unclosed", ("list", "rocm/glm5-async[fp8_rollout=true"), names="rocm/glm5-async"),
    Case("no-such-spec", ("validate", "nothere.yaml"), names="nothere"),
    Case(
        "explain-unknown-key",
        ("explain", "spec.yaml", "args.sglang.sglang-dp-sise"),
        overlay(""),
        says="sglang-dp-size",
    ),
    # layout, paths, secrets
    Case(
        "layout-huge",
        ("explain", "spec.yaml", "--layout"),
        overlay("cluster: {nodes: 100000, gpus_per_node: 100000}\n"),
        says="cluster",
    ),
    Case(
        "list-huge-cluster",
        ("list", "spec.yaml"),
        overlay("cluster: {nodes: 100000, gpus_per_node: 100000}\n"),
    ),
    Case(
        "hardware-dotdot",
        ("validate", "spec.yaml"),
        overlay("hardware: ../rocm/glm5-async\n"),
        says="hardware",
    ),
    Case("hardware-abs", ("validate", "spec.yaml"), overlay("hardware: /etc/passwd\n"), says="hardware"),
    Case("model-dotdot", ("validate", "spec.yaml"), overlay("model: {type: ../launch}\n"), says="model.type"),
    Case(
        "wandb-key-literal",
        ("validate", "spec.yaml"),
        overlay("args:\n  misc:\n    wandb-key: literalkey123\n"),
        says="G3",
    ),
    Case(
        "hf-token-short", ("render", "spec.yaml"), overlay("args:\n  misc:\n    hf-token: abc\n"), says="G3"
    ),
    Case(
        "env-secret", ("validate", "spec.yaml"), overlay("env:\n  WANDB_API_KEY: literalkey123\n"), says="G3"
    ),
    Case(
        "port-impossible-out",
        ("port", "nv/glm5-colocate", "--to", "mi355x", "-o", "/proc/nope/x.yaml"),
        code=3,
        names="/proc/nope",
    ),
    Case(
        "import-impossible-out",
        (
            "import",
            f"{REPO}/tests/data/import/test_glm5_744b_a40b_4layer.py",
            "--without-checkout",
            "--hardware",
            "h200",
            "-o",
            "/proc/nope/x.yaml",
        ),
        code=3,
        names="/proc/nope",
    ),
    Case(
        "import-out-is-a-folder",
        (
            "import",
            f"{REPO}/tests/data/import/test_glm5_744b_a40b_4layer.py",
            "--without-checkout",
            "--hardware",
            "h200",
            "-o",
            ".",
        ),
        code=3,
        names="directory",
    ),
    Case(
        "checkout-unclosed-quote",
        ("render", "rocm/glm5-async", "--miles-root", "ck"),
        {"ck/scripts/models/glm5-744B-A40B_4layer.sh": 'MODEL_ARGS=(\n   --num-layers "4\n)\n'},
        code=0,
        names="glm5-744B-A40B_4layer.sh fails with status 1 when bash sources it",
        says="syntax error: unexpected end of file",
    ),
    Case("spec-is-dev-zero", ("validate", "/dev/zero"), names="/dev/zero", says="a device"),
    Case("spec-is-a-fifo", ("list", "pipe.yaml"), names="pipe.yaml", says="a FIFO", special="fifo"),
    Case("folder-with-a-fifo", ("validate", "."), names="pipe.yaml", says="a FIFO", special="fifo"),
    Case("spec-symlink-loop", ("render", "loop1.yaml"), names="loop1.yaml", special="loop"),
    Case(
        "matrix-max-cells-huge",
        ("list", "spec.yaml"),
        overlay(
            "matrix:\n  max_cells: 1000000000000\n  axes:\n"
            + many("    x{i}: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n", 12)
        ),
        says="more than run-matrix expands",
    ),
    Case(
        "matrix-include-20000",
        ("validate", "spec.yaml"),
        overlay("matrix:\n  axes: {x: [0]}\n  include:\n" + many("    - {{x: {i}, fp8_rollout: true}}\n")),
        says="20000 entries",
    ),
    Case(
        "overlay-dev-zero",
        ("render", "spec.yaml"),
        overlay("matrix:\n  adjust:\n    z:\n      match: {fp8_rollout: true}\n      overlay: /dev/zero\n"),
        says="lies outside the spec's root",
    ),
    Case(
        "overlay-proc-environ",
        ("list", "spec.yaml"),
        overlay(
            "matrix:\n  adjust:\n    z:\n      match: {fp8_rollout: true}\n      overlay: /proc/self/environ\n"
        ),
        names="spec.yaml:6: error [G14]",
    ),
    Case(
        "zero-actor-gpus",
        ("validate", "spec.yaml"),
        overlay("args: {misc: {actor-num-gpus-per-node: 0}}\n"),
        says="G4",
    ),
    Case(
        "zero-engine",
        ("render", "spec.yaml"),
        overlay("args: {sglang: {rollout-num-gpus-per-engine: 0}}\n"),
        says="G4",
    ),
    Case(
        "negative-actor-gpus",
        ("validate", "spec.yaml"),
        overlay("args: {misc: {actor-num-gpus-per-node: -8}}\n"),
        says="G4",
    ),
    Case(
        "zero-counts-explained",
        ("explain", "spec.yaml", "--layout"),
        overlay("args: {misc: {actor-num-gpus-per-node: 0}, sglang: {rollout-num-gpus-per-engine: 0}}\n"),
        code=0,
        names="spec on mi355x",
    ),
    # many mistakes in one file: each costs little, fifty are listed
    Case(
        "why-20000-unset",
        ("validate", "spec.yaml"),
        overlay(
            "args:\n  misc:\n" + many("    flag-{i}: 1\n") + "why:\n" + many("  args.misc.flog-{i}x: r\n")
        ),
        says="19950 more problems",
    ),
    Case(
        "unknown-keys-20000",
        ("validate", "spec.yaml"),
        overlay(many("key{i}: 1\n")),
        says="19950 more problems",
    ),
    Case(
        "deletes-20000",
        ("render", "spec.yaml"),
        overlay("args:\n  misc:\n" + many("    flag-{i}: !delete\n")),
        says="19950 more problems",
    ),
    # the other commands
    Case("hardware-unknown", ("hardware", "../../etc/passwd"), names="passwd"),
    Case("schema-unknown", ("schema", "bogus"), names="bogus"),
    Case(
        "profile-alias-bomb", ("validate", "."), {"hardware/bomb.yaml": alias_bomb(8, 9)}, names="bomb.yaml"
    ),
    Case("run-alias-bomb", ("run", "spec.yaml", "--dry-run"), {"spec.yaml": alias_bomb(8, 9)}),
    Case("run-k-empty", ("run", "spec.yaml", "--dry-run", "-k", ""), overlay(""), names="-k"),
    Case(
        "run-huge-power",
        ("spec.yaml", "--dry-run"),
        overlay("vars: {x: '${4000000**4000000}'}\n"),
        says="vars.x",
    ),
    Case("coverage-cycle", ("coverage", "spec.yaml"), {"spec.yaml": "extends: spec.yaml\n"}, says="cycle"),
    Case("explain-alias-self", ("explain", "spec.yaml"), {"spec.yaml": "a: &a [*a]\n"}),
    Case(
        "port-alias-bomb",
        ("port", "spec.yaml", "--to", "mi355x", "-o", "o.yaml"),
        {"spec.yaml": alias_bomb(8, 9)},
    ),
    Case("port-bogus-target", ("port", "nv/glm5-colocate", "--to", "mi355"), names="mi355x"),
    Case(
        "diff-huge-power",
        ("diff", "spec.yaml", "rocm/glm5-async"),
        overlay("vars: {x: '${2**2**2**2**2}'}\n"),
    ),
    Case("coverage-bad", ("coverage", "spec.yaml"), overlay("matrix:\n  axes: {fp8_rollout: []}\n")),
]


def _make_special(case: Case, folder: Path) -> None:
    if case.special == "fifo":
        os.mkfifo(folder / "pipe.yaml")
    elif case.special == "loop":
        (folder / "loop1.yaml").symlink_to(folder / "loop2.yaml")
        (folder / "loop2.yaml").symlink_to(folder / "loop1.yaml")
    elif case.special == "latin1":
        (folder / "spec.yaml").write_bytes(case.files["spec.yaml"].encode("latin-1"))


def test_the_corpus_is_large() -> None:
    assert len(CASES) >= 60
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.allow_subprocess
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_hostile_input(case: Case, tmp_path: Path) -> None:
    for name, text in case.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    _make_special(case, tmp_path)
    outcome = run_cli(list(case.argv), tmp_path)
    assert "Traceback" not in outcome.output, outcome.output[-3000:]
    assert outcome.code == case.code, outcome.output[-3000:]
    assert case.names in outcome.output, outcome.output[-3000:]
    assert case.says in outcome.output, outcome.output[-3000:]
    assert outcome.cpu_s < CPU_BUDGET_S, f"{outcome.cpu_s:.2f} s of CPU"
    assert outcome.peak_mb < MEMORY_BUDGET_MB, f"{outcome.peak_mb:.0f} MB"
