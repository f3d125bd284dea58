"""The CLI in-process: formats, exit codes, messages without tracebacks."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner.cli import parser
from tests.conftest import DATA, QWEN3_AMD_CASES, QWEN3_CASES
from tests.test_model import VALID

ROOT = Path(__file__).parents[1]


def test_validate_the_shipped_matrices(cli, in_repo):
    result = cli("validate", "matrices/")
    assert result.code == 0, result.out
    # the profiles, their families, the bases and components: a profile a user adds is one more
    supporting = sum(
        1
        for path in (ROOT / "matrices").rglob("*.yaml")
        if {"hardware", "base", "components"} & set(path.parts)
    )
    assert result.out.splitlines()[-1].startswith(f"21 cells, {supporting} supporting files checked in ")
    # upstream's own: qwen3-30B-A3B's flex dispatcher over its preset's alltoall, sequence-parallel at TP 1
    assert result.out.endswith(": 0 errors, 7 warnings\n")


def test_validate_json(cli, in_repo):
    result = cli("validate", "matrices/", "--format", "json")
    data = json.loads(result.out)
    assert data["ok"] is True and {p["severity"] for p in data["problems"]} == {"warning"}
    assert sorted(f["cell"] for f in data["files"] if f["cell"]) == sorted(
        [
            "nv/glm5-colocate",
            "nv/glm5-colocate[fp8_rollout=true]",
            "nv/glm5-main-ci",
            "nv/glm5-main",
            "nv/glm5-main[fp8_rollout=true]",
            *(f"qwen3-30b-a3b/{case}" for case in QWEN3_CASES),
            *(f"qwen3-30b-a3b/{case}[platform=rocm]" for case in QWEN3_AMD_CASES),
            "rocm/glm5-async",
            "rocm/glm5-async[fp8_rollout=true]",
        ]
    )


def test_validate_reports_problems_and_exits_2(cli, write):
    write("bad.yaml", VALID + "  pref: {}\n")
    write("good.yaml", VALID)
    result = cli("validate", ".", "--format", "json")
    assert result.code == 2
    assert json.loads(result.out)["problems"] == [
        {
            "severity": "error",
            "rule": "unknown-key",
            "key": "args.pref",
            "message": "unknown key 'pref'",
            "hint": "did you mean 'perf'?",
            "locations": [{"file": "bad.yaml", "line": 7}],
            "cells": ["bad"],
        }
    ]
    text = cli("validate", ".")
    assert text.code == 2
    assert text.out.splitlines()[0] == "bad.yaml:7: error [unknown-key] args.pref: unknown key 'pref'"


def test_validate_strict_fails_on_warnings(cli, write):
    write("spec.yaml", VALID.replace("{colocate: true}", "{colocate: true, num-layers: 8}"))
    assert cli("validate", "spec.yaml").code == 0
    assert cli("validate", "spec.yaml", "--strict").code == 2


def test_render_json(cli, in_repo):
    result = cli("render", "rocm/glm5-async.yaml", "-k", "rocm/glm5-async", "--format", "json")
    assert result.code == 0 and result.err == ""
    (cell,) = json.loads(result.out)["cells"]
    assert {
        "id",
        "train_script",
        "num_gpus_per_node",
        "model_args",
        "train_args",
        "env",
        "commands",
    } <= cell.keys()
    assert (cell["id"], cell["train_script"], cell["num_gpus_per_node"]) == (
        "rocm/glm5-async",
        "train_async.py",
        8,
    )
    assert cell["commands"][-1]["argv"][:3] == ["ray", "job", "submit"]


def test_render_shell_is_the_default(cli, in_repo):
    result = cli("render", "nv/glm5-colocate", "-k", "nv/glm5-colocate")
    assert result.out.startswith("#!/usr/bin/env bash\n# nv/glm5-colocate: rendered by run-matrix from")
    assert result.out.count("#!/usr/bin/env bash") == 1


PATCH_NOTE = (
    "# run-matrix's runner/patch_hf_config.py ({} lines), which steps give python3 on stdin: not shown here;"
    " `run-matrix render --show-programs` prints it in the script, and `render -o DIR` writes it into each"
    " script"
)


def test_render_names_the_patch_program_and_shows_the_launch_first_unless_asked(cli, in_repo, tmp_path):
    whole = (ROOT / "tests/golden/render/rocm-glm5-async.sh").read_text()
    # asked, stdout gets the script whole, byte for byte, as -o DIR writes it
    assert cli("render", "rocm/glm5-async", "-k", "rocm/glm5-async", "--show-programs").out == whole
    assert cli("render", "rocm/glm5-async", "-k", "rocm/glm5-async", "-o", str(tmp_path / "o")).code == 0
    assert (tmp_path / "o" / "rocm-glm5-async.sh").read_text() == whole
    shown = cli("render", "rocm/glm5-async", "-k", "rocm/glm5-async").out  # a pipe or a terminal alike
    lines = len((ROOT / "runner/patch_hf_config.py").read_text().splitlines())
    blocks = shown.split("\n\n")
    assert blocks[1:3] == [PATCH_NOTE.format(lines), "# prepare: dirs\nmkdir -p /root/models /root/datasets"]
    assert "def patched(" not in shown and "RUN_MATRIX_PROGRAM\n" not in shown
    # the rest is the script's: only the program's definition gave way to its name
    program = whole[whole.index("# run-matrix's runner/patch_hf_config.py") : whole.index("# prepare: dirs")]
    assert shown == whole.replace(program, PATCH_NOTE.format(lines) + "\n\n")


@pytest.mark.allow_subprocess  # the command runs with its stdout on a terminal of its own
def test_render_on_a_terminal_names_the_program(in_repo):
    controller, terminal = pty.openpty()
    console = "from runner.cli import console; console()"
    argv = [sys.executable, "-c", console, "render", "rocm/glm5-async.yaml"]
    process = subprocess.Popen(argv, stdout=terminal, stderr=subprocess.DEVNULL, cwd=ROOT)
    os.close(terminal)
    chunks = []
    with contextlib.suppress(OSError):  # EIO: the command ended, and with it the terminal's other end
        while chunk := os.read(controller, 65536):
            chunks.append(chunk)
    os.close(controller)
    assert process.wait() == 0
    shown = b"".join(chunks).decode().replace("\r\n", "\n")
    lines = len((ROOT / "runner/patch_hf_config.py").read_text().splitlines())
    assert shown.split("\n\n")[1] == PATCH_NOTE.format(lines) and "def patched(" not in shown


def test_render_writes_one_script_per_cell(cli, in_repo, tmp_path):
    spec = cli("render", "nv/glm5-colocate")  # a spec named alone: its default cell, as explain and diff
    assert spec.code == 0 and spec.out.count("#!/usr/bin/env bash") == 1
    assert spec.err == (
        "run-matrix: nv/glm5-colocate has 2 cells; this is its default cell nv/glm5-colocate "
        "(-o DIR writes every cell's script; also nv/glm5-colocate[fp8_rollout=true])\n"
    )
    several = cli("render", "matrices/nv", "matrices/rocm")
    assert (several.code, several.out) == (2, "")
    assert several.err == (
        "run-matrix: 7 cells selected, and a shell script runs one: use -o DIR for one script per cell, "
        "or -k to pick a cell (nv/glm5-colocate, nv/glm5-colocate[fp8_rollout=true], nv/glm5-main-ci, "
        "nv/glm5-main, nv/glm5-main[fp8_rollout=true], rocm/glm5-async, rocm/glm5-async[fp8_rollout=true])\n"
    )
    result = cli("render", "nv/glm5-colocate", "-o", str(tmp_path / "out"))
    assert result.code == 0 and result.out == ""
    scripts = sorted((tmp_path / "out").iterdir())
    assert [p.name for p in scripts] == ["nv-glm5-colocate-fp8_rollout=true.sh", "nv-glm5-colocate.sh"]
    for script in scripts:
        text = script.read_text()
        assert text.count("#!/usr/bin/env bash") == 1 and script.stat().st_mode & 0o111 == 0o111
    assert "# nv/glm5-colocate[fp8_rollout=true]: rendered" in scripts[0].read_text()
    assert (
        cli(
            "render",
            "nv/glm5-colocate",
            "-k",
            "nv/glm5-colocate",
            "--format",
            "json",
            "-o",
            str(tmp_path / "j"),
        ).code
        == 0
    )
    assert json.loads((tmp_path / "j" / "nv-glm5-colocate.json").read_text())["id"] == "nv/glm5-colocate"
    (tmp_path / "file").write_text("")
    assert cli("render", "nv/glm5-colocate", "-o", str(tmp_path / "file")).code == 2


@pytest.mark.allow_subprocess  # the checkout's preset is expanded in the sandbox
def test_render_reads_model_args_from_a_checkout_and_warns_on_drift(cli, in_repo, tmp_path):
    tmp_path.chmod(0o755)  # the sandbox reads the checkout as nobody
    checkout = tmp_path / "miles"
    shutil.copytree(DATA / "fake-miles", checkout)
    same = cli(
        "render",
        "rocm/glm5-async",
        "-k",
        "rocm/glm5-async",
        "--miles-root",
        str(checkout),
        "--format",
        "json",
    )
    assert same.err == ""
    assert json.loads(same.out)["cells"][0]["commands"][-1]["argv"][7] == f"{checkout}/train_async.py"
    script = checkout / "scripts/models/glm5-744B-A40B_4layer.sh"
    script.write_text(script.read_text().replace("--num-layers 4", "--num-layers 6"))
    drift = cli(
        "render",
        "rocm/glm5-async",
        "-k",
        "rocm/glm5-async",
        "--miles-root",
        str(checkout),
        "--format",
        "json",
    )
    assert drift.err == (
        f"matrices/base/glm5-744b-a40b-4layer.yaml:6: warning [model-args] model.type: MODEL_ARGS of {script}"
        " differ from the shipped preset (miles dc8b499b) of glm5-744B-A40B_4layer, so the checkout's are"
        " rendered: --num-layers 6 (preset: 4)\n"
        "  ==> if the checkout is right, `run-matrix presets sync --miles-root DIR` ships its presets\n"
    )
    cell = json.loads(drift.out)["cells"][0]
    assert cell["model_args"][cell["model_args"].index("--num-layers") + 1] == "6"
    assert cell["warnings"][0]["rule"] == "model-args"


@pytest.mark.allow_subprocess
def test_render_miles_root_from_the_environment(cli, in_repo, monkeypatch):
    monkeypatch.setenv("MILES_ROOT", str(DATA / "fake-miles"))
    cell = json.loads(cli("render", "rocm/glm5-async.yaml", "--format", "json").out)["cells"][0]
    assert cell["commands"][-1]["argv"][7] == f"{DATA / 'fake-miles'}/train_async.py"


def test_render_missing_miles_root(cli, in_repo):
    result = cli("render", "rocm/glm5-async.yaml", "--miles-root", "/no/such/dir")
    assert (result.code, result.err) == (2, "run-matrix: --miles-root /no/such/dir: no such directory\n")


def test_unknown_spec(cli, in_repo):
    result = cli("render", "rocm/glm5-sync.yaml")
    assert result.code == 2
    assert result.err == (
        "run-matrix: no spec 'rocm/glm5-sync.yaml': looked in rocm/glm5-sync.yaml, matrices/rocm/glm5-sync.yaml,"
        f" {ROOT}/matrices/rocm/glm5-sync.yaml; did you mean 'rocm/glm5-async'?\n"
    )


def test_invalid_spec_exits_2_without_traceback(cli, write):
    write("spec.yaml", "a: [\n")
    result = cli("render", "spec.yaml")
    assert (result.code, result.out) == (2, "")
    assert (
        result.err
        == "spec.yaml:2: error [yaml]: not valid YAML: while parsing a flow node expected the node content, but found '<stream end>'\n"
    )


def test_explain_a_key(cli, in_repo):
    result = cli("explain", "rocm/glm5-async.yaml", "args.sglang.sglang-dp-size")
    assert result.out == (
        "args.sglang.sglang-dp-size = 2\n"
        "  matrices/rocm/glm5-async.yaml:38  set 2\n"
        "      why: with DP-attention, DP=2 EP=2 split each 2-GPU engine; they do not multiply it\n"
        "derived:\n"
        "  cluster: 1 node x 8 GPUs = 8\n"
        "  actor: 4 GPUs: TP 1 x PP 1 x CP 1 -> DP 4; experts: EP 4 x ETP 1 -> expert DP 1; 64 experts per EP rank\n"
        "  rollout: 4 GPUs -> 2 engines x 2 GPUs (tp 2)\n"
        "  engine: 2 GPUs; DP-attention: 2 attention-DP ranks x attention-TP 2/2 = 1;"
        " MoE: EP 2 x MoE-TP 2/2 = 1 (128 experts per EP rank)\n"
        "flag: --sglang-dp-size [sglang] int aliases: --sglang-data-parallel-size  (sglang/srt/server_args.py:4524)\n"
        "flags checked against miles dc8b499b, as the spec's miles_version says (2026-05-13-dc8b499b.json)\n"
        "hardware facts of mi355x on its miles-dc8b499b stack (the container of miles dc8b499b),"
        " as the spec's miles_version says\n"
        "MODEL_ARGS from miles/models/2026-05-13-dc8b499b/glm5-744B-A40B_4layer.yaml: miles dc8b499b,"
        " as miles_version says\n"
    )


def test_explain_json_chain(cli, in_repo):
    data = json.loads(
        cli("explain", "nv/glm5-colocate", "args.sglang.sglang-ep-size", "--format", "json").out
    )
    (value,) = data["values"]
    assert (value["key"], value["value"]) == ("args.sglang.sglang-ep-size", 8)
    assert [(s["op"], s["value"]) for s in value["chain"]] == [
        ("set", "${args.sglang.rollout-num-gpus-per-engine}"),
        ("resolve", "${args.sglang.rollout-num-gpus-per-engine} = 8"),
    ]


def test_explain_every_value(cli, in_repo):
    lines = cli("explain", "rocm/glm5-async.yaml").out.splitlines()
    assert "env.HIP_VISIBLE_DEVICES = 0,1,2,3,4,5,6,7    # matrices/rocm/glm5-async.yaml:72" in lines
    assert "args.ckpt.save-interval = 20    # matrices/base/glm5-744b-a40b-4layer.yaml:68" in lines


def test_explain_unknown_key(cli, in_repo):
    result = cli("explain", "rocm/glm5-async.yaml", "args.sglang.sglang-dp")
    assert result.code == 2
    assert result.err == (
        "matrices/rocm/glm5-async.yaml: error [unknown-key] args.sglang.sglang-dp: rocm/glm5-async has no key"
        " 'args.sglang.sglang-dp'\n  ==> did you mean 'args.sglang.sglang-dp-size'?\n"
    )


def test_schema_is_json(cli):
    schema = json.loads(cli("schema").out)
    assert schema["title"] == "Spec" and "extends" in schema["properties"]


def test_every_command_has_help_and_json():
    subcommands = parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, sub in subcommands.items():
        assert sub.description, name
        assert "json" in sub.format_help(), name


@pytest.mark.parametrize("spec", ["nv/glm5-colocate", "rocm/glm5-async"])
def test_explain_layout_golden(cli, in_repo, golden, spec):
    result = cli("explain", spec, "--layout")
    assert result.code == 0
    golden(f"layout/{spec.replace('/', '-')}.txt", result.out)


def test_explain_layout_json(cli, in_repo):
    gpus = json.loads(cli("explain", "rocm/glm5-async", "--layout", "--format", "json").out)["gpus"]
    assert [(g["trainer"] or {}).get("rank") for g in gpus] == [0, 1, 2, 3, None, None, None, None]
    assert [(g["rollout"] or {}).get("engine") for g in gpus] == [None] * 4 + [0, 0, 1, 1]
    assert [g["rollout"]["attention_dp"] for g in gpus[4:]] == [0, 1, 0, 1]
    assert [g["trainer"]["ep"] for g in gpus[:4]] == [0, 1, 2, 3]


def test_list_text(cli, in_repo):
    lines = cli("list", "matrices/nv", "matrices/rocm").out.splitlines()
    assert lines[0].split() == [
        "CELL",
        "HARDWARE",
        "GPUS",
        "HASH",
        "CI",
        "STATUS",
    ]  # nv/glm5-main-ci has a ci: block
    assert [line.split()[0] for line in lines[1:]] == [
        "nv/glm5-colocate",
        "nv/glm5-colocate[fp8_rollout=true]",
        "nv/glm5-main-ci",
        "nv/glm5-main",
        "nv/glm5-main[fp8_rollout=true]",
        "rocm/glm5-async",
        "rocm/glm5-async[fp8_rollout=true]",
    ]
    assert all(line.split()[1:3] in (["h200", "8"], ["h200", "2"], ["mi355x", "8"]) for line in lines[1:])
    assert all(line.endswith("runnable") for line in lines[1:6])
    unchecked = "requirements unchecked (no --miles-root): requires.indexer-topk-clamp, requires.sparse-mla-gfx950"
    assert all(line.endswith(f"  {unchecked}, requires.te-ck-grouped-gemm") for line in lines[6:])  # no checkout


def test_list_selection_by_expression_and_glob(cli, in_repo):
    expression = json.loads(cli("list", "-k", "fp8_rollout and not rocm", "--format", "json").out)["cells"]
    assert [c["id"] for c in expression] == ["nv/glm5-colocate[fp8_rollout=true]", "nv/glm5-main[fp8_rollout=true]"]
    assert expression[0]["axes"] == {"fp8_rollout": True} and len(expression[0]["hash"]) == 12
    glob = json.loads(cli("list", "-k", "*[fp8_rollout=true]", "--format", "json").out)["cells"]
    assert [c["id"] for c in glob] == [
        "nv/glm5-colocate[fp8_rollout=true]",
        "nv/glm5-main[fp8_rollout=true]",
        "rocm/glm5-async[fp8_rollout=true]",
    ]
    exact = json.loads(cli("list", "-k", "rocm/glm5-async", "--format", "json").out)["cells"]
    assert [c["id"] for c in exact] == ["rocm/glm5-async"]


def test_list_selection_errors(cli, in_repo):
    nothing = cli("list", "-k", "b200")
    assert (nothing.code, nothing.err) == (
        2,
        "run-matrix: -k 'b200': no cell knows 'b200' (did you mean 'h200'?)\n",
    )
    empty = cli("list", "-k", "fp8_rollout and not fp8_rollout")
    assert empty.code == 2 and empty.err.startswith(
        "run-matrix: -k 'fp8_rollout and not fp8_rollout' matches none of 21 cells: "
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("list", "-k", ""),
            "run-matrix: -k '' selects nothing: give a cell id, an id glob (rocm/*) or an expression over axis"
            " values (fp8_rollout and not rocm)",
        ),
        (
            ("list", "-k", "fp8_rollout + 'a'"),
            "run-matrix: -k \"fp8_rollout + 'a'\" fails on nv/glm5-colocate: unsupported operand type(s) for +:"
            " 'bool' and 'str'",
        ),
        (
            ("list", "-k", "fp8_rollout % 0"),
            "run-matrix: -k 'fp8_rollout % 0' fails on nv/glm5-colocate: integer modulo by zero",
        ),
        (
            ("list", "-k", "fp8_rollout << 100"),
            "run-matrix: -k 'fp8_rollout << 100' fails on nv/glm5-colocate: a shift by 100 bits (the limit is 64)",
        ),
        (
            ("validate", "rocm/glm5-async[fp8_rollout=bogus]"),
            "run-matrix: no cell 'rocm/glm5-async[fp8_rollout=bogus]': fp8_rollout has the values false, true,"
            " not 'bogus'; its cells: rocm/glm5-async, rocm/glm5-async[fp8_rollout=true]",
        ),
        (
            ("port", "nv/glm5-colocate[fp8=true]", "--to", "mi355x"),
            "run-matrix: no cell 'nv/glm5-colocate[fp8=true]': the spec has no axis 'fp8' (its axes:"
            " fp8_rollout); its cells: nv/glm5-colocate, nv/glm5-colocate[fp8_rollout=true]",
        ),
        (
            ("render", "rocm/glm5-async[fp8_rollout=true"),
            "run-matrix: cell id 'rocm/glm5-async[fp8_rollout=true': the [ is never closed"
            " (write rocm/glm5-async[axis=value,...])",
        ),
    ],
)
def test_every_command_selects_through_one_path(cli, in_repo, argv, message):
    result = cli(*argv)
    assert (result.code, result.err) == (2, message + "\n")


def test_a_cell_id_may_name_a_default_value(cli, in_repo):
    cells = json.loads(cli("list", "rocm/glm5-async[fp8_rollout=false]", "--format", "json").out)["cells"]
    assert [c["id"] for c in cells] == ["rocm/glm5-async"]


def test_list_shows_skips(cli, write):
    write("base.yaml", VALID)
    write(
        "spec.yaml",
        "extends: base.yaml\nmatrix:\n  axes: {a: [1, 2]}\n  adjust:\n    s:\n      match: {a: 2}\n"
        "      skip: {reason: broken upstream, issue: 'https://github.com/radixark/miles/issues/1', expires: 2999-01-01}\n",
    )
    lines = cli("list", "spec.yaml").out.splitlines()
    assert lines[2].endswith(
        "skipped: broken upstream (https://github.com/radixark/miles/issues/1, until 2999-01-01)"
    )


def test_list_and_coverage_say_a_runnable_cell_still_has_todos(cli, write):
    write("base.yaml", VALID)
    write("one.yaml", "extends: base.yaml\ntodo:\n  args.x: decide it\n")
    write("two.yaml", "extends: base.yaml\ntodo:\n  args.x: decide it\n  env.Y: and this\n")
    lines = cli("list", "base.yaml", "one.yaml", "two.yaml").out.splitlines()
    assert [line.rsplit("  ", 1)[1] for line in lines[1:]] == ["runnable", "runnable, 1 TODO", "runnable, 2 TODOs"]
    cells = json.loads(cli("list", "one.yaml", "two.yaml", "--format", "json").out)["cells"]
    assert [(c["status"], c["todo"]) for c in cells] == [("runnable", ["args.x"]), ("runnable", ["args.x", "env.Y"])]
    covered = cli("coverage", "two.yaml").out
    assert ": two (2 TODOs)\n" in covered
    entry = json.loads(cli("coverage", "two.yaml", "--format", "json").out)["tests"][0]["hardware"]
    assert [e["todo"] for e in entry.values() if e["status"] == "runs"] == [{"two": 2}]


def test_coverage_says_which_cell_of_an_entry_that_runs_is_skipped(cli, write):
    """Before, a skipped cell beside one that runs was listed under `runs` as if it ran too."""
    write("base/fam.yaml", VALID)
    write("runs.yaml", "extends: base/fam.yaml\n")
    write(
        "off.yaml",
        "extends: base/fam.yaml\nmatrix:\n  axes: {a: [1]}\n  adjust:\n    s:\n      match: {a: 1}\n"
        "      skip: {reason: broken upstream, issue: 'https://github.com/radixark/miles/issues/1', expires: 2999-01-01}\n",
    )
    covered = cli("coverage", "runs.yaml", "off.yaml").out
    reason = "broken upstream (until 2999-01-01)"
    assert f": runs, off (skipped: {reason})\n" in covered, covered
    entry = json.loads(cli("coverage", "runs.yaml", "off.yaml", "--format", "json").out)["tests"][0]["hardware"]
    (used,) = [e for e in entry.values() if e["status"] == "runs"]
    assert used["skipped"] == {"off": reason}


def test_commands_accept_cell_ids(cli, in_repo):
    cell = "rocm/glm5-async[fp8_rollout=true]"
    assert json.loads(cli("render", cell, "--format", "json").out)["cells"][0]["id"] == cell
    assert json.loads(cli("validate", cell, "--format", "json").out)["files"][0]["cell"] == cell
    assert cli("explain", cell, "args.ckpt.hf-checkpoint").out.startswith(
        "args.ckpt.hf-checkpoint = /root/models/GLM-5_4layer_fp8\n"
    )
    diff = json.loads(cli("diff", "rocm/glm5-async", cell, "--format", "json").out)
    assert [d["key"] for d in diff["differences"]] == ["prepare.fp8", "args.ckpt.hf-checkpoint"]
    assert diff["differences"][0]["parts"] == [
        "kind",
        "model_dir",
        "save_dir",
        "extra.strategy",
        "extra.block-size",
    ]


def test_list_with_a_checkout_checks_requirements(cli, write, tmp_path):
    write("base.yaml", VALID)
    marker = tmp_path / "built.marker"
    write("spec.yaml", f"extends: base.yaml\nrequires:\n  built: {{kind: file, path: {marker}}}\n"
                       "  tool: {kind: package, name: no-such-package-rm, optional: true}\n"
                       "why:\n  requires.built: the kernels must be built first\n")
    plain = cli("list", "spec.yaml").out.splitlines()[1]  # nothing checked without a checkout: not runnable
    assert plain.endswith("  requirements unchecked (no --miles-root): requires.built, requires.tool")
    data = json.loads(cli("list", "spec.yaml", "--format", "json").out)["cells"][0]
    assert (data["status"], data["reason"]) == ("unchecked", "requirements unchecked (no --miles-root): requires.built, requires.tool")
    coverage = cli("coverage", "spec.yaml").out.splitlines()
    assert "  h200     requirements unchecked (no --miles-root) on miles-31f1ca96: spec" in coverage
    coverage = cli("coverage", "spec.yaml", "--miles-root", str(tmp_path)).out.splitlines()
    assert f"  h200     skipped on miles-31f1ca96: requires.built: {marker} does not exist (the kernels must be built first) (spec)" in coverage
    assert cli("coverage", "spec.yaml", "--miles-root", str(tmp_path / "none")).code == 2
    unmet = cli("list", "spec.yaml", "--miles-root", str(tmp_path)).out.splitlines()[1]
    assert unmet.endswith(f"  unmet: requires.built: {marker} does not exist")
    marker.write_text("")
    met = cli("list", "spec.yaml", "--miles-root", str(tmp_path)).out.splitlines()[1]
    assert met.endswith(
        "  runnable (1 requirement met; optional requires.tool: no-such-package-rm is not installed)"
    )
    data = json.loads(cli("list", "spec.yaml", "--miles-root", str(tmp_path), "--format", "json").out)[
        "cells"
    ][0]
    assert data["status"] == "runnable"
    assert [(r["name"], r["met"], r["optional"]) for r in data["requirements"]] == [
        ("built", True, False),
        ("tool", False, True),
    ]
    assert cli("list", "spec.yaml", "--miles-root", str(tmp_path / "none")).code == 2


def test_the_pre_commit_hook_validates_the_tree(cli, in_repo, tmp_path, monkeypatch):
    import re

    import yaml

    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert (hook["id"], hook["entry"], hook["language"], hook["pass_filenames"]) == (
        "run-matrix-validate",
        "run-matrix validate",
        "python",
        False,
    )
    assert re.search(hook["files"], "matrices/rocm/glm5-async.yaml") and not re.search(
        hook["files"], "README.md"
    )
    command = hook["entry"].split()[1:] + hook["args"]
    assert cli(*command).code == 0
    shutil.copytree(ROOT / "matrices", tmp_path / "matrices")
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "matrices/base/glm5-744b-a40b-4layer.yaml"
    base.write_text(base.read_text().replace("nodes: 1", "nodes: 0"))  # a base change breaks its specs
    assert cli(*command).code == 2
