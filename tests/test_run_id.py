"""``$${run-id}``: a name per attempt in miles' create_run_id() form, in the flags alone (G15); render
and the shell script name the run once (RUN_MATRIX_RUN_ID, unless the caller set it); on a local Ray
two runs of one spec write two folders, each named in its run's report, JUnit and history, and a
retried attempt gets a name of its own."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from runner import pipeline
from runner.launch.render import render
from runner.launch.script import to_shell
from runner.spec.runtime import run_id
from tests.test_model import VALID
from tests.test_run_on_ray import run, specs, users_cluster  # noqa: F401 (fixtures)

pytestmark = pytest.mark.allow_subprocess
FORM = re.compile(r"^\d{6}-\d{6}-\d{3}$")  # miles' create_run_id(): 261205-071530-042
SAVE = "/root/out/$${run-id}/checkpoints"


def test_a_new_name_has_create_run_ids_form_and_differs_from_the_one_before() -> None:
    names = [run_id.new() for _ in range(50)]
    assert all(FORM.match(name) for name in names), names
    assert all(run_id.new(previous=name) != name for name in names)


def spec_with(write, value: str, where: str = "args") -> Path:
    if where == "args":
        return write("spec.yaml", VALID.replace("{colocate: true}", f'{{colocate: true, save: "{value}"}}'))
    return write("spec.yaml", VALID + f'env: {{OUT: "{value}"}}\n')


def test_a_run_id_outside_the_flags_or_misspelt_is_g14_at_its_key(cli, write) -> None:
    path = spec_with(write, "/root/out/$${run-id}", where="env")
    done = cli("validate", str(path))
    assert (done.code, done.out.split("1 cell, 0 supporting")[0]) == (
        2,
        "spec.yaml:7: error [G15] env.OUT: a run's name is filled into the flags of args alone (a value, or an"
        " item of a list), when the job is submitted: nothing fills it here\n"
        f"  ==> {HINT}\n",
    )
    path = spec_with(write, "/root/out/$${run-id:x}")
    done = cli("validate", str(path))
    assert (done.code, done.out.split("1 cell, 0 supporting")[0]) == (
        2,
        "spec.yaml:6: error [G15] args.misc.save: '/root/out/${run-id:x}' holds ${run-id other than as"
        " ${run-id}, which is all a run's name is written as\n"
        f"  ==> {HINT}\n",
    )


HINT = "write $${run-id} in a flag's value (a name per attempt: the clock and three random digits)"


def test_render_names_the_flags_and_the_script_sets_the_name_once_unless_the_caller_did(write, tmp_path) -> None:  # fmt: skip
    launch = render(pipeline.cell(spec_with(write, SAVE)))
    assert launch.to_json()["run_id"] == {"variable": "RUN_MATRIX_RUN_ID", "flags": ["--save"]}
    assert "/root/out/${run-id}/checkpoints" in launch.train_args  # the reference stays: run fills it
    script = to_shell(launch, "spec.yaml")
    assert script.count("RUN_MATRIX_RUN_ID=") == 1
    assert (
        "# the run's name, for --save (the caller's RUN_MATRIX_RUN_ID when set)\n"
        'export RUN_MATRIX_RUN_ID="${RUN_MATRIX_RUN_ID:-$(date -u +%y%m%d-%H%M%S)-$(printf %03d $((RANDOM % 1000)))}"\n'
    ) in script
    assert '--save /root/out/"${RUN_MATRIX_RUN_ID}"/checkpoints' in script
    setting = next(line for line in script.splitlines() if line.startswith("export RUN_MATRIX_RUN_ID="))
    said = "; echo $RUN_MATRIX_RUN_ID"
    made = subprocess.run(["bash", "-c", setting + said], capture_output=True, text=True, env={}, check=True)
    assert FORM.match(made.stdout.strip()), made.stdout
    kept = subprocess.run(["bash", "-c", setting + said], capture_output=True, text=True, env={"RUN_MATRIX_RUN_ID": "mine"}, check=True)  # fmt: skip
    assert kept.stdout == "mine\n"
    plain = render(pipeline.cell(write("plain.yaml", VALID)))
    assert "run_id" not in plain.to_json() and "RUN_MATRIX_RUN_ID" not in to_shell(plain, "plain.yaml")


def test_dry_run_says_which_flags_name_each_attempt(cli, write) -> None:
    spec_with(write, SAVE)
    done = cli("run", "spec.yaml", "--dry-run", "--no-preflight")
    assert done.code == 0, done.err
    assert "  run-id --save: a name per attempt (the clock and 3 random digits) at submission\n" in done.out
    data = json.loads(cli("run", "spec.yaml", "--dry-run", "--no-preflight", "--format", "json").out)
    assert data["cells"][0]["run_id"] == ["--save"]


def saving(tmp_path: Path) -> str:
    out = tmp_path / "out"
    return f'args:\n  ckpt: {{save: "{out}/$${{run-id}}/checkpoints", load: "{out}/$${{run-id}}/checkpoints", save-interval: 1}}'  # fmt: skip


def attempts_of(report: dict) -> list[dict]:
    (cell,) = report["cells"]
    return cell["attempts"]


def test_two_runs_save_to_two_folders_each_named_in_its_report(cli, specs, users_cluster, tmp_path) -> None:  # noqa: F811
    specs("named", base="nv/glm5-colocate", extra=saving(tmp_path))
    names = []
    for _ in range(2):
        code, report, err = run(cli, "m/fake/named.yaml", address=users_cluster.address)
        assert code == 0, err
        (attempt,) = attempts_of(report)
        assert FORM.match(attempt["run_id"]) and attempt["outcome"] == "succeeded"
        names.append(attempt["run_id"])
        saved = tmp_path / "out" / attempt["run_id"] / "checkpoints"
        assert attempt["named"] == {"--load": str(saved), "--save": str(saved)}  # the folder, in the report
        assert (saved / "latest_checkpointed_iteration.txt").is_file()
        log = (tmp_path / "logs" / "fake-named.log").read_text()
        assert f"==> run-id --load, --save: {attempt['run_id']} (attempt 1's own)\n" in log
        assert f"fake miles: saved {saved}/iter_0000000\n" in log
        properties = {
            p.get("name"): p.get("value") for p in ET.parse(tmp_path / "junit.xml").iter("property")
        }
        assert properties["attempt_1_run_id"] == attempt["run_id"]
    assert names[0] != names[1]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(names)
    (store,) = tmp_path.glob("**/history.sqlite")
    with sqlite3.connect(store) as db:
        recorded = [row[0] for row in db.execute("SELECT launch_run_id FROM rm_runs ORDER BY seq")]
    assert recorded == names


def test_a_retried_attempt_gets_a_name_of_its_own(cli, specs, users_cluster, tmp_path) -> None:  # noqa: F811
    extra = saving(tmp_path) + f"\nenv: {{FAKE_MILES_LOSE_JOB_ONCE: {tmp_path}/lost}}"
    specs("retried", base="nv/glm5-colocate", extra=extra)
    code, report, err = run(cli, "m/fake/retried.yaml", address=users_cluster.address)
    assert code == 0, err
    first, second = attempts_of(report)
    assert (first["outcome"], second["outcome"]) == ("infra", "succeeded")
    assert (
        FORM.match(first["run_id"]) and FORM.match(second["run_id"]) and first["run_id"] != second["run_id"]
    )
    assert (
        tmp_path / "out" / second["run_id"] / "checkpoints" / "latest_checkpointed_iteration.txt"
    ).is_file()
    report_json = json.dumps(report)
    assert report_json.count(second["run_id"]) >= 1
