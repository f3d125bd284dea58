"""Flag values read at launch (``$${read-integer:PATH}``): the form, rules G8/G9, and the read on the node."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runner import check, pipeline
from runner.errors import SpecError
from runner.launch import render, script
from runner.run import reads as run_reads
from runner.spec import locate
from runner.spec.runtime import reads

NV = locate.BUNDLED_MATRICES / "nv" / "glm5-colocate.yaml"
LATEST = "/data/ckpt/latest_checkpointed_iteration.txt"


def test_a_read_reference_names_its_file_and_conversion():
    assert reads.parse(f"${{read-integer:{LATEST}}}") == reads.Read("integer", LATEST)
    assert reads.parse(f"x${{read-integer:{LATEST}}}") is None
    assert reads.convert(" 12\n", "integer") == "12"
    with pytest.raises(
        ValueError, match=r"^does not hold an integer \(digits only, surrounding whitespace stripped\)$"
    ):
        reads.convert("1e3", "integer")
    with pytest.raises(ValueError, match="not hold an integer"):
        reads.convert("\u0662", "integer")  # an Arabic-Indic two: isdigit(), but no ASCII digit


def spec_problems(write, overlay: str, load_overlay: str) -> list[str]:
    """The problems of a two-cell spec over the NVIDIA GLM-5 spec: a save cell, then a load cell."""
    write("components/load.yaml", load_overlay)
    path = write(
        "spec.yaml",
        f"extends: {NV}\nmatrix:\n  axes: {{fp8_rollout: [false], mode: [save, load]}}\n"
        "  adjust:\n    load: {match: {mode: load}, overlay: components/load.yaml}\n" + overlay,
    )
    try:
        cells = pipeline.cells(path)
    except SpecError as exc:
        return [str(p) for p in exc.problems]
    return [str(p) for cell in cells for p in check.run(cell) if p.rule in ("G8", "G9")]


SAVE = "args:\n  ckpt: {save: /data/ckpt}\n"


def test_a_later_cell_reads_what_an_earlier_cells_save_folder_holds(write):
    load = f'args:\n  ckpt: {{ckpt-step: "$${{read-integer:{LATEST}}}"}}\n'
    assert spec_problems(write, SAVE, load) == []


@pytest.mark.parametrize(
    ("path", "wrong"),
    [
        ("data/ckpt/latest.txt", "'data/ckpt/latest.txt' is not an absolute path"),
        (
            "/data/ckpt/../x/latest.txt",
            "'/data/ckpt/../x/latest.txt' is not a plain path: no '..', '.' or empty parts",
        ),
        (
            "/data/ckpt/la test.txt",
            "'/data/ckpt/la test.txt' is not a plain path: letters, digits and . _ + @ , = - only",
        ),
    ],
)
def test_a_path_to_read_is_absolute_and_plain(write, tmp_path, path, wrong):
    load = f'args:\n  ckpt:\n    ckpt-step: "$${{read-integer:{path}}}"\n'
    assert spec_problems(write, SAVE, load) == [
        "components/load.yaml:3: error [G8] args.ckpt.ckpt-step: reads its value"
        f" at launch, but {wrong}\n  ==> write the whole value as $${{read-integer:/absolute/path}} (a file an"
        " earlier cell writes)"
    ]


def test_a_read_inside_other_text_or_an_unknown_conversion_is_g8(write, tmp_path):
    load = (
        'args:\n  ckpt:\n    ckpt-step: "$${read-float:/data/ckpt/x}"\n'
        '    load: "/data/ckpt/iter_$${read-integer:/data/ckpt/x}"\n'
    )
    hint = "\n  ==> write the whole value as $${read-integer:/absolute/path} (a file an earlier cell writes)"
    assert spec_problems(write, SAVE, load) == [
        "components/load.yaml:4: error [G8] args.ckpt.load:"
        " '/data/ckpt/iter_${read-integer:/data/ckpt/x}' holds a read reference inside other text" + hint,
        "components/load.yaml:3: error [G8] args.ckpt.ckpt-step: reads its value"
        " at launch, but read-float converts nothing run-matrix knows: write read-integer" + hint,
    ]


def test_a_file_no_earlier_cell_writes_is_g9(write, tmp_path):
    load = 'args:\n  ckpt: {ckpt-step: "$${read-integer:/elsewhere/latest.txt}"}\n'
    assert spec_problems(write, SAVE, load) == [
        "components/load.yaml:2: error [G9] args.ckpt.ckpt-step: --ckpt-step reads"
        " /elsewhere/latest.txt at launch, which no earlier cell of the spec writes (the 1 cell before"
        " spec[mode=load]; the folders they write: --save)\n  ==> read a file under an earlier cell's --save"
        " folder; the cells of a spec run in order"
    ]


def test_a_cell_that_removes_what_it_reads_is_g9(write, tmp_path):
    load = (
        f"prepare:\n  clean: {{kind: remove, paths: [/data/ckpt]}}\nargs:\n"
        f'  ckpt: {{ckpt-step: "$${{read-integer:{LATEST}}}"}}\n'
    )
    assert spec_problems(write, SAVE, load) == [
        f"components/load.yaml:2: error [G9] prepare.clean: --ckpt-step reads {LATEST} at launch,"
        " but prepare.clean of the same cell removes /data/ckpt before it launches\n"
        "  ==> also at components/load.yaml:4\n"
        "  ==> leave /data/ckpt out of this cell's prepare (prepare: {clean: !delete})"
    ]


def launch_read(path: Path) -> dict[str, dict[str, str]]:
    reference = f"${{read-integer:{path}}}"
    return {
        "RUN_MATRIX_READ_CKPT_STEP": {
            "flag": "--ckpt-step",
            "path": str(path),
            "as": "integer",
            "reference": reference,
        }
    }


def test_the_node_reads_the_value_and_fills_the_argv(tmp_path):
    latest = tmp_path / "latest.txt"
    latest.write_text("  4\n")
    (record,) = run_reads.values(launch_read(latest))
    assert (record.flag, record.value) == ("--ckpt-step", "4")
    argv = ("python3", "train.py", "--ckpt-step", f"${{read-integer:{latest}}}")
    assert run_reads.filled(argv, [record]) == ("python3", "train.py", "--ckpt-step", "4")


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (
            None,
            "is missing: an earlier cell of the spec writes it (run the spec whole; a cell selected alone with -k has no earlier cell)",
        ),
        (
            lambda p: p.write_text("step 4\n"),
            "does not hold an integer (digits only, surrounding whitespace stripped)",
        ),
        (lambda p: p.write_text("1" * 5000), "holds more than 4096 bytes"),
        (lambda p: p.write_bytes(b"\xff\xfe"), "is not UTF-8 text"),
        (lambda p: os.mkfifo(p), "is not a regular file"),
        (lambda p: p.mkdir(), "is not a regular file"),
    ],
)
def test_a_value_that_cannot_be_read_says_why(tmp_path, make, why):
    latest = tmp_path / "latest.txt"
    if make is not None:
        make(latest)
    with pytest.raises(run_reads.Unreadable) as caught:
        run_reads.values(launch_read(latest))
    assert str(caught.value) == f"--ckpt-step reads {latest} at launch, which {why}"


def load_cell(write):
    write("components/load.yaml", f'args:\n  ckpt: {{ckpt-step: "$${{read-integer:{LATEST}}}"}}\n')
    path = write(
        "spec.yaml",
        f"extends: {NV}\nmatrix:\n  axes: {{fp8_rollout: [false], mode: [save, load]}}\n"
        "  adjust:\n    load: {match: {mode: load}, overlay: components/load.yaml}\n" + SAVE,
    )
    return pipeline.cells(path)[1]


@pytest.mark.allow_subprocess  # bash -n of the script
def test_render_shows_the_read_as_data_and_the_script_reads_the_file_before_the_submission(write):
    launch = render.render(load_cell(write))
    reference = f"${{read-integer:{LATEST}}}"
    assert launch.train_args[launch.train_args.index("--ckpt-step") + 1] == reference
    assert launch.to_json()["reads"] == {
        "RUN_MATRIX_READ_CKPT_STEP": {
            "flag": "--ckpt-step",
            "path": LATEST,
            "as": "integer",
            "reference": reference,
        }
    }
    text = script.to_shell(launch, "spec.yaml")
    reading = f"RUN_MATRIX_READ_CKPT_STEP=$(run_matrix_read_integer {LATEST} --ckpt-step)\nray job submit "
    assert reading in text
    assert text.index("# submit: train") < text.index(reading)
    assert '--ckpt-step "${RUN_MATRIX_READ_CKPT_STEP}"' in text and reference not in text
    assert subprocess.run(["bash", "-n"], input=text, text=True, check=False).returncode == 0


@pytest.mark.allow_subprocess
@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.write_text(" 6\n"), ""),
        (None, "is missing: an earlier cell of the spec writes it (run the spec whole)"),
        (lambda p: p.write_text("six\n"), "does not hold an integer"),
        (lambda p: p.write_text("1" * 5000), "holds more than 4096 bytes"),
        (lambda p: p.mkdir(), "is not a regular file"),
    ],
)
def test_the_rendered_read_stops_the_script_with_the_reason(tmp_path, make, said):
    latest = tmp_path / "latest.txt"
    if make is not None:
        make(latest)
    program = f'set -euo pipefail\n{script.READ_FUNCTION}\nV=$(run_matrix_read_integer {latest} --ckpt-step)\necho "got $V"'
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=False)
    if not said:
        assert (done.returncode, done.stdout, done.stderr) == (0, "got 6\n", "")
    else:
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == f"run-matrix: --ckpt-step reads {latest} at launch, which {said}\n"


def link_to_secret(latest: Path) -> None:
    """The file read at launch is a link to a file of the host's (an attack: issue 32)."""
    secret = latest.parent / "secret"
    secret.write_text("s3cret\n")
    latest.symlink_to(secret)


def linked_folder_on_the_way(latest: Path) -> Path:
    """The file lies below a folder reached through a link: the path as written is read."""
    real = latest.parent / "real"
    real.mkdir()
    (real / "latest.txt").write_text("4\n")
    (latest.parent / "via").symlink_to(real)
    return latest.parent / "via" / "latest.txt"


def test_a_value_read_at_launch_is_a_regular_file_with_no_link_on_the_way(tmp_path):
    latest = tmp_path / "latest.txt"
    link_to_secret(latest)
    with pytest.raises(run_reads.Unreadable) as caught:
        run_reads.values(launch_read(latest))
    assert (
        str(caught.value)
        == f"--ckpt-step reads {latest} at launch, which is a link: only a regular file is read"
    )
    via = linked_folder_on_the_way(latest)
    with pytest.raises(run_reads.Unreadable) as caught:
        run_reads.values(launch_read(via))
    assert str(caught.value) == (
        f"--ckpt-step reads {via} at launch, which is reached through a link ({tmp_path / 'via'})"
        ": only a regular file is read, with no link on the way"
    )


def test_no_message_quotes_what_the_file_holds(tmp_path):
    latest = tmp_path / "latest.txt"
    latest.write_text("s3cret\n")
    with pytest.raises(run_reads.Unreadable) as caught:
        run_reads.values(launch_read(latest))
    assert "s3cret" not in str(caught.value)


@pytest.mark.allow_subprocess
def test_the_rendered_read_refuses_a_link_on_the_way(tmp_path):
    latest = tmp_path / "latest.txt"
    link_to_secret(latest)
    via = linked_folder_on_the_way(latest)
    through = f"is reached through a link ({tmp_path / 'via'}): only a regular file is read, with no link on the way"
    for path, said in ((latest, "is a link: only a regular file is read"), (via, through)):
        program = f"set -euo pipefail\n{script.READ_FUNCTION}\nV=$(run_matrix_read_integer {path} --ckpt-step)\necho $V"
        done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=False)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == f"run-matrix: --ckpt-step reads {path} at launch, which {said}\n"
